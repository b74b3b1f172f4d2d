//! The sweep's SVG: processes against ticks per call, every measured
//! point, the fitted curve of the baseline and of each profiler, and their
//! elbows marked.

use plotters::prelude::*;

use crate::sweep::{Curve, SweepResult};

const BASE_COLOR: RGBColor = RGBColor(31, 119, 180);
/// Colours of the profilers' curves, in turn.
const PROF_COLORS: [RGBColor; 5] = [
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

/// Renders the plot as an SVG document.
pub fn render_svg(s: &SweepResult) -> Result<String, String> {
    let mut svg = String::new();
    draw(&mut svg, s)?;
    Ok(svg)
}

fn draw(svg: &mut String, s: &SweepResult) -> Result<(), String> {
    let root = SVGBackend::with_string(svg, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let max_x = s.points.iter().map(|p| p.procs).max().unwrap_or(1) as f64 + 0.5;
    let ys = s.points.iter().map(|p| p.result.ticks_per_call);
    let max_y = ys.fold(0.0f64, f64::max) * 1.1 + 1e-9;
    let mut chart = ChartBuilder::on(&root)
        .caption("collatz: processes vs ticks per call", ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.5f64..max_x, 0f64..max_y)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("processes")
        .y_desc("ticks per call")
        .draw()
        .map_err(|e| e.to_string())?;
    let mut modes = vec![(
        None,
        &s.baseline,
        BASE_COLOR,
        "without profiler".to_string(),
    )];
    for (k, p) in s.profiled.iter().enumerate() {
        let label = if s.profiled.len() == 1 {
            "with profiler".to_string()
        } else {
            format!("with {}", short_command(&p.command))
        };
        modes.push((Some(k), &p.curve, PROF_COLORS[k % PROF_COLORS.len()], label));
    }
    for (profiler, curve, color, label) in modes {
        let pts = s
            .points
            .iter()
            .filter(|p| p.profiler == profiler)
            .map(|p| Circle::new((p.procs as f64, p.result.ticks_per_call), 3, color.filled()));
        chart.draw_series(pts).map_err(|e| e.to_string())?;
        draw_fit(&mut chart, curve, color, &label, max_x)?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())
}

/// A profiler command cut to a legend's length.
fn short_command(command: &str) -> String {
    const MAX: usize = 40;
    match command.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &command[..i]),
        None => command.to_string(),
    }
}

type Chart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

fn draw_fit(
    chart: &mut Chart<'_, '_>,
    curve: &Curve,
    color: RGBColor,
    label: &str,
    max_x: f64,
) -> Result<(), String> {
    let Some(fit) = curve.fit else {
        let line = curve.means.iter().map(|&(n, y)| (n as f64, y));
        chart
            .draw_series(LineSeries::new(line, color.stroke_width(2)))
            .map_err(|e| e.to_string())?
            .label(label)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color));
        return Ok(());
    };
    let steps = 200;
    let line = (0..=steps).map(|i| {
        let x = fit.x_start + (max_x - 0.5 - fit.x_start) * i as f64 / steps as f64;
        (x, fit.value_at(x))
    });
    chart
        .draw_series(LineSeries::new(line, color.stroke_width(2)))
        .map_err(|e| e.to_string())?
        .label(format!(
            "{label} (elbows at {:.0} and {:.0}, R² {:.3})",
            fit.elbows[0], fit.elbows[1], fit.r_squared
        ))
        .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color));
    let marks = fit
        .elbows
        .map(|k| TriangleMarker::new((k, fit.value_at(k)), 8, color.filled()));
    chart.draw_series(marks).map_err(|e| e.to_string())?;
    Ok(())
}

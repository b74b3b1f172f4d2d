//! Drawing the live view with ratatui: Hotspots, Workers, Timeline and
//! Status panels, the drill-down, the search line and the help overlay.
//! Works from 80x24 up; smaller terminals get a one-line notice.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Row, Table, TableState};
use ratatui::Frame;
use runq_common::text::printable;
use runq_common::units::fmt_ms;

use super::app::{App, Mode};
use crate::detect::Category;

/// The highlight: a colour, or bold where colour is off.
fn accent(app: &App) -> Style {
    if app.color {
        Style::new().fg(Color::Yellow)
    } else {
        Style::new().add_modifier(Modifier::BOLD)
    }
}

/// Draws the whole screen.
pub fn draw(f: &mut Frame<'_>, app: &App) {
    let area = f.area();
    if area.width < 40 || area.height < 10 {
        f.render_widget(Paragraph::new("too small (q quits)"), area);
        return;
    }
    let [top, middle, bottom, status] = Layout::vertical([
        Constraint::Percentage(45),
        Constraint::Percentage(25),
        Constraint::Min(4),
        Constraint::Length(4),
    ])
    .areas(area);
    hotspots(f, app, top);
    workers(f, app, middle);
    timeline(f, app, bottom);
    status_line(f, app, status);
    match app.mode {
        Mode::Drill => drill(f, app, centered(area, 90, 80)),
        Mode::Help => help(f, centered(area, 60, 60)),
        _ => {}
    }
}

fn hotspots(f: &mut Frame<'_>, app: &App, area: Rect) {
    let hs = app.model.hotspots(app.sort, &app.query);
    let rows = hs.iter().map(|b| {
        Row::new(vec![
            b.category.info().short.to_string(),
            b.count.to_string(),
            fmt_ms(b.total_ns),
            fmt_ms(b.max_ns),
            format!(
                "{} {}",
                printable(&b.function),
                printable(b.location.as_deref().unwrap_or(""))
            ),
        ])
    });
    let title = if app.query.is_empty() {
        format!(" Hotspots (by {}) ", app.sort.label())
    } else {
        format!(
            " Hotspots (by {}, matching {:?}) ",
            app.sort.label(),
            app.query
        )
    };
    let table = Table::new(
        rows,
        [
            Constraint::Length(6),
            Constraint::Length(6),
            Constraint::Length(10),
            Constraint::Length(9),
            Constraint::Min(10),
        ],
    )
    .header(
        Row::new(["kind", "count", "total", "max", "culprit (file:line)"])
            .style(Style::new().add_modifier(Modifier::BOLD)),
    )
    .block(Block::new().borders(Borders::ALL).title(title))
    .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED));
    let selected = hs.len().checked_sub(1).map(|last| app.selected.min(last));
    let mut state = TableState::default().with_selected(selected);
    f.render_stateful_widget(table, area, &mut state);
}

fn workers(f: &mut Frame<'_>, app: &App, area: Rect) {
    let rows = app.model.workers().into_iter().map(|w| {
        let cats: Vec<String> = w
            .by_category
            .iter()
            .map(|(c, n)| format!("{} {n}", c.info().short))
            .collect();
        Row::new(vec![
            w.tid.to_string(),
            fmt_ms(w.blocked_ns),
            cats.join("  "),
        ])
    });
    let table = Table::new(
        rows,
        [
            Constraint::Length(8),
            Constraint::Length(11),
            Constraint::Min(10),
        ],
    )
    .header(Row::new(["tid", "blocked", "events"]).style(Style::new().add_modifier(Modifier::BOLD)))
    .block(Block::new().borders(Borders::ALL).title(" Workers "));
    f.render_widget(table, area);
}

/// The timeline's title: its legend, every category's mark.
fn timeline_title() -> String {
    let marks: Vec<String> = Category::ALL
        .iter()
        .map(|c| format!("{} {}", c.info().mark, c.info().legend))
        .collect();
    format!(" Timeline ({}) ", marks.join(", "))
}

fn timeline(f: &mut Frame<'_>, app: &App, area: Rect) {
    let cells = area.width.saturating_sub(12) as usize;
    let lines: Vec<Line<'_>> = app
        .model
        .workers()
        .iter()
        .take(area.height.saturating_sub(2) as usize)
        .map(|w| {
            let marks: String = app
                .model
                .timeline(w.tid, cells)
                .into_iter()
                .map(|c| c.map_or('.', |c| c.info().mark))
                .collect();
            Line::from(format!("{:>9} {marks}", w.tid))
        })
        .collect();
    let block = Block::new().borders(Borders::ALL).title(timeline_title());
    f.render_widget(Paragraph::new(lines).block(block), area);
}

fn status_line(f: &mut Frame<'_>, app: &App, area: Rect) {
    let s = &app.model.status;
    let text = format!(
        "{} | events {} | lost {} | dropped {} | {} | {} | threshold {} | ? help",
        s.health,
        s.events,
        s.lost,
        s.dropped,
        printable(&s.target),
        printable(&s.discovery),
        fmt_ms(s.threshold_ns)
    );
    let first = if app.mode == Mode::Search {
        format!("search: {}_", printable(&app.query))
    } else {
        text
    };
    let mut second = Line::from(s.stacks.clone());
    if s.stacks.contains("short") {
        second = second.style(accent(app));
    }
    f.render_widget(
        Paragraph::new(vec![Line::from(first), second])
            .block(Block::new().borders(Borders::ALL).title(" Status ")),
        area,
    );
}

fn drill(f: &mut Frame<'_>, app: &App, area: Rect) {
    let hs = app.model.hotspots(app.sort, &app.query);
    let Some(b) = hs.get(app.selected.min(hs.len().saturating_sub(1))) else {
        return;
    };
    let mut lines = vec![
        Line::from(format!(
            "{} — {}",
            b.category.label(),
            printable(&b.function)
        ))
        .style(accent(app)),
        Line::from(format!(
            "{} intervals, total {}, max {}",
            b.count,
            fmt_ms(b.total_ns),
            fmt_ms(b.max_ns)
        )),
        Line::from(format!(
            "workers: {}",
            b.workers
                .iter()
                .map(|(t, n)| format!("{t} ({n})"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        Line::from(match b.tasks.is_empty() {
            true => "tasks: none known (no task ids, see the report)".to_string(),
            false => format!(
                "tasks ({}): {}",
                b.task_count,
                b.tasks
                    .iter()
                    .map(|t| printable(&crate::report::task_cell(t)).into_owned())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
        Line::from("stack (innermost first):"),
    ];
    for fr in &b.sample_stack {
        lines.push(Line::from(format!(
            "  {} {}",
            printable(&fr.function),
            printable(&fr.location().unwrap_or_default())
        )));
    }
    f.render_widget(Clear, area);
    let block = Block::new()
        .borders(Borders::ALL)
        .title(" Hotspot (Esc to close) ");
    f.render_widget(Paragraph::new(lines).block(block), area);
}

fn help(f: &mut Frame<'_>, area: Rect) {
    let lines = [
        "Up/Down, j/k   select a hotspot",
        "Enter          its stacks and workers",
        "s              sort by total / count / max",
        "/              search culprits and locations",
        "Esc            close, clear the search",
        "?              this help",
        "q, Ctrl-C      quit",
    ];
    f.render_widget(Clear, area);
    let block = Block::new().borders(Borders::ALL).title(" Keys ");
    f.render_widget(
        Paragraph::new(lines.map(Line::from).to_vec()).block(block),
        area,
    );
}

fn centered(area: Rect, pct_w: u16, pct_h: u16) -> Rect {
    let w = area.width * pct_w / 100;
    let h = area.height * pct_h / 100;
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

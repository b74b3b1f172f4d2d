use super::*;
use crate::detect::Finding;
use crate::export::tests::{finding, report};

/// A window of `n` blocking calls of 20 ms in `app::load`, and one 10 ms
/// sample elsewhere.
fn window(n: usize) -> Report {
    let mut fs: Vec<Finding> = (0..n)
        .map(|_| finding(Category::BlockingCall, 20))
        .collect();
    fs.push(finding(Category::TaskCpuSampled, 10));
    report(&fs)
}

fn samples(text: &str, sample: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with(sample))
        .map(str::to_string)
        .collect()
}

#[test]
fn counters_sum_the_windows_and_the_maximum_is_the_last_windows() {
    let mut m = FleetMetrics::default();
    m.attached("svc", 1);
    m.add_window("svc", &window(2));
    m.add_window("svc", &window(3));
    let text = m.render(Dialect::OpenMetrics);
    let labels = "{target=\"svc\",category=\"blocking_call\",function=\"app::load\"}";
    assert!(
        text.contains(&format!("runq_hud_blocker_findings_total{labels} 5\n")),
        "{text}"
    );
    assert!(
        text.contains(&format!("runq_hud_blocker_seconds_total{labels} 0.1\n")),
        "{text}"
    );
    assert!(
        text.contains(&format!("runq_hud_blocker_max_seconds{labels} 0.02\n")),
        "{text}"
    );
    assert!(text.contains("runq_hud_target_processes{target=\"svc\"} 1\n"));
    assert!(text.ends_with("# EOF\n"));
    // A window without the blocker leaves its counters and drops its maximum.
    m.add_window("svc", &report(&[]));
    let text = m.render(Dialect::OpenMetrics);
    assert!(text.contains(&format!("runq_hud_blocker_findings_total{labels} 5\n")));
    assert!(
        samples(&text, "runq_hud_blocker_max_seconds{").is_empty(),
        "{text}"
    );
    m.down("svc", 1);
    assert!(m
        .render(Dialect::Prometheus)
        .contains("runq_hud_target_processes{target=\"svc\"} 0\n"));
    m.attached("svc", 2);
    let text = m.render(Dialect::OpenMetrics);
    assert!(text.contains("runq_hud_target_attaches_total{target=\"svc\"} 2\n"));
}

/// The parser that implements the OpenMetrics 1.0 test suite accepts the
/// scrape, and its Prometheus parser the textfile, with 50 blocker rows
/// and label values that need escaping.
#[test]
fn independent_parsers_accept_both_dialects() {
    let mut m = FleetMetrics::default();
    m.attached("svc \"a\"\\b", 1);
    for i in 0..50u64 {
        let mut f = finding(Category::BlockingCall, 5 + i);
        let mut stack = f.stack.to_vec();
        stack[1].function =
            format!("my_service::handlers::orders::handler_{i}::{{{{closure}}}}").into();
        f.stack = stack.into();
        m.add_window("svc \"a\"\\b", &report(&[f]));
    }
    let om = m.render(Dialect::OpenMetrics);
    if let Err(e) = openmetrics_parser::openmetrics::parse_openmetrics(&om) {
        panic!("OpenMetrics rejected: {e:?}\n{om}");
    }
    let prom = m.render(Dialect::Prometheus);
    assert!(!prom.contains("# EOF") && !prom.contains("# UNIT"));
    if let Err(e) = openmetrics_parser::prometheus::parse_prometheus(&prom) {
        panic!("Prometheus text rejected: {e:?}\n{prom}");
    }
    assert_eq!(samples(&om, "runq_hud_blocker_findings_total{").len(), 50);
    // A scrape of 50 rows: three samples per row, under 32 KiB.
    eprintln!(
        "figure: scrape of 50 blocker rows: {} bytes OpenMetrics, {} bytes Prometheus text",
        om.len(),
        prom.len()
    );
    assert!(om.len() < 32 * 1024, "{} bytes", om.len());
    assert!(om.contains("target=\"svc \\\"a\\\"\\\\b\""), "{om}");
}

#[test]
fn rows_past_the_bound_are_summed_under_other() {
    let mut m = FleetMetrics::default();
    for i in 0..MAX_ROWS + 20 {
        let mut f = finding(Category::BlockingCall, 5);
        let mut stack = f.stack.to_vec();
        stack[1].function = format!("app::f{i}").into();
        f.stack = stack.into();
        m.add_window("svc", &report(&[f]));
    }
    let text = m.render(Dialect::Prometheus);
    assert_eq!(
        samples(&text, "runq_hud_blocker_findings_total{").len(),
        MAX_ROWS
    );
    let other = format!("function=\"{OTHER}\"}} 21\n");
    assert!(text.contains(&other), "{text}");
}

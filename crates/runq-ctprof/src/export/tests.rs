use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::avail::{Reason, Source};
use crate::metric_types::*;

fn thread(tid: u32, tgid: u32, pcomm: &str, comm: &str, scale: u64) -> ThreadState {
    ThreadState {
        tid,
        tgid,
        pcomm: pcomm.into(),
        comm: comm.into(),
        cgroup: "/system.slice/a.service".into(),
        run_time_ns: MonotonicNs(1_500_000 * scale),
        voluntary_csw: MonotonicCount(7 * scale),
        utime_clock_ticks: ClockTicks(25 * scale),
        rchar: Bytes(4096 * scale),
        wait_max: PeakNs(20_000),
        hiwater_rss_bytes: PeakBytes(8 << 20),
        fair_slice_ns: GaugeNs(3_000_000),
        ..Default::default()
    }
}

/// Two processes, one with awkward names; schedstats unavailable host-wide
/// and io denied for one thread.
pub(crate) fn fixture() -> CtprofSnapshot {
    let mut s = CtprofSnapshot::new();
    s.captured_at_unix_ns = 1_700_000_000_500_000_000;
    s.host = Some(crate::model::HostContext {
        user_hz: 100,
        ..Default::default()
    });
    s.threads = vec![
        thread(10, 10, "web", "web", 1),
        thread(11, 10, "web", "worker-1", 2),
        thread(20, 20, "odd \"q\" \\ x", "line\nbreak", 3),
    ];
    s.threads[2].mark(Source::Io, Reason::Eperm);
    let mut caps = Capabilities::default();
    caps.unavailable
        .insert(Source::Schedstats, Reason::NoSchedstats);
    s.capabilities = Some(caps);
    s
}

fn export(group: &ExportGroup) -> String {
    export_as(group, Dialect::OpenMetrics)
}

fn export_as(group: &ExportGroup, dialect: Dialect) -> String {
    let mut out = Vec::new();
    write_metrics(&fixture(), group, dialect, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn is_name(s: &str, first_extra: &[char]) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_' || first_extra.contains(&f))
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_' || first_extra.contains(&x))
}

/// Parses `{k="v",...}` strictly; returns the pairs and the rest of the line.
type Labels = Vec<(String, String)>;
type Samples = BTreeMap<String, Vec<(Labels, f64)>>;

fn parse_labels(s: &str) -> Result<(Labels, &str), String> {
    let mut pairs = Vec::new();
    let mut rest = s.strip_prefix('{').ok_or("labels must open with {")?;
    loop {
        if let Some(r) = rest.strip_prefix('}') {
            return Ok((pairs, r));
        }
        if !pairs.is_empty() {
            rest = rest.strip_prefix(',').ok_or("labels need commas")?;
        }
        let eq = rest.find("=\"").ok_or("label without =\"")?;
        let key = &rest[..eq];
        if !is_name(key, &[]) || key.starts_with("__") {
            return Err(format!("bad label name {key:?}"));
        }
        let mut val = String::new();
        let mut chars = rest[eq + 2..].char_indices();
        let end = loop {
            match chars.next().ok_or("unterminated label value")? {
                (_, '\\') => match chars.next().ok_or("dangling escape")?.1 {
                    'n' => val.push('\n'),
                    c @ ('\\' | '"') => val.push(c),
                    c => return Err(format!("bad escape \\{c}")),
                },
                (i, '"') => break i,
                (_, '\n') => return Err("raw newline in label".into()),
                (_, c) => val.push(c),
            }
        };
        pairs.push((key.to_string(), val));
        rest = &rest[eq + 2 + end + 1..];
    }
}

/// A strict checker of the OpenMetrics this module writes: HELP, TYPE and
/// an optional UNIT (a suffix of the family name) before each family's
/// samples, families contiguous and declared once, counter families named
/// without `_total` and their samples with it, unique series, finite
/// values, a single closing `# EOF`. Returns samples by sample name.
fn parse_strict(text: &str) -> Result<Samples, String> {
    let mut out: BTreeMap<String, Vec<_>> = BTreeMap::new();
    let (mut declared, mut seen) = (BTreeSet::new(), BTreeSet::new());
    let (mut sample_name, mut help): (Option<String>, Option<String>) = (None, None);
    let lines: Vec<&str> = text.split_terminator('\n').collect();
    if !text.ends_with("# EOF\n") || lines.iter().filter(|l| **l == "# EOF").count() != 1 {
        return Err("must end with exactly one # EOF line".into());
    }
    for (n, line) in lines[..lines.len() - 1].iter().enumerate() {
        let err = |m: &str| format!("line {}: {m}: {line:?}", n + 1);
        if let Some(h) = line.strip_prefix("# HELP ") {
            let name = h.split(' ').next().unwrap_or("");
            if !is_name(name, &[':']) || !declared.insert(name.to_string()) {
                return Err(err("bad or repeated HELP"));
            }
            help = Some(name.to_string());
        } else if let Some(t) = line.strip_prefix("# TYPE ") {
            let (name, kind) = t.split_once(' ').ok_or_else(|| err("TYPE needs a kind"))?;
            if help.as_deref() != Some(name) || !["counter", "gauge"].contains(&kind) {
                return Err(err("TYPE must follow its HELP and be counter or gauge"));
            }
            if kind == "counter" && name.ends_with("_total") {
                return Err(err("a counter family is named without _total"));
            }
            let suffix = if kind == "counter" { "_total" } else { "" };
            sample_name = Some(format!("{name}{suffix}"));
        } else if let Some(u) = line.strip_prefix("# UNIT ") {
            let (name, unit) = u.split_once(' ').ok_or_else(|| err("UNIT needs a unit"))?;
            if help.as_deref() != Some(name) || !name.ends_with(&format!("_{unit}")) {
                return Err(err("UNIT must be its family's name suffix"));
            }
        } else if line.starts_with('#') {
            return Err(err("unexpected comment"));
        } else {
            let split = line.find(['{', ' ']).ok_or_else(|| err("no value"))?;
            let name = &line[..split];
            if sample_name.as_deref() != Some(name) {
                return Err(err("sample outside its family"));
            }
            let (labels, rest) = if line[split..].starts_with('{') {
                parse_labels(&line[split..]).map_err(|e| err(&e))?
            } else {
                (Vec::new(), &line[split..])
            };
            let value: f64 = rest
                .strip_prefix(' ')
                .and_then(|v| v.parse().ok())
                .filter(|v: &f64| v.is_finite())
                .ok_or_else(|| err("bad value"))?;
            if !seen.insert(format!("{name}{labels:?}")) {
                return Err(err("duplicate series"));
            }
            out.entry(name.to_string())
                .or_default()
                .push((labels, value));
        }
    }
    Ok(out)
}

#[test]
fn openmetrics_parses_strictly_and_matches_golden() {
    let text = export(&ExportGroup::By(Grouping::default()));
    let parsed = parse_strict(&text).unwrap();
    let run = &parsed["runq_thread_run_time_seconds_total"];
    let web = run.iter().find(|(l, _)| l[0].1 == "web").unwrap();
    assert_eq!(web.1, 0.0045, "1.5 ms + 3 ms, in seconds");
    let odd = run.iter().find(|(l, _)| l[0].1.contains("\"q\"")).unwrap();
    assert_eq!(odd.0[0].1, "odd \"q\" \\ x", "escapes round-trip");
    let utime = &parsed["runq_thread_utime_seconds_total"];
    assert!(
        utime.iter().any(|(_, v)| *v == 0.75),
        "75 ticks at USER_HZ 100"
    );
    assert!(
        !parsed.contains_key("runq_thread_nr_wakeups_total"),
        "unavailable: absent, not 0"
    );
    let rchar = &parsed["runq_thread_rchar_bytes_total"];
    assert_eq!(
        rchar.len(),
        1,
        "io denied for the odd process's only thread"
    );
    let golden = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/golden/export-pcomm.prom"
    );
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(golden, &text).unwrap();
    }
    assert_eq!(
        text,
        std::fs::read_to_string(golden).unwrap(),
        "UPDATE_GOLDEN=1 to refresh"
    );
}

#[test]
fn per_thread_labels_only_on_request() {
    let grouped = export(&ExportGroup::By(Grouping::default()));
    assert!(!grouped.contains("tid=\""));
    let text = export(&ExportGroup::Thread);
    let parsed = parse_strict(&text).unwrap();
    let threads = &parsed["runq_ctprof_threads"];
    assert_eq!(threads.len(), 3);
    let names: Vec<&str> = threads[0].0.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["pcomm", "comm", "cgroup", "tgid", "tid"]);
}

#[test]
fn strict_parser_rejects_bad_input() {
    for bad in [
        "x 1\n",
        "# HELP a h\n# TYPE a counter\na 1\n# EOF\n",
        "# HELP a_total h\n# TYPE a_total counter\na_total 1\n# EOF\n",
        "# HELP a h\n# TYPE a gauge\n# UNIT a seconds\na 1\n# EOF\n",
        "# HELP a h\n# TYPE a gauge\na{b=\"\\q\"} 1\n# EOF\n",
        "# HELP a h\n# TYPE a gauge\na 1\na 2\n# EOF\n",
        "# HELP a h\n# TYPE a gauge\nb 1\n# EOF\n",
        "# HELP a h\n# TYPE a gauge\na NaN\n# EOF\n",
    ] {
        assert!(parse_strict(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn csv_rows_and_empty_cells() {
    let mut out = Vec::new();
    write_csv(&fixture(), &ExportGroup::By(Grouping::default()), &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(&header[..3], ["pcomm", "threads", "run_time_ns"]);
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let web: Vec<&str> = text
        .lines()
        .find(|l| l.starts_with("web,"))
        .unwrap()
        .split(',')
        .collect();
    assert_eq!(web[col("run_time_ns")], "4500000");
    assert_eq!(web[col("nr_wakeups")], "", "unavailable is empty, not 0");
    assert_eq!(web[col("majflt")], "0", "read zero stays 0");
    assert!(text.contains("\"odd \"\"q\"\" \\ x\","), "{text}");
}

/// A third-party parser that implements the OpenMetrics 1.0 test suite
/// accepts every grouping, and its Prometheus parser the other dialect.
#[test]
fn independent_parsers_accept_both_dialects() {
    let groups = [
        ExportGroup::By(Grouping::default()),
        ExportGroup::By(Grouping {
            by: GroupBy::Cgroup,
            ..Grouping::default()
        }),
        ExportGroup::Thread,
    ];
    for g in &groups {
        let om = export_as(g, Dialect::OpenMetrics);
        if let Err(e) = openmetrics_parser::openmetrics::parse_openmetrics(&om) {
            panic!("OpenMetrics rejected ({g:?}): {e:?}\n{om}");
        }
        let prom = export_as(g, Dialect::Prometheus);
        assert!(
            !prom.contains("# EOF") && !prom.contains("# UNIT"),
            "{prom}"
        );
        if let Err(e) = openmetrics_parser::prometheus::parse_prometheus(&prom) {
            panic!("Prometheus text rejected ({g:?}): {e:?}\n{prom}");
        }
    }
}

#[test]
fn counters_are_declared_by_family_and_sampled_with_total() {
    let om = export(&ExportGroup::By(Grouping::default()));
    assert!(om.contains("# TYPE runq_thread_run_time_seconds counter\n# UNIT runq_thread_run_time_seconds seconds\n"));
    assert!(om.contains("\nrunq_thread_run_time_seconds_total{pcomm=\"web\"} 0.0045\n"));
    let prom = export_as(&ExportGroup::By(Grouping::default()), Dialect::Prometheus);
    assert!(prom.contains("# TYPE runq_thread_run_time_seconds_total counter\n"));
}

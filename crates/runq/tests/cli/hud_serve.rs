//! `runq hud --serve` end to end (root): continuous mode watches a
//! service by name, serves its blockers as OpenMetrics that a third-party
//! parser accepts, writes the same figures as Prometheus text to a
//! textfile, attaches the service again when it restarts, and ends on
//! SIGINT with nothing left behind; bad arguments are usage errors.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::hud::{demo_bin, runq_bin, start_command, KillOnDrop};

/// The body of `GET /metrics` at `addr`, asking for OpenMetrics or not.
fn scrape(addr: &str, openmetrics: bool) -> String {
    let mut s = TcpStream::connect(addr).expect("the scrape endpoint");
    let accept = match openmetrics {
        true => "Accept: application/openmetrics-text; version=1.0.0,text/plain;q=0.5\r\n",
        false => "",
    };
    write!(s, "GET /metrics HTTP/1.1\r\nHost: x\r\n{accept}\r\n").unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    let (head, body) = resp.split_once("\r\n\r\n").expect("an HTTP response");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    body.to_string()
}

/// Waits (up to 60 s) until `check` holds for a scrape; returns it.
fn scrape_until(addr: &str, what: &str, check: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let body = scrape(addr, true);
        if check(&body) {
            return body;
        }
        assert!(Instant::now() < deadline, "never {what}:\n{body}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The value of the sample that starts with `prefix` (name and labels).
fn value(body: &str, prefix: &str) -> Option<f64> {
    body.lines()
        .find_map(|l| l.strip_prefix(prefix)?.trim().parse().ok())
}

/// Starts the service under `exe` (a copy with a name of this test's own,
/// so that no other test's service is watched).
fn start(exe: &Path) -> KillOnDrop {
    let mut cmd = Command::new(exe);
    cmd.arg("120");
    KillOnDrop(start_command(cmd).0)
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn serve_exports_a_service_by_name_across_its_restart() {
    let dir = tempfile::tempdir().unwrap();
    let name = format!("hudsrv-{}", std::process::id());
    let exe = dir.path().join(&name);
    std::fs::copy(demo_bin("runq-demo-service"), &exe).unwrap();
    let textfile = dir.path().join("prom").join("hud.prom");
    std::fs::create_dir(textfile.parent().unwrap()).unwrap();
    let mut service = start(&exe);
    let mut hud = Command::new(runq_bin())
        .args(["hud", "--serve", &name, "--metrics-addr", "127.0.0.1:0"])
        .arg("--metrics-file")
        .arg(&textfile)
        .args(["--window", "2s"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(hud.stderr.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let addr = first
        .split("http://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .unwrap_or_else(|| panic!("no address in {first:?}"))
        .to_string();
    let invoice = format!(
        "runq_hud_blocker_findings_total{{target=\"{name}\",category=\"blocking_call\",function=\"runq_demo_service::render_invoice\"}}"
    );
    let body = scrape_until(&addr, "a blocker", |b| {
        value(b, &invoice).is_some_and(|v| v > 0.0)
    });
    if let Err(e) = openmetrics_parser::openmetrics::parse_openmetrics(&body) {
        panic!("OpenMetrics rejected: {e:?}\n{body}");
    }
    assert!(body.ends_with("# EOF\n"));
    let plain = scrape(&addr, false);
    if let Err(e) = openmetrics_parser::prometheus::parse_prometheus(&plain) {
        panic!("Prometheus text rejected: {e:?}\n{plain}");
    }
    let text = std::fs::read_to_string(&textfile).expect("the textfile after a window");
    if let Err(e) = openmetrics_parser::prometheus::parse_prometheus(&text) {
        panic!("the textfile is rejected: {e:?}\n{text}");
    }
    // The service restarts: a new process of the same name is attached.
    let processes = format!("runq_hud_target_processes{{target=\"{name}\"}}");
    let attaches = format!("runq_hud_target_attaches_total{{target=\"{name}\"}}");
    drop(service);
    scrape_until(&addr, "down", |b| value(b, &processes) == Some(0.0));
    service = start(&exe);
    let body = scrape_until(&addr, "attached again", |b| {
        value(b, &processes) == Some(1.0) && value(b, &attaches) == Some(2.0)
    });
    assert!(
        value(&body, &invoice).unwrap() > 0.0,
        "counters survive a restart"
    );
    // SIGINT ends it cleanly; only the textfile is left in its directory.
    // SAFETY: a signal to the child this test started.
    unsafe { libc::kill(hud.id() as i32, libc::SIGINT) };
    let status = hud.wait().unwrap();
    drop(service);
    // Continuous mode ends on a signal, as every long command does.
    assert_eq!(status.code(), Some(130), "{status:?}");
    let left: Vec<_> = std::fs::read_dir(textfile.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("hud.prom")]);
}

#[test]
fn serve_without_an_output_or_with_a_bad_address_is_a_usage_error() {
    for args in [
        vec!["hud", "--serve", "x"],
        vec!["hud", "--serve", "x", "--metrics-addr", "not-an-address"],
        vec![
            "hud",
            "--serve",
            "x",
            "--metrics-file",
            "/nonexistent/dir/h.prom",
        ],
        vec!["hud", "--metrics-addr", "127.0.0.1:0", "x"],
        vec![
            "hud",
            "--serve",
            "x",
            "--metrics-file",
            "/tmp/h.prom",
            "--window",
            "10ms",
        ],
    ] {
        let out = Command::new(runq_bin()).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.trim().is_empty(), "{args:?}");
    }
}

//! The contract the hud tests rely on: every demo prints its pid as its
//! first line and ends by itself after the lifetime given as its first
//! argument. (Being a test of this package, it also makes
//! `cargo test --workspace` build the demos.)

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const DEMOS: [&str; 8] = [
    env!("CARGO_BIN_EXE_runq-demo-actix"),
    env!("CARGO_BIN_EXE_runq-demo-busy"),
    env!("CARGO_BIN_EXE_runq-demo-control"),
    env!("CARGO_BIN_EXE_runq-demo-gateway"),
    env!("CARGO_BIN_EXE_runq-demo-named"),
    env!("CARGO_BIN_EXE_runq-demo-polls"),
    env!("CARGO_BIN_EXE_runq-demo-service"),
    env!("CARGO_BIN_EXE_runq-demo-tokio"),
];

#[test]
fn every_demo_prints_its_pid_first_and_ends_after_its_lifetime() {
    let running: Vec<_> = DEMOS
        .iter()
        .map(|exe| {
            let mut child = Command::new(exe)
                .arg("0.3")
                .stdout(Stdio::piped())
                .spawn()
                .unwrap_or_else(|e| panic!("{exe}: {e}"));
            // Kept open until the demo ends: some print figures at the end.
            let mut out = BufReader::new(child.stdout.take().unwrap());
            let mut line = String::new();
            out.read_line(&mut line).unwrap();
            assert_eq!(line.trim(), child.id().to_string(), "{exe}");
            (exe, child, out)
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    for (exe, mut child, _out) in running {
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("{exe} did not end 30 s after a 0.3 s lifetime");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(status.success(), "{exe}: {status}");
    }
}

//! Thread and process names are anyone's to set (prctl(PR_SET_NAME)):
//! `show` and `compare` print them with their control characters escaped,
//! one table row each, while the JSON keeps them as they were read.

use runq_ctprof::compare::{compare, show};
use runq_ctprof::group::{GroupBy, Grouping};
use runq_ctprof::metric_types::MonotonicNs;
use runq_ctprof::model::{CtprofSnapshot, ThreadState};
use runq_ctprof::render::render;
use runq_ctprof::view::ViewOptions;

const HOSTILE: &str = "\x1b[2J\x1b]0;pwned\x07\r\nx\u{9b}31m";

fn snapshot() -> CtprofSnapshot {
    let mut s = CtprofSnapshot::new();
    s.threads = vec![
        ThreadState {
            tid: 10,
            tgid: 10,
            pcomm: HOSTILE.into(),
            comm: HOSTILE.into(),
            run_time_ns: MonotonicNs(5_000_000),
            ..ThreadState::default()
        },
        ThreadState {
            tid: 11,
            tgid: 11,
            pcomm: "calm".into(),
            comm: "calm".into(),
            run_time_ns: MonotonicNs(1_000_000),
            ..ThreadState::default()
        },
    ];
    s
}

fn assert_safe(text: &str) {
    for c in ['\x1b', '\x07', '\r', '\u{9b}'] {
        assert!(!text.contains(c), "{c:?} reached the text: {text:?}");
    }
    assert!(
        text.contains("\\x1b[2J\\x1b]0;pwned\\x07\\r\\nx\\u{9b}31m"),
        "{text}"
    );
    for line in text.lines().filter(|l| l.contains("pwned")) {
        assert!(line.contains("31m"), "one row, not split: {line:?}");
    }
}

#[test]
fn show_and_compare_escape_names_in_every_grouping() {
    let snap = snapshot();
    for by in [GroupBy::Pcomm, GroupBy::Comm, GroupBy::CommExact] {
        let opts = ViewOptions {
            grouping: Grouping {
                by,
                ..Grouping::default()
            },
            ..ViewOptions::default()
        };
        assert_safe(&render(&show(&snap, &opts), false, &[], false));
        // With colour, the only escapes are the derived table's own.
        let coloured = render(&show(&snap, &opts), false, &[], true);
        assert_safe(&coloured.replace("\x1b[34m", "").replace("\x1b[0m", ""));
        assert_safe(&render(&compare(&snap, &snap, &opts), true, &[], false));
        let json = serde_json::to_string(&runq_ctprof::view::CompareDocument(&show(&snap, &opts)));
        assert!(
            json.unwrap().contains("\\u001b[2J"),
            "JSON escapes as serde does"
        );
    }
}

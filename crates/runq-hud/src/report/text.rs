//! The report as text: the blockers, `block_in_place`, the CPU's holders,
//! the workers, the events and the stacks line. Thread and process names
//! (any process can set its own with prctl), function names and paths
//! from the target's binaries are printed through [`printable`] (the
//! tables do so for every cell).

use std::fmt::Write as _;

use runq_common::table::{Align, Table};
use runq_common::text::printable;
use runq_common::units::fmt_ms;

use super::{Blocker, PollMethod, Report, RunQueueStats};
use crate::classify::Flavor;
use crate::detect::Category;
use crate::health::StackReport;

/// Who held the CPU while workers waited, one row per holder.
fn render_holders(out: &mut String, q: &RunQueueStats) {
    if q.holders.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "run-queue delay: {} waits, {} in all, max {}; the CPU was held by (the task that ran just before the worker got it back):",
        q.count,
        fmt_ms(q.total_ns),
        fmt_ms(q.max_ns)
    );
    let mut t = Table::new(&[
        ("holder", Align::Left),
        ("waits", Align::Right),
        ("total", Align::Right),
        ("", Align::Left),
    ]);
    for h in &q.holders {
        let whose = match (h.same_process, &h.culprit) {
            (true, Some(c)) => format!("this process: {c}"),
            (true, None) => "this process".to_string(),
            (false, _) if h.hud_itself => "hud itself (its own cost)".to_string(),
            (false, _) => "another process".to_string(),
        };
        let tids = match h.tids.as_slice() {
            [one] => format!("tid {one}"),
            many => format!("{} threads", many.len()),
        };
        t.row(vec![
            format!("{} ({tids})", h.comm),
            h.count.to_string(),
            fmt_ms(h.total_ns),
            whose,
        ]);
    }
    out.push_str(&t.render(str::to_string));
}

/// Writes the report as text to `out` (the CLI hands it stdout).
pub fn render(r: &Report, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    out.write_all(text(r).as_bytes())
}

/// The report as text.
pub(crate) fn text(r: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "hud: pid {} ({}), {} workers by {}, threshold {}, {} Hz, {:.1}s{}{}",
        r.pid,
        printable(&r.comm),
        r.workers.len(),
        printable(&r.discovery),
        fmt_ms(r.threshold_ns),
        r.frequency_hz,
        r.duration_s,
        if r.target_exited {
            " (target exited)"
        } else {
            ""
        },
        r.interrupted_by
            .as_deref()
            .map(|sig| format!(" (interrupted by {sig})"))
            .unwrap_or_default()
    );
    if let Some(w) = &r.stacks.warning {
        let _ = writeln!(out, "WARNING: {}", printable(w));
    }
    render_blockers(&mut out, r);
    super::withheld::render_withheld(&mut out, &r.withheld);
    super::tasks::render_tasks(&mut out, r);
    render_block_in_place(&mut out, r);
    render_holders(&mut out, &r.run_queue);
    for w in &r.workers {
        let finds: Vec<String> = w
            .findings
            .iter()
            .map(|(c, n)| format!("{} {n}", c.label()))
            .collect();
        let runtime = w.runtime.map_or("", |f| f.label());
        let _ = writeln!(
            out,
            "worker {:>7} {:<16} {:<14} {:>5.1}% busy  {}",
            w.tid,
            printable(&w.comm),
            runtime,
            w.utilization * 100.0,
            if finds.is_empty() {
                "-".to_string()
            } else {
                finds.join(", ")
            }
        );
    }
    let e = &r.events;
    let _ = writeln!(
        out,
        "events: {} sleeps over threshold ({} idle parks), {} run-queue waits, {} samples, {} blocking-pool events ignored, {} lost",
        e.blocked_events, e.idle_parks, e.runqueue_events, e.samples, e.blocking_pool_events, r.lost_events
    );
    render_stacks(&mut out, &r.stacks);
    if let Some(d) = &r.debug_file {
        let _ = writeln!(out, "symbols: {}", printable(d));
    }
    if let Some(h) = &r.symbol_hint {
        let _ = writeln!(out, "note: {}", printable(h));
    }
    out
}

/// The blockers table, or why there is none.
fn render_blockers(out: &mut String, r: &Report) {
    if r.blockers.is_empty() && r.stacks.warning.is_some() {
        let _ = writeln!(
            out,
            "no blockers named: the stacks cannot show them (see the warning)"
        );
    } else if r.blockers.is_empty() {
        let _ = writeln!(out, "no blockers above the threshold");
    } else {
        let mut t = Table::new(&[
            ("category", Align::Left),
            ("count", Align::Right),
            ("total", Align::Right),
            ("max", Align::Right),
            ("culprit", Align::Left),
        ]);
        for b in &r.blockers {
            // A sampled row's findings are sampling periods, not polls: it
            // has no longest interval to show.
            let max = match b.category.info().sampled {
                true => "-".to_string(),
                false => fmt_ms(b.max_ns),
            };
            t.row(vec![
                b.category.label().to_string(),
                b.count.to_string(),
                fmt_ms(b.total_ns),
                max,
                culprit_cell(b),
            ]);
        }
        out.push_str(&t.render(str::to_string));
        if r.poll_timing.method == PollMethod::Exact {
            let _ = writeln!(
                out,
                "long poll (exact): one poll's time on CPU, timed by uprobes on {} instances of \
                 tokio::runtime::task::raw::poll (--exact-polls); its culprit is from the samples taken in it",
                r.poll_timing.instances
            );
        }
        if r.blockers
            .iter()
            .any(|b| b.category == Category::TaskCpuSampled)
        {
            let _ = writeln!(
                out,
                "on CPU (sampled): task code's CPU time from {} Hz cpu-clock samples (count = samples); \
                 Tokio switches tasks without the kernel seeing it, so no poll length is claimed",
                r.frequency_hz
            );
        }
    }
}

/// Time in `block_in_place`, apart from the blockers.
fn render_block_in_place(out: &mut String, r: &Report) {
    if r.block_in_place.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "block_in_place: each worker handed its core to another thread first, so the runtime \
         kept running (no blocker); the time its request waited, by culprit:"
    );
    let mut t = Table::new(&[
        ("sleeps+samples", Align::Right),
        ("total", Align::Right),
        ("longest sleep", Align::Right),
        ("culprit", Align::Left),
    ]);
    for b in &r.block_in_place {
        t.row(vec![
            b.count.to_string(),
            fmt_ms(b.total_ns),
            fmt_ms(b.max_ns),
            culprit_cell(b),
        ]);
    }
    out.push_str(&t.render(str::to_string));
}

/// The culprit column: the function, where it is, and the way below it
/// into library code.
pub(super) fn culprit_cell(b: &Blocker) -> String {
    let mut cell = b.function.clone();
    // Rows of another runtime than the multi-thread one say which.
    if let Some(f) = b.main_runtime().filter(|f| *f != Flavor::MultiThread) {
        cell = format!("[{}] {cell}", f.label());
    }
    match (&b.location, b.locations.len()) {
        (Some(l), n) if n > 1 => {
            let _ = write!(cell, " ({l} +{} more)", n - 1);
        }
        (Some(l), _) => {
            let _ = write!(cell, " ({l})");
        }
        (None, _) => {}
    }
    let below = b.main_path_below();
    if let Some(p) = below {
        let _ = write!(cell, " → {p}");
    }
    if let Some(call) = b.main_syscall() {
        // `→ … → writev` and `writev on a socket` say `writev` once.
        let name = call.split(" on ").next().unwrap_or(call);
        match below.is_some_and(|p| p.ends_with(name)) {
            true => cell.push_str(&call[name.len()..]),
            false => {
                let _ = write!(cell, " in {call}");
            }
        }
    }
    cell
}

/// The stacks line: source, per-object methods, shortfalls, bytes copied.
fn render_stacks(out: &mut String, s: &StackReport) {
    let _ = write!(
        out,
        "stacks: {} ({}); {} stacks, {} cut short ({:.0}%; their time is under the deepest frame known)",
        s.source.label(),
        printable(&s.reason),
        s.stacks,
        s.short,
        s.short as f64 * 100.0 / s.stacks.max(1) as f64
    );
    if s.truncated > 0 {
        let _ = write!(out, ", {} cut at the kernel's frame limit", s.truncated);
    }
    let u = &s.unwind;
    if u.stacks > 0 || u.copy_failed > 0 {
        let _ = write!(
            out,
            "; unwound {} copies ({} to the root, {} past the copy, {} stopped, {} not copied), {:.1} KiB/s copied",
            u.stacks,
            u.complete,
            u.copy_too_short,
            u.stopped,
            u.copy_failed,
            s.bytes_copied_per_s / 1024.0
        );
    }
    let _ = writeln!(out);
    if !s.objects.is_empty() {
        let objects: Vec<String> = s
            .objects
            .iter()
            .map(|o| {
                let name = o.path.rsplit('/').next().unwrap_or(&o.path);
                format!("{name}: {}", o.method.label())
            })
            .collect();
        let _ = writeln!(out, "objects: {}", printable(&objects.join(", ")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::Category;
    use crate::export::tests::{finding, report};
    use crate::report::{HolderRow, WorkerStats};

    /// Clears the screen, sets the title, rings the bell, breaks the line.
    const HOSTILE: &str = "\x1b[2J\x1b]0;pwned\x07\r\nevil\u{9b}31m";
    const ESCAPED: &str = "\\x1b[2J\\x1b]0;pwned\\x07\\r\\nevil\\u{9b}31m";

    #[test]
    fn names_from_the_target_print_as_escapes_on_their_own_line() {
        let mut r = report(&[finding(Category::BlockingCall, 20)]);
        r.comm = HOSTILE.into();
        r.blockers[0].function = HOSTILE.into();
        r.workers = vec![WorkerStats {
            tid: 11,
            comm: HOSTILE.into(),
            runtime: None,
            cpu_ns: 1,
            utilization: 0.5,
            findings: Default::default(),
        }];
        r.run_queue.holders = vec![HolderRow {
            comm: HOSTILE.into(),
            same_process: false,
            hud_itself: false,
            culprit: None,
            tids: vec![12],
            count: 1,
            total_ns: 6_000_000,
        }];
        r.run_queue.count = 1;
        let text = text(&r);
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{text:?}"
        );
        let named: Vec<&str> = text.lines().filter(|l| l.contains("pwned")).collect();
        assert_eq!(named.len(), 4, "header, blocker, holder, worker: {text}");
        assert!(named.iter().all(|l| l.contains(ESCAPED)), "{text}");
    }
}

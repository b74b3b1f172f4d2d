//! sched_ext's word on the scheduler under test, read from start to end:
//! whether the kernel enabled a BPF scheduler since the start (a new
//! `enable_seq`, `state` `enabled`, a `root/ops` name), and whether it
//! still runs it (see `runq_kernel::sched_ext::{attach_state,
//! departure}`); once it left, why, from the kernel's log.

use std::path::Path;
use std::time::{Duration, Instant};

use runq_kernel::kmsg::KmsgCursor;
use runq_kernel::sched_ext::{attach_state, departure, AttachState, SchedExtSysfs};
use runq_kernel::sched_ext_log::ScxExit;

use super::{Readiness, DEFAULT_READY_AFTER};

/// How often the run loop reads sched_ext's state.
const POLL_EVERY: Duration = Duration::from_millis(100);
/// How long to wait for the kernel to log why it disabled a scheduler
/// (it logs from a work item, after the state left `enabled`).
const EXIT_LOG_WAIT: Duration = Duration::from_secs(2);

/// What one reading says of the scheduler under test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seen {
    /// The kernel has not enabled a new scheduler (yet).
    Pending,
    /// The kernel runs the scheduler enabled since the start.
    Attached,
    /// sched_ext no longer runs it: how (`sched_ext state "disabled"`).
    Left(String),
}

/// The watch over sched_ext for one scheduler under test.
#[derive(Debug)]
pub(crate) struct ScxWatch {
    /// `enable_seq` before the scheduler started.
    before: u64,
    /// The ops name and `enable_seq` the kernel attached it with.
    attached: Option<(String, u64)>,
    /// Whether the kernel has sched_ext at all.
    kernel_has_it: bool,
    kmsg: Option<KmsgCursor>,
    /// The kernel's sched_ext lines since the start.
    kernel_log: Vec<String>,
    last_poll: Option<Instant>,
}

impl ScxWatch {
    /// Notes `enable_seq` and the kernel log's end before the start.
    pub fn start() -> Self {
        let now = read();
        ScxWatch {
            before: now.as_ref().map_or(0, |s| s.enable_seq),
            attached: None,
            kernel_has_it: now.is_some(),
            kmsg: KmsgCursor::open_at_end().ok(),
            kernel_log: Vec::new(),
            last_poll: None,
        }
    }

    /// Whether the kernel has sched_ext.
    pub fn kernel_has_it(&self) -> bool {
        self.kernel_has_it
    }

    /// The ops name the kernel attached the scheduler with, once it did.
    pub fn ops(&self) -> Option<&str> {
        self.attached.as_ref().map(|(ops, _)| ops.as_str())
    }

    /// Whether the kernel enabled a scheduler since the start, whether it
    /// still runs it or not.
    pub fn was_enabled(&self) -> bool {
        self.attached.is_some() || read().is_some_and(|s| s.enable_seq > self.before)
    }

    /// Classifies one reading (`None`: no sched_ext); a departure is
    /// reported by every reading after it.
    pub fn observe(&mut self, now: Option<&SchedExtSysfs>) -> Seen {
        if let Some((ops, seq)) = &self.attached {
            return match departure(ops, *seq, now) {
                Some(how) => Seen::Left(how),
                None => Seen::Attached,
            };
        }
        match attach_state(self.before, now) {
            AttachState::Pending => Seen::Pending,
            AttachState::Attached { ops, enable_seq } => {
                self.attached = Some((ops, enable_seq));
                Seen::Attached
            }
            AttachState::Left { state } => Seen::Left(format!(
                "sched_ext enabled a new scheduler and already reads {state:?}"
            )),
        }
    }

    /// Reads sysfs now.
    pub fn poll(&mut self) -> Seen {
        self.last_poll = Some(Instant::now());
        if !self.kernel_has_it {
            return Seen::Pending;
        }
        self.observe(read().as_ref())
    }

    /// Reads sysfs unless it was read within the last 100 ms (the run
    /// loop ticks every 25 ms; `Pending` in between).
    pub fn poll_now_and_then(&mut self) -> Seen {
        match self.last_poll {
            Some(t) if t.elapsed() < POLL_EVERY => Seen::Pending,
            _ => self.poll(),
        }
    }

    /// The kernel's sched_ext lines since the start and the scheduler's
    /// end they give, waiting up to 2 s for the end's line when sched_ext
    /// enabled a scheduler since the start.
    pub fn kernel_exit(&mut self) -> (Vec<String>, Option<ScxExit>) {
        let wait = if self.was_enabled() {
            EXIT_LOG_WAIT
        } else {
            Duration::ZERO
        };
        let end = Instant::now() + wait;
        loop {
            self.read_kmsg();
            let exit = runq_kernel::sched_ext_log::parse_exit(&self.kernel_log);
            if exit.is_some() || Instant::now() >= end || self.kmsg.is_none() {
                return (self.kernel_log.clone(), exit);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn read_kmsg(&mut self) {
        let Some(k) = self.kmsg.as_mut() else { return };
        self.kernel_log.extend(
            k.read_new()
                .into_iter()
                .filter(|l| l.contains("sched_ext") || l.contains("scx"))
                // Not runq's own SysRq-D dumps (`sysrq: Trigger sched_ext
                // debug dump` in 6.12, `sysrq: Dump sched_ext state` later).
                .filter(|l| !is_own_sysrq_line(l)),
        );
    }
}

/// A kernel log line that only says SysRq-D dumped sched_ext's state.
fn is_own_sysrq_line(line: &str) -> bool {
    line.contains("sysrq: ") && line.contains("sched_ext")
}

/// Whether a scheduler is ready by `ready`, `elapsed` after its start,
/// with sched_ext's last reading `seen` and whether a line of its output
/// `matched` the pattern: the kernel's report of the scheduler attached
/// for [`Readiness::SchedExt`], and for [`Readiness::Auto`] on a kernel
/// with sched_ext (`has_scx`), 100 ms up on one without.
pub(crate) fn ready_now(
    ready: &Readiness,
    has_scx: bool,
    elapsed: Duration,
    seen: &Seen,
    matched: bool,
) -> bool {
    match ready {
        Readiness::After(d) => elapsed >= *d,
        Readiness::Pattern(_) => matched,
        Readiness::SchedExt => *seen == Seen::Attached,
        Readiness::Auto if has_scx => *seen == Seen::Attached,
        Readiness::Auto => elapsed >= DEFAULT_READY_AFTER,
    }
}

/// How a scheduler that ended, or that sched_ext let go (`left`), before
/// it was ready is judged: `Ok` when the kernel's log gives an error exit
/// (an ejection: the run's FAIL), else the clause its start error adds
/// (the kernel's words, how sched_ext let it go, or that it had enabled
/// it; nothing for a scheduler the kernel never enabled).
pub(crate) fn start_end(
    exit: Option<&ScxExit>,
    left: Option<&str>,
    enabled: bool,
) -> Result<(), String> {
    match (exit, left) {
        (Some(e), _) if e.error => Ok(()),
        (Some(e), _) => Err(format!("; {}", e.describe())),
        (None, Some(how)) => Err(format!("; sched_ext let it go ({how})")),
        (None, None) if enabled => Err("; sched_ext had enabled it".into()),
        (None, None) => Err(String::new()),
    }
}

fn read() -> Option<SchedExtSysfs> {
    runq_kernel::sched_ext::read_sched_ext(Path::new("/sys"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysrq_dump_lines_of_each_kernel_are_runqs_own() {
        assert!(is_own_sysrq_line("sysrq: Trigger sched_ext debug dump"));
        assert!(is_own_sysrq_line("sysrq: Dump sched_ext state"));
        assert!(!is_own_sysrq_line(
            "sched_ext: BPF scheduler \"qmap\" disabled (runnable task stall)"
        ));
    }

    fn state(state: &str, seq: u64, ops: Option<&str>) -> SchedExtSysfs {
        SchedExtSysfs {
            state: state.into(),
            enable_seq: seq,
            ops: ops.map(str::to_string),
            ..SchedExtSysfs::default()
        }
    }

    fn watch(before: u64) -> ScxWatch {
        ScxWatch {
            before,
            attached: None,
            kernel_has_it: true,
            kmsg: None,
            kernel_log: Vec::new(),
            last_poll: None,
        }
    }

    #[test]
    fn loading_then_attached_then_ejected_while_the_process_lives() {
        let mut w = watch(2);
        // scx_rustland loading: the kernel still runs nothing new.
        assert_eq!(w.observe(Some(&state("disabled", 2, None))), Seen::Pending);
        assert_eq!(w.observe(Some(&state("enabling", 2, None))), Seen::Pending);
        let on = state("enabled", 3, Some("rustland"));
        assert_eq!(w.observe(Some(&on)), Seen::Attached);
        assert_eq!(w.ops(), Some("rustland"));
        assert_eq!(w.observe(Some(&on)), Seen::Attached);
        // SIGSTOPped: the kernel's watchdog ejects it.
        let off = state("disabling", 3, Some("rustland"));
        assert_eq!(
            w.observe(Some(&off)),
            Seen::Left("sched_ext state \"disabling\"".into())
        );
        assert!(matches!(
            w.observe(Some(&state("disabled", 3, None))),
            Seen::Left(_)
        ));
    }

    #[test]
    fn an_ejection_between_two_readings_is_a_departure_at_start() {
        let mut w = watch(0);
        let seen = w.observe(Some(&state("disabled", 1, None)));
        assert_eq!(
            seen,
            Seen::Left("sched_ext enabled a new scheduler and already reads \"disabled\"".into())
        );
        assert_eq!(w.ops(), None);
    }

    #[test]
    fn another_scheduler_taking_over_is_a_departure() {
        let mut w = watch(0);
        assert_eq!(
            w.observe(Some(&state("enabled", 1, Some("qmap")))),
            Seen::Attached
        );
        let seen = w.observe(Some(&state("enabled", 2, Some("simple"))));
        assert!(
            matches!(&seen, Seen::Left(how) if how.contains("\"simple\"")),
            "{seen:?}"
        );
    }

    #[test]
    fn readiness_by_default_is_the_kernels_report_where_there_is_sched_ext() {
        let ms = Duration::from_millis;
        let (on, off) = (Seen::Attached, Seen::Pending);
        // scx_bpfland still loading 2 s in under TCG: not ready.
        assert!(!ready_now(&Readiness::Auto, true, ms(2000), &off, false));
        assert!(ready_now(&Readiness::Auto, true, ms(2500), &on, false));
        assert!(!ready_now(&Readiness::Auto, false, ms(99), &off, false));
        assert!(ready_now(&Readiness::Auto, false, ms(100), &off, false));
        assert!(!ready_now(&Readiness::SchedExt, true, ms(9000), &off, true));
        assert!(ready_now(&Readiness::SchedExt, true, ms(1), &on, false));
        let left = Seen::Left("sched_ext state \"disabled\"".into());
        assert!(!ready_now(&Readiness::SchedExt, true, ms(1), &left, false));
        assert!(ready_now(
            &Readiness::Pattern("x".into()),
            true,
            ms(1),
            &off,
            true
        ));
        assert!(!ready_now(
            &Readiness::After(ms(500)),
            true,
            ms(499),
            &on,
            true
        ));
    }

    #[test]
    fn an_end_before_readiness_is_a_fail_only_when_the_kernel_ejected_it() {
        let exit = |error, reason: &str| ScxExit {
            scheduler: "qmap".into(),
            reason: reason.into(),
            error,
            message: None,
        };
        let stall = exit(true, "runnable task stall");
        assert_eq!(start_end(Some(&stall), None, true), Ok(()));
        let unreg = exit(false, "unregistered from user space");
        assert_eq!(
            start_end(Some(&unreg), Some("x"), true),
            Err(
                "; the kernel disabled BPF scheduler \"qmap\": unregistered from user space".into()
            )
        );
        assert_eq!(
            start_end(None, Some("sched_ext state \"disabled\""), true),
            Err("; sched_ext let it go (sched_ext state \"disabled\")".into())
        );
        assert_eq!(
            start_end(None, None, true),
            Err("; sched_ext had enabled it".into())
        );
        // A verifier rejection: the kernel never enabled it.
        assert_eq!(start_end(None, None, false), Err(String::new()));
    }

    #[test]
    fn without_sched_ext_nothing_is_ever_attached() {
        let mut w = watch(0);
        w.kernel_has_it = false;
        assert_eq!(w.poll(), Seen::Pending);
        assert_eq!(w.poll_now_and_then(), Seen::Pending);
    }
}

//! What a work type's latency figure measures ([`WakeFigure`]), and the
//! timer slack the types that time sleeps set.

/// What a type's wake samples (`resume_latencies_ns`) measure: the one
/// meaning of a group's latency figure, which the report's table, the
/// JSON (`wake_figure`), `--explain` and the latency checks' details name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WakeFigure {
    /// A wake-up latency: from the waker's timestamp taken just before its
    /// wake call (or a timer's deadline) to the wakee running again, for
    /// waits a wake ended (see [`crate::wake_stamp`]).
    #[default]
    Latency,
    /// Time past a requested sleep (elapsed minus requested): how late the
    /// sleeper ran, not the whole blocking call. The sleepers set their
    /// timer slack to 1 ns ([`fine_timer_slack`]).
    SleepOvershoot,
    /// Steps of both kinds (Sequence: overshoot for sleeps, the whole call
    /// for yields and fdatasync).
    Mixed,
    /// A request's completion minus its intended arrival (RequestRate):
    /// the whole response time of an open-loop request, with any delay of
    /// the arrival clock in it.
    RequestLatency,
    /// From a failed fast path to owning a lock: the holder's hold (and
    /// any priority inversion) is in it.
    LockWait,
    /// From an item's enqueue to its dequeue: the time it sat in the
    /// queue behind others, and any wakeup of the consumer.
    QueueWait,
    /// The time across a `sched_yield()` call: how long others ran before
    /// the caller got its CPU back, not a wakeup.
    YieldWait,
    /// The time across an I/O call (`pread`, `fdatasync`): the device's
    /// and the file system's time with any wakeup in it.
    IoLatency,
    /// From a message's sender stamp, taken just before its `send`, to
    /// the receiver running with the whole message, for receives that
    /// blocked (NetTraffic): the network stack's time with the wakeup in
    /// it.
    MessageLatency,
    /// The time across the `cgroup.procs` writes that move a task
    /// (CgroupAttachStorm): the kernel's cgroup migration, not a wakeup.
    AttachTime,
    /// The type takes no latency sample; its groups show none.
    None,
}

impl WakeFigure {
    /// The short label reports print for the figure.
    pub fn label(self) -> &'static str {
        match self {
            WakeFigure::Latency => "wake latency",
            WakeFigure::SleepOvershoot => "sleep overshoot",
            WakeFigure::Mixed => "overshoot and call time",
            WakeFigure::RequestLatency => "request latency from intended arrival",
            WakeFigure::LockWait => "lock wait",
            WakeFigure::QueueWait => "queue wait",
            WakeFigure::YieldWait => "yield wait",
            WakeFigure::IoLatency => "I/O call latency",
            WakeFigure::MessageLatency => "message latency",
            WakeFigure::AttachTime => "cgroup attach time",
            WakeFigure::None => "no latency figure",
        }
    }

    /// What the figure measures, in one clause (the report's legend and
    /// the latency checks' details).
    pub fn meaning(self) -> &'static str {
        match self {
            WakeFigure::Latency => {
                "from the waker's stamp just before its wake call to the wakee running again"
            }
            WakeFigure::SleepOvershoot => {
                "time past each requested sleep, not the whole call (timer slack 1 ns)"
            }
            WakeFigure::Mixed => "sleeps: time past the request; yields and syncs: the whole call",
            WakeFigure::RequestLatency => "completion minus the request's intended arrival",
            WakeFigure::LockWait => {
                "from the failed fast path to owning the lock, the holder's hold in it; not a wakeup"
            }
            WakeFigure::QueueWait => "from an item's enqueue to its dequeue; not only a wakeup",
            WakeFigure::YieldWait => "the time across sched_yield(); not a wakeup",
            WakeFigure::IoLatency => "the time across the I/O call; not a wakeup",
            WakeFigure::MessageLatency => {
                "from the sender's stamp just before send() to the receiver running with the \
                 whole message, for receives that blocked: the network stack's time and the \
                 wakeup"
            }
            WakeFigure::AttachTime => {
                "the time across the cgroup.procs writes moving a task; not a wakeup"
            }
            WakeFigure::None => "the type takes no latency sample",
        }
    }

    /// True when the figure is a wake-up latency.
    pub fn is_wake_latency(self) -> bool {
        self == WakeFigure::Latency
    }
}

/// Sets the calling thread's timer slack to 1 ns (`PR_SET_TIMERSLACK`), as
/// cyclictest-style measurements need: a SCHED_OTHER thread's default of
/// 50 µs would otherwise sit inside every sleep's overshoot. The types
/// that time sleeps or timers call it in each worker.
pub(crate) fn fine_timer_slack() {
    // SAFETY: prctl on the calling thread with an integer argument.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WorkType;

    #[test]
    fn a_type_has_a_latency_figure_exactly_when_it_samples() {
        for t in WorkType::all_defaults() {
            let info = t.info();
            assert_eq!(
                info.wakes.is_none(),
                info.wake_figure == WakeFigure::None,
                "{}: wakes {:?}, figure {:?}",
                info.name,
                info.wakes,
                info.wake_figure
            );
        }
        let figure = |name: &str| WorkType::from_name(name).unwrap().info().wake_figure;
        for name in [
            "FutexPingPong",
            "PipeIo",
            "CachePipe",
            "WakeChain",
            "FutexFanOut",
            "MutexContention",
            "ForkExit",
        ] {
            assert_eq!(figure(name), WakeFigure::Latency, "{name}");
        }
        assert_eq!(figure("CacheYield"), WakeFigure::YieldWait);
        assert_eq!(figure("IoSyncWrite"), WakeFigure::IoLatency);
        assert_eq!(figure("PriorityInversion"), WakeFigure::LockWait);
        assert_eq!(figure("IdleChurn"), WakeFigure::SleepOvershoot);
        assert_eq!(figure("IrqWake"), WakeFigure::Latency);
        assert_eq!(figure("NetTraffic"), WakeFigure::MessageLatency);
        assert_eq!(figure("CgroupAttachStorm"), WakeFigure::AttachTime);
    }
}

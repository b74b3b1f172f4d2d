//! The alarms a worker's telemetry sets off when its longest gap passes a
//! bound: the scheduler's watchdog and the flight recorder's freeze. They
//! belong to the measuring layer, which depends on nothing above it; the
//! spawner hands them to each worker (`spawn` re-exports them).

/// The worker-progress watchdog: a worker whose iteration took more than
/// `stuck_ns` beyond its own planned sleeps and bursts sends SIGUSR2 to
/// `scheduler_pid` once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Watchdog {
    /// The scheduler process to signal.
    pub scheduler_pid: u32,
    /// Stall threshold, ns (2 s by default).
    pub stuck_ns: u64,
}

/// The flight recorder's stop-on-threshold trigger (like cyclictest's
/// `-b`): the first worker whose gap (see [`crate::gap`]) passes `gap_ns`
/// before the stop writes `0` to `tracing_on_fd` (the recorder's
/// `tracing_on`, opened by the parent before the fork), so that the
/// recording ends with the gap instead of being overwritten by the rest of
/// the run. One comparison per iteration, already made for the watchdog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Freeze {
    /// An open, writable `tracing_on` of the recorder's tracefs instance.
    pub tracing_on_fd: i32,
    /// The gap that trips it, ns (the scenario's `max_gap_ms`).
    pub gap_ns: u64,
}

/// Stops the recorder's tracing (`0` into its `tracing_on`): the buffer
/// keeps what it holds now.
pub(crate) fn freeze_recording(f: Freeze) {
    // SAFETY: pwrite(2) of one byte from a static buffer to a descriptor
    // the parent opened for this before the fork; an error (the recorder
    // gone) only means nothing is frozen.
    unsafe { libc::pwrite(f.tracing_on_fd, b"0".as_ptr().cast(), 1, 0) };
}

#[cfg(test)]
mod tests {
    /// The measuring layer's files, which may use only each other.
    const LAYER: &[(&str, &str)] = &[
        ("telemetry", include_str!("telemetry.rs")),
        ("alarm", include_str!("alarm.rs")),
        ("gap", include_str!("gap.rs")),
        ("progress", include_str!("progress.rs")),
        ("report", include_str!("report.rs")),
        ("reservoir", include_str!("reservoir.rs")),
        ("stop", include_str!("stop.rs")),
        ("spin", include_str!("spin.rs")),
        ("own_numa", include_str!("own_numa.rs")),
        ("wake_stamp", include_str!("wake_stamp.rs")),
        ("shared", include_str!("shared.rs")),
    ];

    #[test]
    fn the_measuring_layer_depends_on_nothing_above_it() {
        for (name, text) in LAYER {
            for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
                for (at, _) in line.match_indices("crate::") {
                    let module: String = line[at + 7..]
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    // (An empty name is this test's own text.)
                    assert!(
                        module.is_empty() || LAYER.iter().any(|(m, _)| *m == module),
                        "{name}.rs uses crate::{module}, above the measuring layer: {line}"
                    );
                }
            }
        }
    }
}

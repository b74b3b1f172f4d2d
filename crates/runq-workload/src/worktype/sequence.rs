//! Sequence: a worker that cycles through timed phases (spin, sleep,
//! yield, synchronous I/O), to model tasks whose behaviour changes under
//! the scheduler's feet. Each phase accounts its work like the matching
//! simple type; Sleep adds no work units, so checkpoints pause during it.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::io_sync_write::unlinked_temp_file;
use super::{independent, since, timed_yield, PreparedWork, TypeInfo, WorkerBody};
use crate::spin::spin_burst;
use crate::telemetry::Telemetry;
use runq_kernel::clock::fast::now_ns;

/// What a phase does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PhaseKind {
    /// `spin_burst(1024)` steps (1024 units each).
    Spin,
    /// Sleeps of at most 1 ms (no units; overshoot is a wake sample).
    Sleep,
    /// `sched_yield()` calls (1 unit each; timed).
    Yield,
    /// 16 x 4 KiB writes + fdatasync (16 units; the sync is timed).
    Io,
}

/// One phase: a kind and how long it lasts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Phase {
    /// What the phase does.
    pub kind: PhaseKind,
    /// How long, ms.
    pub ms: u64,
}

/// Sequence parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// The phases, repeated in order.
    pub phases: Vec<Phase>,
}

impl Default for Params {
    fn default() -> Self {
        let phase = |kind, ms| Phase { kind, ms };
        Params {
            phases: vec![
                phase(PhaseKind::Spin, 20),
                phase(PhaseKind::Sleep, 10),
                phase(PhaseKind::Yield, 10),
                phase(PhaseKind::Io, 10),
            ],
        }
    }
}

impl Params {
    /// At least one phase, none of zero length.
    pub fn validate(&self) -> Result<(), String> {
        if self.phases.is_empty() || self.phases.iter().any(|p| p.ms == 0) {
            return Err("phases must list at least one phase, each with ms >= 1".into());
        }
        Ok(())
    }
}

/// Description for `--list`.
pub const INFO: TypeInfo = TypeInfo {
    name: "Sequence",
    summary: "cycles through timed phases: Spin, Sleep, Yield, Io (default 20/10/10/10 ms)",
    units: "per phase, as SpinWait / YieldHeavy / IoSyncWrite; Sleep adds none",
    wakes: Some(
        "Sleep: overshoot past the requested nap; Yield and Io's fdatasync: time across the call",
    ),
    workers: super::WorkerRule::Any,
    wake_figure: super::WakeFigure::Mixed,
    params: &[],
    needs: super::HostNeed::Nothing,
};

const BLOCK: usize = 4096;

struct Body {
    phases: Vec<Phase>,
    current: usize,
    phase_end_ns: u64,
    file: File,
    block: Vec<u8>,
}

impl Body {
    fn advance_if_due(&mut self) {
        let now = now_ns();
        if self.phase_end_ns == 0 {
            self.phase_end_ns = now + self.phases[0].ms * 1_000_000;
        } else if now >= self.phase_end_ns {
            self.current = (self.current + 1) % self.phases.len();
            self.phase_end_ns = now + self.phases[self.current].ms * 1_000_000;
        }
    }

    fn io_step(&mut self, tel: &mut Telemetry) -> u64 {
        let mut units = 0;
        for b in 0..16u64 {
            if self
                .file
                .write_all_at(&self.block, b * BLOCK as u64)
                .is_err()
            {
                break;
            }
            units += 1;
        }
        let t0 = now_ns();
        if self.file.sync_data().is_ok() {
            tel.record_wake(since(t0));
        }
        units
    }

    fn sleep_step(&mut self, tel: &mut Telemetry) {
        let left = self.phase_end_ns.saturating_sub(now_ns());
        let nap = Duration::from_nanos(left.clamp(1, 1_000_000));
        tel.plan(nap.as_nanos() as u64);
        let t0 = now_ns();
        std::thread::sleep(nap);
        tel.record_wake(since(t0).saturating_sub(nap.as_nanos() as u64));
    }
}

impl WorkerBody for Body {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        self.advance_if_due();
        match self.phases[self.current].kind {
            PhaseKind::Spin => spin_burst(1024),
            PhaseKind::Yield => {
                timed_yield(tel);
                1
            }
            PhaseKind::Io => self.io_step(tel),
            PhaseKind::Sleep => {
                self.sleep_step(tel);
                0
            }
        }
    }
}

/// Builds the per-worker bodies.
pub fn prepare(p: &Params) -> Box<dyn PreparedWork> {
    let phases = p.phases.clone();
    independent(move |_| {
        Ok(Box::new(Body {
            phases: phases.clone(),
            current: 0,
            phase_end_ns: 0,
            file: unlinked_temp_file(false)?,
            block: vec![0x3C; BLOCK],
        }))
    })
}

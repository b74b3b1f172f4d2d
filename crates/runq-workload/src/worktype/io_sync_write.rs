//! IoSyncWrite: 4 KiB `pwrite`s followed by `fdatasync` to a private,
//! already-unlinked temporary file, then an optional short sleep. The
//! `fdatasync` is the wake sample.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{independent, PreparedWork, TypeInfo, WorkerBody};
use crate::telemetry::Telemetry;
use runq_kernel::clock::fast::now_ns;

/// IoSyncWrite parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// 4 KiB writes before each sync.
    pub writes_per_sync: u64,
    /// Sleep after each sync, µs (0: none).
    pub sleep_us: u64,
    /// File size at which writes wrap to offset 0, KiB.
    pub file_kb: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            writes_per_sync: 16,
            sleep_us: 100,
            file_kb: 1024,
        }
    }
}

/// Description for `--list`.
pub const INFO: TypeInfo = TypeInfo {
    name: "IoSyncWrite",
    summary: "16 x 4 KiB pwrite + fdatasync to an unlinked temp file, then a short sleep",
    units: "one unit per 4 KiB write (16 per iteration); checkpoint every 64 iterations",
    wakes: Some("fdatasync, timed across the blocking call"),
    workers: super::WorkerRule::Any,
    wake_figure: super::WakeFigure::IoLatency,
    params: &[
        super::ranges::ParamRange::new("writes_per_sync", 1, 1000000),
        super::ranges::ParamRange::new("sleep_us", 0, super::ranges::MAX_US),
        super::ranges::ParamRange::new("file_kb", 4, super::ranges::MAX_KB),
    ],
    needs: super::HostNeed::Nothing,
};

const BLOCK: u64 = 4096;

/// Opens a private file in the temp dir that is gone from the namespace
/// already, so nothing is left behind even on SIGKILL.
pub fn unlinked_temp_file() -> io::Result<File> {
    let dir = std::env::temp_dir();
    let path = dir.join(format!(
        "runq-io-{}-{}",
        std::process::id(),
        runq_kernel::clock::monotonic_ns()
    ));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)?;
    std::fs::remove_file(&path)?;
    Ok(file)
}

/// I/O operations between two progress points of a long iteration: 16
/// writes to the page cache take microseconds, 16 uncached random reads
/// a few milliseconds on a disk.
const IO_CHUNK: u64 = 16;

/// A point inside a run of I/O operations, before the one after `done`:
/// every [`IO_CHUNK`] operations, publishes the progress and returns false
/// at the stop, so a million operations an iteration (the top of
/// `writes_per_sync` and `ops_per_iter`) end within milliseconds of it.
#[inline(always)]
pub(super) fn io_goes_on(tel: &mut Telemetry, done: u64) -> bool {
    if done == 0 || done % IO_CHUNK != 0 {
        return true;
    }
    if crate::stop::stop_requested() {
        return false;
    }
    tel.progress_within(done);
    true
}

struct Body {
    file: File,
    block: Vec<u8>,
    offset: u64,
    writes: u64,
    file_bytes: u64,
    sleep: Duration,
}

impl WorkerBody for Body {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        let mut units = 0;
        while units < self.writes && io_goes_on(tel, units) {
            if self.file.write_all_at(&self.block, self.offset).is_err() {
                break;
            }
            self.offset = (self.offset + BLOCK) % self.file_bytes.max(BLOCK);
            units += 1;
        }
        // After the stop, the writes are not synced: the sync of a large
        // iteration's pages takes the disk's time, and nothing measures it.
        if crate::stop::stop_requested() {
            return units;
        }
        let t0 = now_ns();
        if self.file.sync_data().is_ok() {
            tel.record_wake_since(t0);
        }
        if !self.sleep.is_zero() {
            tel.plan(u64::try_from(self.sleep.as_nanos()).unwrap_or(u64::MAX));
            crate::stop::sleep_unless_stopped(self.sleep);
        }
        units
    }
}

/// Builds the per-worker bodies (each opens its own file in the child).
pub fn prepare(p: &Params) -> Box<dyn PreparedWork> {
    let p = p.clone();
    independent(move |_| {
        Ok(Box::new(Body {
            file: unlinked_temp_file()?,
            block: vec![0xA5; BLOCK as usize],
            offset: 0,
            writes: p.writes_per_sync,
            file_bytes: p.file_kb * 1024,
            sleep: Duration::from_micros(p.sleep_us),
        }))
    })
}

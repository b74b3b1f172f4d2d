//! Storage-side blocking beyond IoSyncWrite: IoRandRead (random 4 KiB
//! `pread`s from a private file whose cache is dropped every iteration) and
//! IoConvoy (every worker writes and `fdatasync`s one shared file, so
//! they queue behind each other's flushes). With `direct`, both use
//! `O_DIRECT` (reads and writes reach the device, not the page cache).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;

use serde::{Deserialize, Serialize};

use super::io_sync_write::{io_goes_on, set_direct, unlinked_temp_file, Block};
use super::{PreparedWork, TypeInfo, WorkerBody};
use crate::telemetry::Telemetry;
use runq_kernel::clock::fast::now_ns;

const BLOCK: u64 = 4096;

/// IoRandRead and IoConvoy parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// 4 KiB operations per iteration.
    pub ops_per_iter: u64,
    /// File size per worker, KiB.
    pub file_kb: u64,
    /// `O_DIRECT` I/O (the temp directory must be on a block device).
    pub direct: bool,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            ops_per_iter: 16,
            file_kb: 4096,
            direct: false,
        }
    }
}

impl Params {
    fn blocks(&self) -> u64 {
        (self.file_kb * 1024 / BLOCK).max(1)
    }
}

/// IoRandRead description.
pub const IO_RAND_READ: TypeInfo = TypeInfo {
    name: "IoRandRead",
    summary:
        "random 4 KiB preads from a private file after dropping its page cache (read blocking)",
    units: "one unit per pread (16 per iteration: checkpoint every 64 iterations)",
    wakes: Some("each pread, timed across the call"),
    workers: super::WorkerRule::Any,
    wake_figure: super::WakeFigure::IoLatency,
    params: &[
        super::ranges::ParamRange::new("ops_per_iter", 1, 1000000),
        super::ranges::ParamRange::new("file_kb", 4, super::ranges::MAX_KB),
    ],
    needs: super::HostNeed::Nothing,
};

/// IoConvoy description.
pub const IO_CONVOY: TypeInfo = TypeInfo {
    name: "IoConvoy",
    summary: "every worker pwrites its slice of one shared file and fdatasyncs it (flush convoys)",
    units: "one unit per 4 KiB pwrite (16 per iteration: checkpoint every 64 iterations)",
    wakes: Some("fdatasync of the shared file, timed across the call"),
    workers: super::WorkerRule::Any,
    wake_figure: super::WakeFigure::IoLatency,
    params: &[
        super::ranges::ParamRange::new("ops_per_iter", 1, 1000000),
        super::ranges::ParamRange::new("file_kb", 4, super::ranges::MAX_KB),
    ],
    needs: super::HostNeed::Nothing,
};

struct RandRead {
    file: File,
    buf: Block,
    blocks: u64,
    ops: u64,
    rng: u64,
    direct: bool,
}

impl WorkerBody for RandRead {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        if !self.direct {
            // SAFETY: advisory call on our own descriptor.
            unsafe { libc::posix_fadvise(self.file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        }
        let mut units = 0;
        while units < self.ops && io_goes_on(tel, units) {
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            let offset = (self.rng % self.blocks) * BLOCK;
            let t0 = now_ns();
            if self
                .file
                .read_exact_at(self.buf.bytes_mut(), offset)
                .is_err()
            {
                break;
            }
            tel.record_wake_since(t0);
            units += 1;
        }
        units
    }
}

/// Blocks written at a time while filling a read file: one 4 KiB write a
/// block spent most of a large fill in system calls (2 GiB in 2.7 s).
const FILL_BLOCKS: u64 = 256;

/// A private temp file of `blocks` written, flushed blocks (then in
/// `O_DIRECT` mode with `direct`); a SIGINT or SIGTERM ends the fill (a
/// 16 GiB file takes the disk's time to write).
fn filled_file(blocks: u64, direct: bool) -> io::Result<File> {
    let file = unlinked_temp_file(false)?;
    let chunk = vec![0x5Au8; (BLOCK * FILL_BLOCKS) as usize];
    let mut b = 0;
    while b < blocks {
        if runq_kernel::signal::received_signal().is_some() {
            return Err(io::Error::new(
                io::ErrorKind::Interrupted,
                "interrupted while filling IoRandRead's file",
            ));
        }
        let n = (blocks - b).min(FILL_BLOCKS);
        file.write_all_at(&chunk[..(n * BLOCK) as usize], b * BLOCK)?;
        b += n;
    }
    file.sync_data()?;
    if direct {
        set_direct(&file, &std::env::temp_dir())?;
    }
    Ok(file)
}

/// Builds IoRandRead bodies, each with its own filled file.
/// Every worker's filled file, made in the parent before any worker
/// starts, so the fill and its `fsync` stay out of the run window.
struct RandReadGroup {
    files: Vec<Option<File>>,
    params: Params,
}

impl PreparedWork for RandReadGroup {
    fn worker(&mut self, idx: usize) -> io::Result<Box<dyn WorkerBody>> {
        let file = self
            .files
            .get_mut(idx)
            .and_then(Option::take)
            .ok_or_else(|| io::Error::other("read file already taken"))?;
        Ok(Box::new(RandRead {
            file,
            buf: Block::filled(0),
            blocks: self.params.blocks(),
            ops: self.params.ops_per_iter,
            direct: self.params.direct,
            rng: now_ns() ^ ((idx as u64 + 1) << 32) | 1,
        }))
    }

    fn release_parent_copies(&mut self) {
        self.files.clear();
    }
}

/// Fills one private file per worker (before fork, before the start).
pub fn prepare_rand_read(p: &Params, workers: usize) -> io::Result<Box<dyn PreparedWork>> {
    let files = (0..workers)
        .map(|_| filled_file(p.blocks(), p.direct).map(Some))
        .collect::<io::Result<_>>()?;
    Ok(Box::new(RandReadGroup {
        files,
        params: p.clone(),
    }))
}

struct Convoy {
    file: File,
    block: Block,
    base: u64,
    blocks: u64,
    next: u64,
    ops: u64,
}

impl WorkerBody for Convoy {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        let mut units = 0;
        while units < self.ops && io_goes_on(tel, units) {
            let offset = self.base + self.next * BLOCK;
            if self.file.write_all_at(self.block.bytes(), offset).is_err() {
                break;
            }
            self.next = (self.next + 1) % self.blocks;
            units += 1;
        }
        // Unsynced after the stop, as IoSyncWrite's writes.
        if crate::stop::stop_requested() {
            return units;
        }
        let t0 = now_ns();
        if self.file.sync_data().is_ok() {
            tel.record_wake_since(t0);
        }
        units
    }
}

struct ConvoyGroup {
    file: Option<File>,
    params: Params,
}

impl PreparedWork for ConvoyGroup {
    fn worker(&mut self, idx: usize) -> io::Result<Box<dyn WorkerBody>> {
        let shared = self
            .file
            .as_ref()
            .ok_or_else(|| io::Error::other("convoy file already released"))?;
        let blocks = self.params.blocks();
        Ok(Box::new(Convoy {
            file: shared.try_clone()?,
            block: Block::filled(0xC3),
            base: idx as u64 * blocks * BLOCK,
            blocks,
            next: 0,
            ops: self.params.ops_per_iter,
        }))
    }

    fn release_parent_copies(&mut self) {
        self.file = None;
    }
}

/// Creates the group's shared file.
pub fn prepare_convoy(p: &Params) -> io::Result<Box<dyn PreparedWork>> {
    Ok(Box::new(ConvoyGroup {
        file: Some(unlinked_temp_file(p.direct)?),
        params: p.clone(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rand_read_files_are_filled_before_any_worker_is_built() {
        let p = Params {
            ops_per_iter: 4,
            file_kb: 64,
            direct: false,
        };
        let mut group = prepare_rand_read(&p, 2).unwrap();
        // The fill happened in prepare: a worker only takes its file.
        let mut body = group.worker(1).unwrap();
        let mut tel = Telemetry::start();
        assert_eq!(body.iterate(&mut tel), 4, "reads hit filled blocks");
        assert!(group.worker(1).is_err(), "each file goes to one worker");
        group.release_parent_copies();
        assert!(group.worker(0).is_err());
    }
}

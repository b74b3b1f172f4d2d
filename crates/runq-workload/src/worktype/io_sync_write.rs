//! IoSyncWrite: 4 KiB `pwrite`s followed by `fdatasync` to a private,
//! already-unlinked temporary file, then an optional short sleep. The
//! `fdatasync` is the wake sample. With `direct`, the file is opened
//! `O_DIRECT` (every write reaches the device, bypassing the page cache).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
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
    /// `O_DIRECT` writes (the temp directory must be on a block device).
    pub direct: bool,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            writes_per_sync: 16,
            sleep_us: 100,
            file_kb: 1024,
            direct: false,
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
/// already, so nothing is left behind even on SIGKILL; with `direct`, in
/// `O_DIRECT` mode.
pub fn unlinked_temp_file(direct: bool) -> io::Result<File> {
    let file = unlinked_file_in(&std::env::temp_dir())?;
    if direct {
        set_direct(&file, &std::env::temp_dir())?;
    }
    Ok(file)
}

/// Turns on `O_DIRECT` for `file` (made in `dir`), or says which
/// directory's file system refused it and what to do.
pub(super) fn set_direct(file: &impl AsRawFd, dir: &std::path::Path) -> io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor we own; no pointers are passed.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_DIRECT) } < 0 {
        let why = io::Error::last_os_error();
        return Err(io::Error::new(
            why.kind(),
            format!(
                "direct=true: the file system of {} refuses O_DIRECT ({why}); point TMPDIR at a \
                 directory on a block device (in a VM: --vm-disk SIZE)",
                dir.display()
            ),
        ));
    }
    Ok(())
}

/// One 4 KiB block at a 4 KiB-aligned address, as `O_DIRECT` needs.
pub(super) struct Block {
    buf: Vec<u8>,
    at: usize,
}

impl Block {
    /// A block of `byte`s.
    pub(super) fn filled(byte: u8) -> Block {
        let buf = vec![byte; 2 * BLOCK as usize];
        let at = buf.as_ptr().align_offset(BLOCK as usize);
        Block { buf, at }
    }

    /// The block's bytes.
    pub(super) fn bytes(&self) -> &[u8] {
        &self.buf[self.at..self.at + BLOCK as usize]
    }

    /// The block's bytes, to read into.
    pub(super) fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.buf[self.at..self.at + BLOCK as usize]
    }
}

/// A private file in `dir`, unlinked at once.
fn unlinked_file_in(dir: &std::path::Path) -> io::Result<File> {
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
    block: Block,
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
            if self
                .file
                .write_all_at(self.block.bytes(), self.offset)
                .is_err()
            {
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

/// Builds the per-worker bodies (each opens its own file in the child);
/// with `direct`, first checks here that the temp directory takes
/// `O_DIRECT`, so a refusal is the run's one error, not every worker's.
pub fn prepare(p: &Params) -> io::Result<Box<dyn PreparedWork>> {
    if p.direct {
        unlinked_temp_file(true)?;
    }
    let p = p.clone();
    Ok(independent(move |_| {
        Ok(Box::new(Body {
            file: unlinked_temp_file(p.direct)?,
            block: Block::filled(0xA5),
            offset: 0,
            writes: p.writes_per_sync,
            file_bytes: p.file_kb * 1024,
            sleep: Duration::from_micros(p.sleep_us),
        }))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_aligned_for_o_direct() {
        let mut b = Block::filled(7);
        assert_eq!(b.bytes().as_ptr() as usize % BLOCK as usize, 0);
        assert_eq!(b.bytes().len(), BLOCK as usize);
        assert!(b.bytes_mut().iter().all(|&x| x == 7));
    }

    #[test]
    fn a_refusal_of_o_direct_names_the_directory_and_the_way_out() {
        // A socket never takes O_DIRECT (tmpfs does since Linux 6.6, so
        // no file system here is sure to refuse it).
        let (socket, _) = std::os::unix::net::UnixDatagram::pair().unwrap();
        let dir = std::path::Path::new("/some/dir");
        let err = set_direct(&socket, dir).unwrap_err().to_string();
        assert!(
            err.contains("/some/dir") && err.contains("--vm-disk"),
            "{err}"
        );
    }

    #[test]
    fn direct_writes_reach_a_disk_backed_directory() {
        // The crate's own target directory lies on a disk file system.
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let file = unlinked_file_in(dir).unwrap();
        set_direct(&file, dir).unwrap();
        let block = Block::filled(0x5A);
        file.write_all_at(block.bytes(), BLOCK).unwrap();
        file.sync_data().unwrap();
        let mut back = Block::filled(0);
        file.read_exact_at(back.bytes_mut(), BLOCK).unwrap();
        assert_eq!(back.bytes(), block.bytes());
    }
}

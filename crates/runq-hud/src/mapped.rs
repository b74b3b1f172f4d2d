//! Whole files as read-only memory maps, for the ELF parsers: an object's
//! headers, symbol tables and unwind sections are a small part of a
//! binary with debug info (its DWARF can be hundreds of MiB), and a map
//! touches only the pages parsed, where reading the file copied all of it
//! onto the heap (hud's peak memory was the largest binary read).

use std::fs::File;
use std::io;
use std::ops::Deref;
use std::os::fd::AsRawFd;
use std::path::Path;

/// A file mapped read-only (private), unmapped when dropped. The file
/// must not be truncated while mapped (reading past its new end faults):
/// maps are kept only while one object is parsed.
pub struct MappedFile {
    ptr: *mut libc::c_void,
    len: usize,
}

// SAFETY: the mapping is read-only and owned by this value alone.
unsafe impl Send for MappedFile {}
// SAFETY: as above; shared access only reads.
unsafe impl Sync for MappedFile {}

impl MappedFile {
    /// Maps the file at `path` (an empty file maps to no bytes).
    pub fn open(path: &Path) -> io::Result<Self> {
        let file = File::open(path)?;
        let len = usize::try_from(file.metadata()?.len())
            .map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))?;
        if len == 0 {
            return Ok(MappedFile {
                ptr: std::ptr::null_mut(),
                len: 0,
            });
        }
        // SAFETY: a fresh private read-only mapping of an open file; the
        // descriptor may be closed once it is made.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(MappedFile { ptr, len })
    }
}

impl Deref for MappedFile {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `ptr` maps `len` readable bytes until `self` is dropped.
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<u8>(), self.len) }
    }
}

impl Drop for MappedFile {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: the mapping made in `open`, unmapped once.
            unsafe { libc::munmap(self.ptr, self.len) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mapped_file_reads_as_the_file_does() {
        let exe = std::env::current_exe().unwrap();
        let mapped = MappedFile::open(&exe).unwrap();
        assert_eq!(&*mapped, &std::fs::read(&exe).unwrap()[..]);
        let empty = tempfile::NamedTempFile::new().unwrap();
        assert!(MappedFile::open(empty.path()).unwrap().is_empty());
        assert!(MappedFile::open(Path::new("/nonexistent/hud")).is_err());
    }
}

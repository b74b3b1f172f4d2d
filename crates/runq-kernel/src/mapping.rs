//! Anonymous memory mappings: `MAP_SHARED` ones made before fork so parent
//! and children see the same pages, and private ones a process can empty
//! with `MADV_DONTNEED`. Unmapped on drop.

use std::io;
use std::ptr::NonNull;

/// An anonymous read-write mapping.
#[derive(Debug)]
pub struct AnonMapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: plain memory; users synchronise through atomics or own it alone.
unsafe impl Send for AnonMapping {}
// SAFETY: as above.
unsafe impl Sync for AnonMapping {}

impl AnonMapping {
    /// `len` zeroed bytes shared with children forked later.
    pub fn shared(len: usize) -> io::Result<Self> {
        Self::map(len, libc::MAP_SHARED)
    }

    /// `len` zeroed bytes private to this process.
    pub fn private(len: usize) -> io::Result<Self> {
        Self::map(len, libc::MAP_PRIVATE)
    }

    fn map(len: usize, kind: libc::c_int) -> io::Result<Self> {
        let len = len.max(1);
        // SAFETY: anonymous mapping with no address hint; checked below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                kind | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(ptr.cast()).ok_or_else(|| io::Error::other("mmap returned null"))?;
        Ok(AnonMapping { ptr, len })
    }

    /// First byte of the mapping.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true (a mapping has at least one byte); for API symmetry.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Drops every page's contents (`MADV_DONTNEED`): the next touch of a
    /// private mapping faults in a zero page.
    pub fn discard_pages(&self) {
        // SAFETY: the range is exactly this mapping.
        unsafe { libc::madvise(self.as_ptr().cast(), self.len, libc::MADV_DONTNEED) };
    }
}

impl Drop for AnonMapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len came from a successful mmap and are unmapped once.
        unsafe { libc::munmap(self.as_ptr().cast(), self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_pages_are_seen_by_a_forked_child() {
        let m = AnonMapping::shared(4096).unwrap();
        // SAFETY: the child writes one byte of the mapping and _exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            unsafe {
                *m.as_ptr() = 42;
                libc::_exit(0);
            }
        }
        // SAFETY: reaping our child, then reading our mapping.
        unsafe {
            libc::waitpid(pid, std::ptr::null_mut(), 0);
            assert_eq!(*m.as_ptr(), 42);
        }
    }

    #[test]
    fn discarded_private_pages_read_back_as_zero() {
        let m = AnonMapping::private(8192).unwrap();
        // SAFETY: in-range writes and reads of our own mapping.
        unsafe {
            *m.as_ptr().add(4096) = 7;
            m.discard_pages();
            assert_eq!(*m.as_ptr().add(4096), 0);
        }
        assert_eq!(m.len(), 8192);
    }
}

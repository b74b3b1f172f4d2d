//! A barrier for processes: a count, a generation and an abort word in
//! MAP_SHARED memory, with futex waits, created before fork and used by
//! every process of a run. Waits sleep in 100 ms slices and run a caller
//! check between them, so a run whose process died can be abandoned
//! instead of hanging.

use std::io;
use std::sync::atomic::{AtomicU32, Ordering};

use runq_kernel::mapping::AnonMapping;

/// A process-shared barrier for a fixed number of parties.
pub struct ProcessBarrier {
    words: AnonMapping,
    parties: u32,
}

impl ProcessBarrier {
    /// Maps the barrier for `parties` processes (call before fork).
    pub fn new(parties: u32) -> io::Result<Self> {
        Ok(ProcessBarrier {
            words: AnonMapping::shared(64)?,
            parties: parties.max(1),
        })
    }

    fn word(&self, i: usize) -> &AtomicU32 {
        // SAFETY: words 0..3 of a live, 4-aligned 64-byte shared mapping.
        unsafe { &*(self.words.as_ptr() as *const AtomicU32).add(i) }
    }

    fn arrived(&self) -> &AtomicU32 {
        self.word(0)
    }

    fn generation(&self) -> &AtomicU32 {
        self.word(1)
    }

    fn aborted(&self) -> &AtomicU32 {
        self.word(2)
    }

    /// Tells every waiter, now and later, to give up.
    pub fn abort(&self) {
        self.aborted().store(1, Ordering::Release);
        self.generation().fetch_add(0, Ordering::AcqRel);
        futex(self.generation(), libc::FUTEX_WAKE, i32::MAX as u32, None);
    }

    /// Blocks until all parties have called `wait` for this round. Between
    /// sleeps it runs `give_up`; when that (or another party's
    /// [`Self::abort`]) says so, the barrier is aborted and `false` returned.
    pub fn wait(&self, mut give_up: impl FnMut() -> bool) -> bool {
        if self.aborted().load(Ordering::Acquire) != 0 {
            return false;
        }
        let generation = self.generation().load(Ordering::Acquire);
        if self.arrived().fetch_add(1, Ordering::AcqRel) + 1 == self.parties {
            self.arrived().store(0, Ordering::Release);
            self.generation().fetch_add(1, Ordering::AcqRel);
            futex(self.generation(), libc::FUTEX_WAKE, i32::MAX as u32, None);
            return true;
        }
        let slice = libc::timespec {
            tv_sec: 0,
            tv_nsec: 100_000_000,
        };
        while self.generation().load(Ordering::Acquire) == generation {
            if self.aborted().load(Ordering::Acquire) != 0 || give_up() {
                // The last party may have arrived, passed and even exited
                // between the loop's check and `give_up`: that round is done.
                if self.generation().load(Ordering::Acquire) != generation {
                    return true;
                }
                self.abort();
                return false;
            }
            futex(
                self.generation(),
                libc::FUTEX_WAIT,
                generation,
                Some(&slice),
            );
        }
        true
    }
}

fn futex(word: &AtomicU32, op: libc::c_int, val: u32, timeout: Option<&libc::timespec>) {
    let timeout = timeout.map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: word is a live u32 in shared memory; timeout is null or valid.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), op, val, timeout);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_meet_twice() {
        let b = std::sync::Arc::new(ProcessBarrier::new(4).unwrap());
        let counter = std::sync::Arc::new(AtomicU32::new(0));
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let (b, c) = (b.clone(), counter.clone());
                std::thread::spawn(move || {
                    c.fetch_add(1, Ordering::SeqCst);
                    assert!(b.wait(|| false));
                    let seen = c.load(Ordering::SeqCst);
                    assert!(b.wait(|| false));
                    seen
                })
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), 4, "nobody passed the barrier early");
        }
    }

    #[test]
    fn a_party_that_arrives_while_giving_up_completes_the_round() {
        let b = ProcessBarrier::new(2).unwrap();
        // The other party arrives (and could exit) inside the check itself:
        // the check then says "give up", but the round was already complete.
        assert!(b.wait(|| b.wait(|| false)));
        assert!(b.wait(|| b.wait(|| false)), "the barrier was not aborted");
    }

    #[test]
    fn a_missing_party_can_be_given_up_on() {
        let b = ProcessBarrier::new(2).unwrap();
        let mut checks = 0;
        assert!(!b.wait(|| {
            checks += 1;
            checks > 2
        }));
        assert!(!b.wait(|| false), "an aborted barrier stays aborted");
    }
}

//! The call graph's depths are real: the known chain lengths for targets
//! A to J, and a profiler-style stack walk (a SIGPROF handler following
//! frame pointers from the interrupted context) that sees more than 1000
//! frames of the graph while target J (2001 calls) runs.

use runq_collatz::callgraph::{function_addresses, run_chain};
use runq_collatz::config::NAMED_TARGETS;

#[test]
fn call_counts_equal_the_known_depths() {
    for (letter, value, depth) in NAMED_TARGETS {
        assert_eq!(run_chain(value), depth, "target {letter} ({value})");
    }
}

#[cfg(target_arch = "x86_64")]
mod walk {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    use super::*;

    static LOW: AtomicUsize = AtomicUsize::new(0);
    static HIGH: AtomicUsize = AtomicUsize::new(0);
    static DEEPEST: AtomicUsize = AtomicUsize::new(0);
    /// The end of the walked thread's stack: above every frame.
    static STACK_TOP: AtomicUsize = AtomicUsize::new(0);

    /// The end (highest address) of this thread's stack.
    fn stack_end() -> usize {
        // SAFETY: pthread_getattr_np fills attr for the calling thread;
        // it is destroyed after use.
        unsafe {
            let mut attr: libc::pthread_attr_t = std::mem::zeroed();
            assert_eq!(libc::pthread_getattr_np(libc::pthread_self(), &mut attr), 0);
            let (mut addr, mut size) = (std::ptr::null_mut(), 0usize);
            assert_eq!(libc::pthread_attr_getstack(&attr, &mut addr, &mut size), 0);
            libc::pthread_attr_destroy(&mut attr);
            addr as usize + size
        }
    }

    /// Counts consecutive frames, from the interrupted one outwards, whose
    /// return address lies in the graph's code.
    extern "C" fn on_sigprof(_: libc::c_int, _: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
        // SAFETY: the kernel passes a valid ucontext to SA_SIGINFO handlers.
        let mut fp = unsafe {
            (*(ctx as *const libc::ucontext_t)).uc_mcontext.gregs[libc::REG_RBP as usize]
        } as usize;
        let (low, high) = (LOW.load(Ordering::Relaxed), HIGH.load(Ordering::Relaxed));
        // The handler runs on the interrupted thread's stack: anything
        // between here and the test's own frame is stack memory.
        let here = &fp as *const usize as usize;
        let top = STACK_TOP.load(Ordering::Relaxed);
        let mut depth = 0;
        for _ in 0..8192 {
            if fp % 8 != 0 || fp < here || fp + 16 > top {
                break;
            }
            // SAFETY: fp is a frame-pointer chain of this thread's stack;
            // the bounds check below stops at anything that is not.
            let (next, ret) = unsafe { (*(fp as *const usize), *((fp + 8) as *const usize)) };
            if !(low..high).contains(&ret) {
                break;
            }
            depth += 1;
            if next <= fp || next - fp > 1 << 20 {
                break;
            }
            fp = next;
        }
        DEEPEST.fetch_max(depth, Ordering::Relaxed);
    }

    #[test]
    fn a_stack_walk_sees_the_deep_chain_of_target_j() {
        let (_, j, j_calls) = NAMED_TARGETS[9];
        assert_eq!(j_calls, 2001);
        STACK_TOP.store(stack_end(), Ordering::Relaxed);
        let addrs = function_addresses();
        LOW.store(*addrs.iter().min().unwrap(), Ordering::Relaxed);
        HIGH.store(*addrs.iter().max().unwrap() + 512, Ordering::Relaxed);
        // SAFETY: installing a SA_SIGINFO handler and a 1 ms CPU-time timer.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_sigprof as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigaction(libc::SIGPROF, &sa, std::ptr::null_mut());
            let tick = libc::timeval {
                tv_sec: 0,
                tv_usec: 1000,
            };
            let timer = libc::itimerval {
                it_interval: tick,
                it_value: tick,
            };
            libc::setitimer(libc::ITIMER_PROF, &timer, std::ptr::null_mut());
        }
        let start = Instant::now();
        // Samples land at uniformly spread depths; run until one is near
        // the bottom of the chain (a few seconds at most).
        while DEEPEST.load(Ordering::Relaxed) < 1990 && start.elapsed() < Duration::from_secs(20) {
            for _ in 0..100 {
                std::hint::black_box(run_chain(std::hint::black_box(j)));
            }
        }
        // SAFETY: disarming the timer.
        unsafe {
            let off: libc::itimerval = std::mem::zeroed();
            libc::setitimer(libc::ITIMER_PROF, &off, std::ptr::null_mut());
        }
        let deepest = DEEPEST.load(Ordering::Relaxed);
        eprintln!(
            "deepest stack walk: {deepest} graph frames after {:?}",
            start.elapsed()
        );
        assert!(deepest > 1000, "deepest walk saw {deepest} graph frames");
        assert!(deepest <= 2001, "more frames than the chain has: {deepest}");
    }
}

//! The unwinder on stacks recorded from this test process: registers read
//! with inline assembly and stack bytes copied through /proc/self/mem, as
//! the kernel copies them for hud. The walk must get through the standard
//! library and libc, which keep no frame pointers, to the thread's root.

use std::os::unix::fs::FileExt;
use std::path::Path;

use super::*;
use crate::symbols::Symbols;

/// Up to `len` bytes from `addr` upwards, stopping where the mapping ends.
fn read_own_memory(addr: u64, len: usize) -> Vec<u8> {
    let mem = std::fs::File::open("/proc/self/mem").unwrap();
    let mut buf = vec![0u8; len];
    let mut got = 0;
    while got < len {
        match mem.read_at(&mut buf[got..], addr + got as u64) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    buf.truncate(got);
    buf
}

/// This thread's registers and the top `len` bytes of its stack.
#[inline(never)]
fn record_stack(len: usize) -> StackCopy {
    let (ip, sp, bp): (u64, u64, u64);
    // SAFETY: reads three registers; no memory is touched.
    unsafe {
        std::arch::asm!(
            "lea {ip}, [rip]",
            "mov {sp}, rsp",
            "mov {bp}, rbp",
            ip = out(reg) ip,
            sp = out(reg) sp,
            bp = out(reg) bp
        );
    }
    StackCopy {
        ip,
        sp,
        bp,
        bytes: read_own_memory(sp, len),
    }
}

#[inline(never)]
fn level_three(len: usize) -> StackCopy {
    std::hint::black_box(record_stack(len))
}

#[inline(never)]
fn level_two(len: usize) -> StackCopy {
    std::hint::black_box(level_three(len))
}

#[inline(never)]
fn level_one(len: usize) -> StackCopy {
    std::hint::black_box(level_two(len))
}

fn names(frames: &[u64]) -> Vec<String> {
    let mut symbols = Symbols::new(Path::new("/proc"), std::process::id());
    symbols
        .stack(frames)
        .iter()
        .map(|f| f.function.to_string())
        .collect()
}

fn position(names: &[String], part: &str) -> usize {
    names
        .iter()
        .position(|n| n.contains(part))
        .unwrap_or_else(|| panic!("{part} not in {names:#?}"))
}

#[test]
fn unwinds_a_recorded_stack_to_the_thread_root() {
    let copy = level_one(256 * 1024);
    let mut u = Unwinder::new(Path::new("/proc"), std::process::id());
    let (frames, end) = u.unwind(&copy);
    let names = names(&frames);
    let (three, two, one) = (
        position(&names, "level_three"),
        position(&names, "level_two"),
        position(&names, "level_one"),
    );
    assert!(three < two && two < one, "{names:#?}");
    position(&names, "unwinds_a_recorded_stack_to_the_thread_root");
    // std's thread entry, reached through std (no frame pointers), and
    // below it libc's, where the walk ends cleanly.
    position(&names, "thread_start");
    assert_eq!(end, UnwindEnd::Complete, "{names:#?}");
    assert_eq!(u.stats.stacks, 1);
    assert!(u.stats.frames >= 5);
    assert!(u
        .objects_seen()
        .iter()
        .any(|o| o.method != UnwindMethod::None));
}

#[test]
fn a_copy_cut_short_is_counted_not_a_panic() {
    let mut copy = level_one(64 * 1024);
    copy.bytes.truncate(24);
    let mut u = Unwinder::new(Path::new("/proc"), std::process::id());
    let (frames, end) = u.unwind(&copy);
    assert!(
        !frames.is_empty(),
        "the instruction pointer is always a frame"
    );
    assert!(frames.len() <= 3, "{frames:x?}");
    assert_eq!(end, UnwindEnd::CopyTooShort);
    assert_eq!(u.stats.copy_too_short, 1);
}

#[test]
fn an_address_with_no_object_stops_the_walk() {
    let copy = StackCopy {
        ip: 0x10,
        sp: 0x1000,
        bp: 0,
        bytes: vec![0xffu8; 64],
    };
    let mut u = Unwinder::new(Path::new("/proc"), std::process::id());
    let (frames, _) = u.unwind(&copy);
    assert_eq!(frames, vec![0x10]);
}

#[test]
fn a_target_that_is_gone_is_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let mut u = Unwinder::new(dir.path(), 4_000_000);
    let copy = level_one(4096);
    let (frames, _) = u.unwind(&copy);
    assert_eq!(frames.first(), Some(&copy.ip));
    assert!(u.objects_seen().is_empty());
    assert_eq!(u.executable_method(), None);
    assert_eq!(u.trusted_fp_prefix(&[1, 2, 3]), 1);
}

#[test]
fn this_process_is_placed_and_judged() {
    let mut u = Unwinder::new(Path::new("/proc"), std::process::id());
    assert!(u.executable_method().is_some());
    let here = record_stack as *const () as u64 + 4;
    let fp = u.placed_at(here).unwrap().frame_pointers;
    let n = u.trusted_fp_prefix(&[here, here, here]);
    assert_eq!(n, if fp { 3 } else { 1 });
}

//! From what the kernel sent to stacks of addresses: copied stacks are
//! unwound, and in DWARF mode frame-pointer walks are cut where they leave
//! code that keeps frame pointers. Also picks the stack source for a
//! target and reports on it.

use crate::event::RawEvent;
use std::path::Path;

use crate::health::{choose_source, StackHealth, StackReport, StackSource, UnwindChoice};
use crate::unwind::{UnwindEnd, UnwindMethod, Unwinder};

/// Marks a stack's first address (innermost first) as the instruction
/// the thread was at, for the symbolizer, which looks every address up
/// one byte back: right for a return address (the call before it, even
/// when the call ends its function: a caller whose last call was a tail
/// call, or a call to a function that never returns), wrong for the
/// instruction pointer itself, which a sample can catch at a function's
/// first byte (one byte back is the previous function). One more byte on
/// the leaf makes its lookup the exact instruction.
pub fn mark_leaf(stack: &mut [u64]) {
    if let Some(leaf) = stack.first_mut() {
        *leaf = leaf.saturating_add(1);
    }
}

/// Turns what the kernel sent into stacks of addresses: copied stacks are
/// unwound; in DWARF mode, frame-pointer walks are cut where they leave
/// code that keeps frame pointers. Counts how good the stacks are.
pub struct StackPrep {
    /// How stacks are taken.
    pub source: StackSource,
    /// Why.
    pub reason: String,
    exe: Option<UnwindMethod>,
    unwinder: Unwinder,
}

impl StackPrep {
    /// Reads the objects of target `pid` (under `proc_root`) and picks the
    /// stack source, as `unwind` asks.
    pub fn new(proc_root: &Path, pid: u32, unwind: UnwindChoice) -> Self {
        let mut unwinder = Unwinder::new(proc_root, pid);
        let exe = unwinder.executable_method();
        let without_fp = unwinder.objects_without_frame_pointers();
        let (source, reason) = choose_source(unwind, exe, &without_fp);
        StackPrep {
            source,
            reason,
            exe,
            unwinder,
        }
    }

    /// Replaces the event's stack by the unwound one where needed, its
    /// first address marked as the exact instruction (see [`mark_leaf`]).
    /// Returns whether the stack was meant to be whole: in DWARF mode, an
    /// event the kernel could not attach a copy to (a sleep that ended in
    /// a page fault, a preemption with no room left to keep its stack)
    /// carries only the frames a frame-pointer walk can trust.
    pub fn prepare(&mut self, ev: &mut RawEvent) -> bool {
        let whole = self.unwound(ev);
        mark_leaf(&mut ev.stack);
        whole
    }

    /// [`StackPrep::prepare`] but for the leaf's mark.
    fn unwound(&mut self, ev: &mut RawEvent) -> bool {
        if self.source != StackSource::Dwarf {
            self.unwinder.note_objects(&ev.stack);
            return true;
        }
        let meant_whole = ev.copy.is_some();
        match ev.copy.take() {
            Some(copy) if !ev.copy_failed => {
                let (stack, end) = self.unwinder.unwind(&copy);
                ev.stack = stack;
                ev.cut_short = end == UnwindEnd::CopyTooShort;
            }
            copy => {
                if ev.copy_failed {
                    self.unwinder.count_copy_failure(copy.as_ref());
                    if let Some(c) = copy.filter(|c| c.ip != 0) {
                        ev.stack = vec![c.ip];
                    }
                }
                let keep = self.unwinder.trusted_fp_prefix(&ev.stack);
                ev.stack.truncate(keep);
            }
        }
        meant_whole
    }

    /// The status line's words on stacks.
    pub fn status(&self, health: &StackHealth) -> String {
        let short = health.short_share();
        format!(
            "stacks: {} ({}){}",
            self.source.label(),
            self.reason,
            if short >= 0.5 {
                format!(", {:.0}% short", short * 100.0)
            } else {
                String::new()
            }
        )
    }

    /// The report's stack section.
    pub fn report(&self, health: &StackHealth, elapsed_s: f64) -> StackReport {
        health.report(
            self.source,
            self.reason.clone(),
            self.exe,
            self.unwinder.objects_seen(),
            self.unwinder.stats,
            elapsed_s,
        )
    }
}

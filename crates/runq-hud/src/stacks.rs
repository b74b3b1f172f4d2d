//! Stacks as the detector sees them: symbolized frames and their classes,
//! both cached per address, so that summarizing a sample costs hash
//! lookups rather than symbolization or string matching. The frames a
//! finding keeps are shared by every finding of the same stack of
//! addresses: a busy target repeats its stacks, and a copy of the frames
//! per finding (60 frames, 4 KiB) made hud's memory grow by megabytes a
//! second beside eight busy workers.

use std::collections::HashMap;
use std::sync::Arc;

use crate::classify::{class_of, FrameClass};
use crate::detect::Summary;
use crate::event::RawEvent;
use crate::sleep_call::{fitting_alias, SleepCall};
use crate::symbols::{Frame, Symbols};

/// A symbolizer with per-address frame classes.
pub struct Stacks {
    symbols: Symbols,
    classes: HashMap<u64, Box<[FrameClass]>>,
    /// The frames of each stack of addresses a finding kept.
    shared: HashMap<Box<[u64]>, Arc<[Frame]>>,
}

/// Stacks kept for sharing before the cache starts over (the findings
/// keep theirs).
const MAX_SHARED: usize = 1 << 14;

impl Stacks {
    /// Wraps a symbolizer.
    pub fn new(symbols: Symbols) -> Self {
        Stacks {
            symbols,
            classes: HashMap::new(),
            shared: HashMap::new(),
        }
    }

    /// The symbolizer.
    pub fn symbols(&self) -> &Symbols {
        &self.symbols
    }

    /// Symbolizes every address not yet cached, in one batch.
    pub fn prefetch<'a>(&mut self, addrs: impl IntoIterator<Item = &'a u64>) {
        self.symbols.prefetch(addrs);
    }

    /// Cuts the event's stack at its first address outside every code
    /// mapping of the process (see [`Symbols::mapped_len`]): the stack
    /// ends there, cut short, and no frame is made of what the walk
    /// misread. Returns whether it cut.
    pub fn cut_unmapped(&mut self, ev: &mut RawEvent) -> bool {
        let keep = self.symbols.mapped_len(&ev.stack);
        let cut = keep < ev.stack.len();
        if cut {
            ev.stack.truncate(keep);
            ev.cut_short = true;
        }
        cut
    }

    /// The frames of a stack (see [`Symbols::stack`]).
    pub fn frames(&mut self, addrs: &[u64]) -> Vec<Frame> {
        self.symbols.stack(addrs)
    }

    /// The frames of a stack (as [`Stacks::frames`]), shared with every
    /// earlier caller that asked for the same addresses.
    pub fn shared_frames(&mut self, addrs: &[u64]) -> Arc<[Frame]> {
        if let Some(frames) = self.shared.get(addrs) {
            return Arc::clone(frames);
        }
        if self.shared.len() >= MAX_SHARED {
            self.shared.clear();
        }
        let frames: Arc<[Frame]> = self.symbols.stack(addrs).into();
        self.shared.insert(addrs.into(), Arc::clone(&frames));
        frames
    }

    /// The frames of a blocking call's stack (as [`Stacks::shared_frames`]),
    /// each name the linker shares between types read as the type of the
    /// descriptor the call slept on (a socket write is a socket write).
    pub fn call_frames(&mut self, addrs: &[u64], call: Option<&SleepCall>) -> Arc<[Frame]> {
        let frames = self.shared_frames(addrs);
        let Some(kind) = call.and_then(|c| c.fd_kind) else {
            return frames;
        };
        let aliases = self.symbols.aliases();
        let renamed: Vec<Option<Arc<str>>> = frames
            .iter()
            .map(|f| {
                let names = aliases.of(&f.function)?;
                let fits = fitting_alias(&f.function, names, kind);
                (fits != &*f.function).then(|| Arc::from(fits))
            })
            .collect();
        if renamed.iter().all(Option::is_none) {
            return frames;
        }
        let frames = frames.iter().zip(renamed).map(|(f, name)| match name {
            Some(function) => Frame {
                function,
                ..f.clone()
            },
            None => f.clone(),
        });
        frames.collect()
    }

    fn classes_of(&mut self, addr: u64) -> &[FrameClass] {
        if !self.classes.contains_key(&addr) {
            let classes = self.symbols.frames_of(addr).iter().map(class_of).collect();
            self.classes.insert(addr, classes);
        }
        &self.classes[&addr]
    }

    /// The summary of a stack; equal to [`Summary::of`] its frames.
    pub fn summary(&mut self, addrs: &[u64]) -> Summary {
        let mut all = Vec::with_capacity(addrs.len() * 2);
        // Each class's frame: its address and index among its frames.
        let mut at = Vec::with_capacity(addrs.len() * 2);
        for a in addrs {
            for (i, c) in self.classes_of(*a).iter().enumerate() {
                all.push(*c);
                at.push((*a, i));
            }
        }
        let symbols = &mut self.symbols;
        Summary::from_classes(&all, |k| {
            let (a, i) = at[k];
            symbols.frames_of(a)[i].function.clone()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[inline(never)]
    fn marker() -> u64 {
        std::hint::black_box(3)
    }

    #[test]
    fn cached_summaries_agree_with_the_frames() {
        let addrs = [
            marker as *const () as u64 + 1,
            Stacks::summary as *const () as u64 + 1,
            8,
        ];
        let mut stacks = Stacks::new(Symbols::new(Path::new("/proc"), std::process::id()));
        let frames = stacks.frames(&addrs);
        assert!(frames[0].function.contains("marker"), "{frames:?}");
        assert_eq!(stacks.summary(&addrs), Summary::of(&frames));
        assert_eq!(stacks.summary(&addrs), Summary::of(&frames), "cached");
        let shared = stacks.shared_frames(&addrs);
        assert_eq!(&shared[..], &frames[..]);
        assert!(
            Arc::ptr_eq(&shared, &stacks.shared_frames(&addrs)),
            "shared"
        );
    }

    /// A walk that read text for a return address: the bytes of
    /// "witch.co" (the address a Hotspots row once showed) fall in no
    /// mapping, so the stack ends before them, cut short, and no frame
    /// is made of them or of what the walk read after.
    #[test]
    fn a_frame_in_no_mapping_cuts_the_stack() {
        let text = u64::from_le_bytes(*b"witch.co");
        assert_eq!(text, 0x6f632e6863746977);
        let marker = marker as *const () as u64 + 1;
        let summary = Stacks::summary as *const () as u64 + 1;
        let mut stacks = Stacks::new(Symbols::new(Path::new("/proc"), std::process::id()));
        let mut ev = RawEvent {
            stack: vec![marker, text, summary],
            ..RawEvent::default()
        };
        assert!(stacks.cut_unmapped(&mut ev));
        assert_eq!(ev.stack, [marker]);
        assert!(ev.cut_short);
        let frames = stacks.frames(&ev.stack);
        assert!(frames[0].function.contains("marker"), "{frames:?}");
        assert!(!frames.iter().any(|f| f.function.contains("unknown")));
        // A stack wholly in mappings is left alone.
        let mut whole = RawEvent {
            stack: vec![marker, summary],
            ..RawEvent::default()
        };
        assert!(!stacks.cut_unmapped(&mut whole));
        assert_eq!((whole.stack.len(), whole.cut_short), (2, false));
        // A leaf in no mapping leaves no frame at all.
        let mut lost = RawEvent {
            stack: vec![text, marker],
            ..RawEvent::default()
        };
        assert!(stacks.cut_unmapped(&mut lost) && lost.stack.is_empty());
    }
}

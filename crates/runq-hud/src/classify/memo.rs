//! Frame classes kept per frame: classifying a frame reads its names and
//! paths (splitting, searching, allocating), and the same frames come
//! back in every sample, every finding and every report row. Frames that
//! come from the symbolizer share their strings (`Arc<str>`), so a frame
//! is known by the addresses of its three strings; the memo holds a
//! reference to each, so that no address is reused while it is a key.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use super::FrameClass;
use crate::symbols::Frame;

/// Entries kept before the memo starts over (frames made afresh for each
/// use, as a replayed trace's, would otherwise grow it without end).
const MAX_ENTRIES: usize = 1 << 16;

/// The strings a class was computed from, by address.
type Key = (usize, usize, usize);

/// The strings themselves, held while their addresses are a key.
type Held = (Arc<str>, Option<Arc<str>>, Option<Arc<str>>);

thread_local! {
    static MEMO: RefCell<HashMap<Key, (Held, FrameClass)>> = RefCell::new(HashMap::new());
}

fn addr(s: Option<&Arc<str>>) -> usize {
    s.map_or(0, |s| Arc::as_ptr(s).cast::<u8>() as usize)
}

/// The class of `f`, computed by `compute` the first time these strings
/// are seen on this thread.
pub(super) fn class(f: &Frame, compute: impl FnOnce(&Frame) -> FrameClass) -> FrameClass {
    let key = (
        addr(Some(&f.function)),
        addr(f.file.as_ref()),
        addr(f.module.as_ref()),
    );
    if let Some(c) = MEMO.with(|m| m.borrow().get(&key).map(|(_, c)| *c)) {
        return c;
    }
    let c = compute(f);
    MEMO.with(|m| {
        let mut m = m.borrow_mut();
        if m.len() >= MAX_ENTRIES {
            m.clear();
        }
        let held = (f.function.clone(), f.file.clone(), f.module.clone());
        m.insert(key, (held, c));
    });
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbols::fixtures::frame;

    #[test]
    fn a_frame_is_classified_once_and_equal_frames_alike() {
        let f = frame("tokio::runtime::scheduler::multi_thread::worker::Context::run_task");
        let runs = std::cell::Cell::new(0);
        let compute = |f: &Frame| {
            runs.set(runs.get() + 1);
            super::super::classify(f)
        };
        let first = class(&f, compute);
        let again = class(&f.clone(), compute);
        assert_eq!(
            (first, runs.get()),
            (again, 1),
            "a clone shares the strings"
        );
        // The same names in strings of their own: computed again, alike.
        let copy = frame(&f.function);
        assert_eq!(class(&copy, compute), first);
        assert_eq!(runs.get(), 2);
        assert!(first.worker_loop && first.tokio);
    }
}

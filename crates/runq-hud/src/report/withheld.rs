//! The kinds of finding a session could not give, and why: without the
//! executable's symbols no stack can be checked, and a guess that cannot
//! be checked makes no finding (see [`crate::detect::Detector::thread_level_only`]).

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::detect::{Category, Tally};

/// A kind of finding the session did not give.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Withheld {
    /// The category not given.
    pub category: Category,
    /// The events of that kind seen and set aside (sleeps over the
    /// threshold, or cpu-clock samples).
    pub events: u64,
    /// Why it could not be given.
    pub reason: String,
}

/// What a session without the executable's symbols withholds, from what
/// its detector counted.
pub fn without_symbols(tally: &Tally) -> Vec<Withheld> {
    let why = |what: &str| {
        format!(
            "the executable has no symbols, so hud cannot tell {what}; \
             give it its debug info (--debug-file) to have them"
        )
    };
    vec![
        Withheld {
            category: Category::BlockingCall,
            events: tally.withheld_waits,
            reason: why(
                "a worker's park (Tokio waiting for work) or a blocking-pool thread's wait \
                 from a blocking call in task code",
            ),
        },
        Withheld {
            category: Category::TaskCpuSampled,
            events: tally.withheld_samples,
            reason: why(
                "task code from the runtime's own code, nor a worker from a blocking-pool \
                 thread of the same name",
            ),
        },
        Withheld {
            category: Category::BlockInPlace,
            events: 0,
            reason: why("a call to Tokio's block_in_place"),
        },
    ]
}

/// The report's lines on what it withheld, one per kind.
pub(super) fn render_withheld(out: &mut String, withheld: &[Withheld]) {
    if withheld.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "only thread-level facts (run-queue delays) are reported; not given:"
    );
    for w in withheld {
        let seen = match (w.category, w.events) {
            (_, 0) => String::new(),
            (Category::TaskCpuSampled, n) => format!(" ({n} samples set aside)"),
            (_, n) => format!(" ({n} sleeps over the threshold set aside)"),
        };
        let _ = writeln!(out, "  {}{seen}: {}", w.category.label(), w.reason);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_withheld_kind_says_how_many_events_and_why() {
        let tally = Tally {
            withheld_waits: 152,
            withheld_samples: 40,
            ..Tally::default()
        };
        let w = without_symbols(&tally);
        let kinds: Vec<Category> = w.iter().map(|w| w.category).collect();
        assert_eq!(
            kinds,
            [
                Category::BlockingCall,
                Category::TaskCpuSampled,
                Category::BlockInPlace
            ]
        );
        assert!(w.iter().all(|w| w.reason.contains("no symbols")));
        let mut out = String::new();
        render_withheld(&mut out, &w);
        assert!(out.contains("blocking call (152 sleeps"), "{out}");
        assert!(out.contains("on CPU (sampled) (40 samples"), "{out}");
        assert!(out.contains("block_in_place: the executable"), "{out}");
        let mut none = String::new();
        render_withheld(&mut none, &[]);
        assert!(none.is_empty());
    }
}

//! Are the stacks good enough to name blockers? A stack that does not
//! reach Tokio's worker (or blocking-pool) loop was cut short: by a
//! frame-pointer walk through code without frame pointers, a stack copy
//! too small, or an object without unwind info. hud counts such stacks and
//! says so, with the fix, instead of reporting a healthy-looking program.

use serde::{Deserialize, Serialize};

use crate::unwind::{ObjectUnwind, UnwindMethod, UnwindStats};

/// How the kernel hands over user stacks, as the report names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StackSource {
    /// The kernel's frame-pointer walk.
    #[default]
    FramePointers,
    /// Copied registers and stack, unwound with DWARF CFI.
    Dwarf,
}

impl StackSource {
    /// Label for the status line and the report.
    pub fn label(self) -> &'static str {
        match self {
            StackSource::FramePointers => "frame pointers",
            StackSource::Dwarf => "DWARF CFI (copied stacks)",
        }
    }
}

/// `--unwind`: how to get stacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnwindChoice {
    /// Frame pointers when the executable keeps them, else DWARF.
    #[default]
    Auto,
    /// Always the kernel's frame-pointer walk.
    FramePointers,
    /// Always copied stacks unwound with DWARF CFI.
    Dwarf,
}

/// Picks the stack source for a target whose executable is walked by
/// `exe` (`None`: unreadable) and whose other objects `without_fp` (file
/// names, the C runtime left out) keep no frame pointers, and says why:
/// auto walks frame pointers only when every object of the program
/// keeps them.
pub fn choose_source(
    choice: UnwindChoice,
    exe: Option<UnwindMethod>,
    without_fp: &[String],
) -> (StackSource, String) {
    if choice == UnwindChoice::Auto
        && exe == Some(UnwindMethod::FramePointers)
        && !without_fp.is_empty()
    {
        return (
            StackSource::Dwarf,
            format!(
                "the executable keeps frame pointers, {} does not; .eh_frame is used",
                without_fp.join(", ")
            ),
        );
    }
    match (choice, exe) {
        (UnwindChoice::FramePointers, _) => (StackSource::FramePointers, "--unwind fp".into()),
        (UnwindChoice::Dwarf, _) => (StackSource::Dwarf, "--unwind dwarf".into()),
        (UnwindChoice::Auto, Some(UnwindMethod::FramePointers)) => (
            StackSource::FramePointers,
            "the executable keeps frame pointers".into(),
        ),
        (UnwindChoice::Auto, Some(UnwindMethod::DwarfCfi)) => (
            StackSource::Dwarf,
            "the executable has no frame pointers; its .eh_frame is used".into(),
        ),
        (UnwindChoice::Auto, Some(UnwindMethod::None)) => (
            StackSource::FramePointers,
            "the executable has neither frame pointers nor unwind info".into(),
        ),
        (UnwindChoice::Auto, None) => (
            StackSource::Dwarf,
            "the executable could not be read; copied stacks are unwound with what is mapped"
                .into(),
        ),
    }
}

/// Below this many stacks, no verdict on their quality is given.
const MIN_STACKS: u64 = 20;
/// Share of short stacks from which the report warns.
const WARN_SHARE: f64 = 0.5;

/// The stack section of a report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StackReport {
    /// How stacks were taken.
    pub source: StackSource,
    /// Why that way (`--unwind`, or what auto saw in the executable).
    pub reason: String,
    /// Objects met in the stacks and how each is walked.
    pub objects: Vec<ObjectUnwind>,
    /// Stacks looked at (sleeps, run-queue waits, samples).
    pub stacks: u64,
    /// Of those, stacks that did not reach the runtime's thread loop.
    pub short: u64,
    /// Median depth (frames) at which short stacks stop.
    pub short_median_depth: Option<u64>,
    /// Frame-pointer walks cut at the kernel's frame limit.
    pub truncated: u64,
    /// What the DWARF unwinder did (copy mode).
    pub unwind: UnwindStats,
    /// Bytes of user stack the kernel copied per second of session.
    pub bytes_copied_per_s: f64,
    /// Set when most stacks are short: what is wrong and how to fix it.
    pub warning: Option<String>,
}

/// Counts stacks as the session sees them.
#[derive(Debug, Default)]
pub struct StackHealth {
    stacks: u64,
    truncated: u64,
    short_depths: Vec<u32>,
}

impl StackHealth {
    /// Notes one stack: its depth, whether it reached the thread loop, and
    /// whether the kernel's walk was cut at its frame limit.
    pub fn note(&mut self, depth: usize, reached_loop: bool, truncated: bool) {
        self.stacks += 1;
        self.truncated += u64::from(truncated);
        if !reached_loop {
            self.short_depths.push(depth as u32);
        }
    }

    /// Share of short stacks (0 with no stacks).
    pub fn short_share(&self) -> f64 {
        self.short_depths.len() as f64 / self.stacks.max(1) as f64
    }

    fn median_short_depth(&self) -> Option<u64> {
        let mut d = self.short_depths.clone();
        d.sort_unstable();
        d.get(d.len() / 2).map(|x| u64::from(*x))
    }

    /// The short-stack warning, when one is due.
    pub fn warning(
        &self,
        source: StackSource,
        exe: Option<UnwindMethod>,
        unwind: &UnwindStats,
    ) -> Option<String> {
        if self.stacks < MIN_STACKS || self.short_share() < WARN_SHARE {
            return None;
        }
        let cause = match (source, exe) {
            (StackSource::FramePointers, Some(m)) if m != UnwindMethod::FramePointers => {
                "the target has no frame pointers: run with --unwind dwarf (or leave --unwind auto)"
            }
            (StackSource::Dwarf, Some(UnwindMethod::None)) => {
                "the target has no frame pointers and no unwind info (.eh_frame): rebuild it with -C force-frame-pointers=yes"
            }
            (StackSource::Dwarf, _) if unwind.copy_too_short * 2 > unwind.stacks => {
                "the stacks are deeper than the 32 KiB hud copies: rebuild the target with -C force-frame-pointers=yes for whole stacks"
            }
            _ => "they do not reach a Tokio multi-thread worker loop: check the workers (--workers PREFIX) or rebuild the target with -C force-frame-pointers=yes",
        };
        Some(format!(
            "stacks stop at frame {} in {:.0}% of events: {cause}; blockers cannot be named from them",
            self.median_short_depth().unwrap_or(0),
            self.short_share() * 100.0
        ))
    }

    /// The report section.
    pub fn report(
        &self,
        source: StackSource,
        reason: String,
        exe: Option<UnwindMethod>,
        objects: Vec<ObjectUnwind>,
        unwind: UnwindStats,
        elapsed_s: f64,
    ) -> StackReport {
        StackReport {
            source,
            reason,
            objects,
            stacks: self.stacks,
            short: self.short_depths.len() as u64,
            short_median_depth: self.median_short_depth(),
            truncated: self.truncated,
            bytes_copied_per_s: unwind.bytes_copied as f64 / elapsed_s.max(1e-9),
            warning: self.warning(source, exe, &unwind),
            unwind,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_follows_the_executable() {
        use UnwindChoice::*;
        let fp = Some(UnwindMethod::FramePointers);
        let cfi = Some(UnwindMethod::DwarfCfi);
        assert_eq!(choose_source(Auto, fp, &[]).0, StackSource::FramePointers);
        assert_eq!(choose_source(Auto, cfi, &[]).0, StackSource::Dwarf);
        assert_eq!(choose_source(Auto, None, &[]).0, StackSource::Dwarf);
        assert_eq!(
            choose_source(FramePointers, cfi, &[]).0,
            StackSource::FramePointers
        );
        assert_eq!(choose_source(Dwarf, fp, &[]).0, StackSource::Dwarf);
        // A library without frame pointers (libz): per object, DWARF.
        let libz = ["libz.so.1".to_string()];
        let (source, why) = choose_source(Auto, fp, &libz);
        assert_eq!(source, StackSource::Dwarf);
        assert!(why.contains("libz.so.1 does not"), "{why}");
        assert_eq!(
            choose_source(FramePointers, fp, &libz).0,
            StackSource::FramePointers
        );
    }

    fn health(short: u32, whole: u32, depth: usize) -> StackHealth {
        let mut h = StackHealth::default();
        (0..short).for_each(|_| h.note(depth, false, false));
        (0..whole).for_each(|_| h.note(20, true, false));
        h
    }

    #[test]
    fn blind_frame_pointer_stacks_are_named_with_the_fix() {
        let h = health(90, 10, 2);
        let w = h
            .warning(
                StackSource::FramePointers,
                Some(UnwindMethod::DwarfCfi),
                &UnwindStats::default(),
            )
            .unwrap();
        assert!(
            w.starts_with("stacks stop at frame 2 in 90% of events"),
            "{w}"
        );
        assert!(w.contains("--unwind dwarf"), "{w}");
    }

    #[test]
    fn no_unwind_info_and_short_copies_have_their_own_advice() {
        let h = health(60, 40, 1);
        let none = h.warning(
            StackSource::Dwarf,
            Some(UnwindMethod::None),
            &UnwindStats::default(),
        );
        assert!(none.unwrap().contains("no unwind info"));
        let short = UnwindStats {
            stacks: 100,
            copy_too_short: 70,
            ..Default::default()
        };
        let w = h.warning(StackSource::Dwarf, Some(UnwindMethod::DwarfCfi), &short);
        assert!(w.unwrap().contains("deeper than the 32 KiB"));
    }

    #[test]
    fn healthy_or_scarce_stacks_give_no_warning() {
        let src = StackSource::FramePointers;
        let exe = Some(UnwindMethod::FramePointers);
        assert!(health(10, 90, 3)
            .warning(src, exe, &UnwindStats::default())
            .is_none());
        assert!(
            health(5, 0, 3)
                .warning(src, exe, &UnwindStats::default())
                .is_none(),
            "too few"
        );
        let r = health(3, 7, 4).report(src, "x".into(), exe, vec![], UnwindStats::default(), 2.0);
        assert_eq!((r.stacks, r.short, r.short_median_depth), (10, 3, Some(4)));
    }
}

//! Newtypes for per-thread values, one per kernel semantic.
//!
//! The shape of a field decides how it may be combined across threads: a
//! monotonic counter sums, a peak takes the max, an ordinal takes a range, a
//! category takes the mode. Keeping them distinct types makes a wrong
//! pairing a compile error in the metric registry.

use serde::{Deserialize, Serialize};

macro_rules! newtype {
    ($($(#[$doc:meta])* $name:ident($inner:ty);)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub $inner);

        impl $name {
            /// True for the zero value (skipped when serializing).
            pub fn is_zero(&self) -> bool {
                self.0 == <$inner>::default()
            }
        }
    )*};
}

newtype! {
    /// A counter that only grows over the thread's life (wakeups, syscalls).
    MonotonicCount(u64);
    /// A counter of kernel code with no live writer; always reads zero.
    DeadCounter(u64);
    /// Cumulative time in ns (run time, wait sum, delay totals).
    MonotonicNs(u64);
    /// A lifetime high-water mark in ns (`*_max`, delay max/min).
    PeakNs(u64);
    /// A lifetime high-water mark in bytes (taskstats memory watermarks).
    PeakBytes(u64);
    /// An instantaneous value in ns sampled at capture (`fair_slice_ns`).
    GaugeNs(u64);
    /// An instantaneous count that goes up and down (`nr_threads`).
    GaugeCount(u64);
    /// Time in USER_HZ clock ticks (utime, stime).
    ClockTicks(u64);
    /// A byte count (I/O, allocator counters).
    Bytes(u64);
    /// A bounded signed scalar (nice, priority, processor).
    OrdinalI32(i32);
    /// A bounded unsigned scalar (rt_priority).
    OrdinalU32(u32);
    /// A bounded 64-bit scalar.
    OrdinalU64(u64);
}

/// A categorical value such as a policy name.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CategoricalString(pub String);

impl CategoricalString {
    /// True for the empty string.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A CPU affinity mask as the sorted list of allowed CPUs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CpuSet(pub Vec<u32>);

impl CpuSet {
    /// True when no CPU is recorded (the reading was missing).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

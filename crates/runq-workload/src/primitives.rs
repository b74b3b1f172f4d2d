//! The building blocks the work types are made of, public so that the
//! floor benchmarks (`examples/`) run the same code without the engine:
//! one-byte pipe messages, the futex turn of a shared page, the spin
//! burst, and CPU pinning.

pub use crate::fd::{pipe, read_byte, write_byte, ReadByte};
pub use crate::placement::set_affinity;
pub use crate::shared::{futex_wait, futex_wake, SharedRegion, SharedWord};
pub use crate::spin::spin_burst;

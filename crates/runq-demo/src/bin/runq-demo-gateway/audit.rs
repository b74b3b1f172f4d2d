//! The `current_thread` runtime, on a std thread of its own (`gw-audit`):
//! each audit flush takes the ledger's `std::sync::Mutex` right after a
//! plain thread (`gw-ledger`) took it for [`BLOCK`], so the flush blocks
//! the runtime for about that long.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use runq_demo::Truth;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

use crate::{wait_well, Mode, BLOCK};

/// What the audit flushes measured.
pub(crate) static AUDIT: Truth = Truth::new("flush_audit_log");

/// Pause of the ledger between two holds.
const PERIOD: Duration = Duration::from_millis(100);

/// Starts the audit runtime's thread (and in the blocking mode the
/// ledger's) for `lifetime`.
pub(crate) fn start(mode: Mode, lifetime: Duration) {
    let ledger = Arc::new(Mutex::new(0u64));
    let (taken, rx) = unbounded_channel();
    if mode == Mode::Blocking {
        let held = ledger.clone();
        std::thread::Builder::new()
            .name("gw-ledger".into())
            .spawn(move || loop {
                let mut entries = held.lock().unwrap_or_else(|e| e.into_inner());
                *entries += 1;
                let _ = taken.send(());
                std::thread::sleep(BLOCK);
                drop(entries);
                std::thread::sleep(PERIOD);
            })
            .expect("the ledger thread");
    }
    std::thread::Builder::new()
        .name("gw-audit".into())
        .spawn(move || audit_runtime(mode, lifetime, ledger, rx))
        .expect("the audit thread");
}

/// Runs the audit task in a `current_thread` runtime until `lifetime` is
/// up.
fn audit_runtime(
    mode: Mode,
    lifetime: Duration,
    ledger: Arc<Mutex<u64>>,
    mut taken: UnboundedReceiver<()>,
) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("audit runtime");
    rt.block_on(async move {
        let until = Instant::now() + lifetime;
        while Instant::now() < until {
            if mode == Mode::Blocking {
                if taken.recv().await.is_none() {
                    return;
                }
                AUDIT.time(|| flush_audit_log(&ledger));
                continue;
            }
            let t = Instant::now();
            wait_well(mode, BLOCK).await;
            AUDIT.add(t.elapsed(), Default::default());
            tokio::time::sleep(PERIOD).await;
        }
    });
}

/// Writes the audit log out: takes the ledger, blocking the
/// `current_thread` runtime while the ledger's thread holds it.
#[inline(never)]
fn flush_audit_log(ledger: &Mutex<u64>) -> u64 {
    let entries = ledger.lock().map_or(0, |g| *g);
    entries.wrapping_add(std::hint::black_box(3))
}

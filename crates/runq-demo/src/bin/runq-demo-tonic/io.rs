//! The blocking parts that wait off CPU, each a function of its own
//! (`#[inline(never)]`, so its frame is kept), and what they wait for:
//! a TCP echo thread that answers after [`HOLD`], a journal file whose
//! `flock` a plain thread holds for [`HOLD`] at a time, and a ledger
//! `std::sync::Mutex` held the same way. A holder tells the handlers
//! each time it takes its lock, so each call waits for about [`HOLD`].

use std::fs::File;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

/// How long a holder keeps its lock, and the echo thread its answer.
pub(crate) const HOLD: Duration = Duration::from_millis(25);
/// A holder's pause between two holds.
const PAUSE: Duration = Duration::from_millis(50);

/// Starts the echo thread (`echo`): one connection at a time, it reads
/// 16 bytes and sends them back after [`HOLD`]. Returns its address.
pub(crate) fn start_echo() -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    std::thread::Builder::new()
        .name("echo".into())
        .spawn(move || {
            for stream in listener.incoming().flatten() {
                let _ = echo(stream);
            }
        })?;
    Ok(addr)
}

/// Answers one connection.
fn echo(mut stream: TcpStream) -> std::io::Result<()> {
    let mut buf = [0u8; 16];
    stream.read_exact(&mut buf)?;
    std::thread::sleep(HOLD);
    stream.write_all(&buf)
}

/// Starts a plain thread named `name` that calls `hold` (which takes a
/// lock, sleeps [`HOLD`] and lets it go, calling its argument once the
/// lock is taken) in a loop; returns what tells the handlers.
fn start_holder(name: &str, hold: impl Fn(&dyn Fn()) + Send + 'static) -> watch::Receiver<u64> {
    let (taken, rx) = watch::channel(0u64);
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || loop {
            hold(&|| taken.send_modify(|n| *n += 1));
            std::thread::sleep(PAUSE);
        })
        .expect("a holder thread");
    rx
}

/// The ledger: a `std::sync::Mutex`, held by its thread (`ledger`).
pub(crate) struct Ledger {
    /// The balance.
    pub(crate) lock: Arc<Mutex<u64>>,
    /// Bumped each time the ledger's thread takes the lock.
    pub(crate) taken: watch::Receiver<u64>,
}

impl Ledger {
    /// The ledger and its holding thread.
    pub(crate) fn start() -> Ledger {
        let lock = Arc::new(Mutex::new(0u64));
        let held = lock.clone();
        let taken = start_holder("ledger", move |taken| {
            let mut balance = held.lock().unwrap_or_else(|e| e.into_inner());
            *balance += 1;
            taken();
            std::thread::sleep(HOLD);
        });
        Ledger { lock, taken }
    }
}

/// The journal: an unlinked temporary file, open twice (a `flock` is
/// the open file's), once by its thread (`journal`), which takes the
/// lock for [`HOLD`] at a time.
pub(crate) struct Journal {
    /// The handlers' open file.
    pub(crate) file: File,
    /// Bumped each time the journal's thread takes the lock.
    pub(crate) taken: watch::Receiver<u64>,
}

impl Journal {
    /// The journal and its holding thread.
    pub(crate) fn start() -> std::io::Result<Journal> {
        let at = std::env::temp_dir().join(format!("runq-tonic-{}.journal", std::process::id()));
        let file = File::create(&at)?;
        let held = File::options().write(true).open(&at)?;
        std::fs::remove_file(&at)?;
        let taken = start_holder("journal", move |taken| {
            flock(&held, libc::LOCK_EX);
            taken();
            std::thread::sleep(HOLD);
            flock(&held, libc::LOCK_UN);
        });
        Ok(Journal { file, taken })
    }
}

/// `flock(2)` on `file`.
fn flock(file: &File, op: libc::c_int) {
    // SAFETY: flock on an open descriptor this process owns.
    unsafe { libc::flock(file.as_raw_fd(), op) };
}

/// Checks the backend: a round trip to the echo thread on a blocking
/// `std::net::TcpStream` of its own; returns the bytes echoed.
#[inline(never)]
pub(crate) fn probe_backend(addr: SocketAddr) -> u64 {
    let round_trip = || -> std::io::Result<u64> {
        let mut stream = TcpStream::connect(addr)?;
        stream.write_all(b"ping-the-backend")?;
        let mut back = [0u8; 16];
        stream.read_exact(&mut back)?;
        Ok(back.iter().map(|b| u64::from(*b)).sum())
    };
    std::hint::black_box(round_trip().unwrap_or(0))
}

/// Appends a record to the journal under its `flock` and syncs it
/// (`write` and `fdatasync`); returns the bytes written.
#[inline(never)]
pub(crate) fn commit_journal(journal: &File, seq: u64) -> u64 {
    let (record, fd) = ([b'j'; 4096], journal.as_raw_fd());
    // SAFETY: flock and fdatasync on an open descriptor this process
    // owns (called here, not through [`flock`]: the wait is this
    // function's own).
    unsafe { libc::flock(fd, libc::LOCK_EX) };
    let written = journal.write_at(&record, seq % 64 * 4096).unwrap_or(0);
    unsafe { libc::fdatasync(fd) };
    unsafe { libc::flock(fd, libc::LOCK_UN) };
    std::hint::black_box(written as u64)
}

/// Settles an account: takes the ledger's lock.
#[inline(never)]
pub(crate) fn settle_ledger(ledger: &Mutex<u64>) -> u64 {
    let balance = ledger.lock().map_or(0, |g| *g);
    std::hint::black_box(balance.wrapping_add(1))
}

/// Rebuilds the search index: [`HOLD`] of waiting and a few ms of
/// work, always run through `spawn_blocking` (never a blocker).
#[inline(never)]
pub(crate) fn rebuild_index() -> u64 {
    std::thread::sleep(HOLD);
    std::hint::black_box(runq_demo::burn(Duration::from_millis(3)))
}

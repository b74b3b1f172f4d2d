//! The Vault's RPC methods, one async fn each, as a service's own code
//! would implement the generated trait. Each calls its blocking part (in
//! [`crate::cpu`] or [`crate::io`]) on its worker, timed into its
//! [`Truth`], or, in the calm mode, through `spawn_blocking`. The index
//! rebuild always goes through `spawn_blocking`.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use runq_demo::Truth;
use tokio::sync::watch;
use tonic::Status;

use crate::io::{Journal, Ledger};
use crate::proto::{Answer, Ask};
use crate::{cpu, io, Mode};

static DERIVE: Truth = Truth::new("derive_session_key");
static MANIFEST: Truth = Truth::new("parse_manifest");
static FILTER: Truth = Truth::new("compile_route_filter");
static PROBE: Truth = Truth::new("probe_backend");
static JOURNAL: Truth = Truth::new("commit_journal");
static LEDGER: Truth = Truth::new("settle_ledger");
static RESOLVE: Truth = Truth::new("resolve_peers");
static REBUILD: Truth = Truth::new("rebuild_index");

/// What the methods measured, to print.
pub(crate) static TRUTHS: [&Truth; 8] = [
    &DERIVE, &MANIFEST, &FILTER, &PROBE, &JOURNAL, &LEDGER, &RESOLVE, &REBUILD,
];

/// The multi-thread runtime's workers (threads that unparked as one)
/// and the threads that ran `spawn_blocking` work (its blocking pool),
/// by tid.
pub(crate) static WORKERS: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());
/// See [`WORKERS`].
pub(crate) static POOL: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

/// Adds this thread to `threads`.
pub(crate) fn note(threads: &Mutex<BTreeSet<i32>>) {
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() };
    threads
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(tid);
}

/// What the handlers share.
pub(crate) struct State {
    /// Where the blocking parts run.
    pub(crate) mode: Mode,
    /// The manifest `LoadManifest` parses.
    pub(crate) manifest: String,
    /// The filter `CompileFilter` compiles.
    pub(crate) pattern: String,
    /// The echo thread `ProbeBackend` calls.
    pub(crate) backend: SocketAddr,
    /// The file `CommitJournal` appends to.
    pub(crate) journal: Journal,
    /// The lock `SettleLedger` takes.
    pub(crate) ledger: Ledger,
    /// Journal records so far.
    pub(crate) records: AtomicU64,
}

/// Runs the blocking part `block`, timed into `truth`: on this worker,
/// or through `spawn_blocking` in the calm mode.
async fn part(
    state: &State,
    truth: &'static Truth,
    block: impl FnOnce() -> u64 + Send + 'static,
) -> Result<Answer, Status> {
    let value = match state.mode {
        Mode::Blocking => truth.time(block),
        Mode::Calm => offload(truth, block).await?,
    };
    Ok(Answer {
        value,
        served_by: truth.line(),
    })
}

/// Runs `block` on the blocking pool, timed into `truth`.
async fn offload(
    truth: &'static Truth,
    block: impl FnOnce() -> u64 + Send + 'static,
) -> Result<u64, Status> {
    let work = move || {
        note(&POOL);
        truth.time(block)
    };
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| Status::internal(e.to_string()))
}

/// Waits for the holder behind `taken` to take its lock next.
async fn next_hold(taken: &watch::Receiver<u64>) {
    let mut taken = taken.clone();
    taken.borrow_and_update();
    let _ = taken.changed().await;
}

/// `DeriveKey`: a session key for the asking user.
pub(crate) async fn derive_key(state: Arc<State>, ask: Ask) -> Result<Answer, Status> {
    let key = move || cpu::derive_session_key(&ask.subject, b"vault-salt");
    part(&state, &DERIVE, key).await
}

/// `LoadManifest`: the services of the manifest, parsed from JSON.
pub(crate) async fn load_manifest(state: Arc<State>, _: Ask) -> Result<Answer, Status> {
    let s = state.clone();
    part(&state, &MANIFEST, move || cpu::parse_manifest(&s.manifest)).await
}

/// `CompileFilter`: the route filter, compiled.
pub(crate) async fn compile_filter(state: Arc<State>, _: Ask) -> Result<Answer, Status> {
    let s = state.clone();
    part(&state, &FILTER, move || {
        cpu::compile_route_filter(&s.pattern)
    })
    .await
}

/// `ProbeBackend`: a round trip to the backend.
pub(crate) async fn probe(state: Arc<State>, _: Ask) -> Result<Answer, Status> {
    let backend = state.backend;
    part(&state, &PROBE, move || io::probe_backend(backend)).await
}

/// `CommitJournal`: a record appended and synced, once the journal's
/// thread holds its lock.
pub(crate) async fn commit(state: Arc<State>, _: Ask) -> Result<Answer, Status> {
    next_hold(&state.journal.taken).await;
    let (s, seq) = (state.clone(), state.records.fetch_add(1, Ordering::Relaxed));
    part(&state, &JOURNAL, move || {
        io::commit_journal(&s.journal.file, seq)
    })
    .await
}

/// `SettleLedger`: the ledger's lock taken, once its thread holds it.
pub(crate) async fn settle(state: Arc<State>, _: Ask) -> Result<Answer, Status> {
    next_hold(&state.ledger.taken).await;
    let s = state.clone();
    part(&state, &LEDGER, move || io::settle_ledger(&s.ledger.lock)).await
}

/// `ResolvePeers`: the peers' addresses looked up.
pub(crate) async fn resolve(state: Arc<State>, _: Ask) -> Result<Answer, Status> {
    part(&state, &RESOLVE, cpu::resolve_peers).await
}

/// `RebuildIndex`: the index rebuilt on the blocking pool, in every mode.
pub(crate) async fn rebuild(_: Arc<State>, _: Ask) -> Result<Answer, Status> {
    let value = offload(&REBUILD, io::rebuild_index).await?;
    Ok(Answer {
        value,
        served_by: REBUILD.line(),
    })
}

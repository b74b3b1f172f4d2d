//! A service shaped like actix-web, built on Tokio directly (actix-web
//! itself is not a dependency of the workspace): each HTTP worker is a
//! thread of its own, named as actix-rt names its arbiters
//! (`actix-rt|system:0|arbiter:N`, `actix-rt|system` in the kernel's
//! 15-byte comm), running its own `current_thread` runtime with a
//! `LocalSet` in its `block_on` (actix-rt's `Runtime`), its connections'
//! handlers spawned onto the `LocalSet`. `web::block` is
//! `spawn_blocking` on the worker's runtime, whose blocking-pool threads
//! keep Tokio's default name, `tokio-rt-worker`; a pool thread that
//! finishes a closure wakes its worker's runtime
//! (`current_thread::Handle::wake`).
//!
//! Each worker listens on a local port of its own, and a client thread
//! per worker sends it one request at a time. A request renders a page
//! (a 25 ms sleep), compresses it (zstd, C code, about 10 ms of CPU),
//! appends to an access log (a file write and `fsync`) and runs a child
//! process (`true`). `runq-demo-actix [SECONDS] [calm|late]` prints its
//! pid once every worker serves. Modes: by default the handlers do all of
//! it on the worker (blockers); `calm` hands each part to the blocking
//! pool (`web::block`), as a well-behaved actix-web handler does, so no
//! worker ever blocks; `late` starts a fourth worker, on a thread named
//! `late-rt`, [`LATE`] after the pid is out (a runtime started late).

use std::fs::File;
use std::io::Write;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};

/// The HTTP workers (actix-web's default is one per CPU).
const WORKERS: usize = 3;

/// When `late` starts its fourth worker, after the pid is printed.
const LATE: Duration = Duration::from_secs(3);

/// How long a page takes to render.
const RENDER: Duration = Duration::from_millis(25);

/// Renders a page: a sleep, as a template engine waiting on a file would.
#[inline(never)]
fn render_page(id: u64) -> Vec<u8> {
    std::thread::sleep(RENDER);
    format!("<html>{id}</html>").repeat(64 * 1024).into_bytes()
}

/// Compresses the page with zstd (C code, on CPU).
#[inline(never)]
fn compress_body(page: &[u8]) -> usize {
    zstd::bulk::compress(page, 9).map_or(0, |c| c.len())
}

/// Appends a line to the access log and syncs it.
#[inline(never)]
fn write_access_log(log: &File, id: u64, size: usize) -> usize {
    let mut log = log;
    let _ = writeln!(log, "request {id}: {size} bytes");
    let _ = log.sync_data();
    size
}

/// Runs a child process and waits for it.
#[inline(never)]
fn run_child() -> bool {
    std::process::Command::new("true")
        .status()
        .is_ok_and(|s| s.success())
}

/// The whole of one request, as blocking code.
fn handle(log: &File, id: u64) -> usize {
    let page = render_page(id);
    let size = compress_body(&page);
    run_child();
    write_access_log(log, id, size)
}

/// Waits for the next request on `stream` (a line); false at its end.
async fn next_request(stream: &TcpStream) -> bool {
    let mut buf = [0u8; 64];
    loop {
        if stream.readable().await.is_err() {
            return false;
        }
        match stream.try_read(&mut buf) {
            Ok(0) => return false,
            Ok(n) if buf[..n].contains(&b'\n') => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => return false,
        }
    }
}

/// Writes the whole of `answer` to `stream`.
async fn answer(stream: &TcpStream, mut answer: &[u8]) -> bool {
    while !answer.is_empty() {
        if stream.writable().await.is_err() {
            return false;
        }
        match stream.try_write(answer) {
            Ok(n) => answer = &answer[n..],
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => return false,
        }
    }
    true
}

/// Serves one connection: a request per line, answered with its size.
async fn serve(stream: TcpStream, calm: bool, log: std::sync::Arc<File>) {
    let mut id = 0;
    while next_request(&stream).await {
        id += 1;
        let size = match calm {
            // web::block: the pool runs it, the worker awaits.
            true => {
                let log = log.clone();
                tokio::task::spawn_blocking(move || handle(&log, id))
                    .await
                    .unwrap_or(0)
            }
            false => handle(&log, id),
        };
        if !answer(&stream, format!("{size}\n").as_bytes()).await {
            return;
        }
    }
}

/// One HTTP worker: its own `current_thread` runtime and `LocalSet`,
/// accepting on `listener` and spawning each connection's handler.
fn worker(listener: std::net::TcpListener, calm: bool, log: std::sync::Arc<File>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current_thread runtime");
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let listener = TcpListener::from_std(listener).expect("the listener");
        while let Ok((stream, _)) = listener.accept().await {
            tokio::task::spawn_local(serve(stream, calm, log.clone()));
        }
    });
}

/// Sends requests to `addr`, one at a time, until the process exits.
fn client(addr: std::net::SocketAddr) {
    use std::io::BufRead;
    let Ok(stream) = std::net::TcpStream::connect(addr) else {
        return;
    };
    let mut reader = std::io::BufReader::new(stream.try_clone().expect("the socket"));
    let mut writer = stream;
    let mut answer = String::new();
    loop {
        answer.clear();
        let sent = writer.write_all(b"GET /\n").is_ok();
        if !sent || reader.read_line(&mut answer).unwrap_or(0) == 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Starts a worker on a thread named `name`, and its client.
fn start_worker(name: String, calm: bool, log: &std::sync::Arc<File>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a local port");
    listener
        .set_nonblocking(true)
        .expect("a non-blocking listener");
    let addr = listener.local_addr().expect("the local address");
    let log = log.clone();
    std::thread::Builder::new()
        .name(name)
        .spawn(move || worker(listener, calm, log))
        .expect("a worker thread");
    std::thread::Builder::new()
        .name("client".into())
        .spawn(move || client(addr))
        .expect("a client thread");
}

fn main() {
    let mode = std::env::args().nth(2).unwrap_or_default();
    let calm = mode == "calm";
    let lifetime = runq_demo::duration_from_args().unwrap_or(Duration::MAX);
    let dir = std::env::temp_dir().join(format!("runq-demo-actix-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let log = std::sync::Arc::new(File::create(dir.join("access.log")).expect("the access log"));
    for n in 0..WORKERS {
        start_worker(format!("actix-rt|system:0|arbiter:{n}"), calm, &log);
    }
    // The pid once every worker serves (a first request has been answered
    // by each; the clients connect right away).
    std::thread::sleep(Duration::from_millis(200));
    println!("{}", std::process::id());
    let started = std::time::Instant::now();
    if mode == "late" && lifetime > LATE {
        std::thread::sleep(LATE);
        start_worker("late-rt".into(), calm, &log);
    }
    std::thread::sleep(lifetime.saturating_sub(started.elapsed()));
    let _ = std::fs::remove_dir_all(&dir);
    std::process::exit(0);
}

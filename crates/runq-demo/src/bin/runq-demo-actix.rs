//! An actix-web 4 service, to try hud on the runtime shape actix-web
//! gives every service: each HTTP worker is an arbiter thread of its own
//! (`actix-rt|system:0|arbiter:N`, `actix-rt|system` in the kernel's
//! 15-byte comm) running its own `current_thread` Tokio runtime, the
//! system's runtime runs on the main thread, and `web::block` hands a
//! closure to the worker's blocking pool, whose threads keep Tokio's
//! default name (`tokio-runtime-worker`, comm `tokio-runtime-w`).
//!
//! One client thread per worker sends it HTTP/1.1 requests on a
//! keep-alive connection. A request renders a page (a 25 ms sleep),
//! compresses it (zstd, C code, about 10 ms of CPU), records it in a
//! SQLite database (C code: an insert, its journal written and synced)
//! and runs a child process (`true`).
//!
//! `runq-demo-actix [SECONDS] [calm|late]` prints its pid once every
//! worker has answered a request, and at the end what each part cost as
//! it measured it (`truth NAME CALLS WALL_NS CPU_NS WAIT_NS`, see
//! [`runq_demo::Truth`]). By default the handler does it all on its
//! worker (the blockers); `calm` hands the whole of it to `web::block`,
//! as a well-behaved actix-web handler does, so no worker ever blocks;
//! `late` also starts a second actix system [`LATE`] after the pid is
//! out, on a thread named `late-rt` whose one task runs the requests'
//! work itself (a runtime started late, under a name of its own).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Mutex;
use std::time::Duration;

use actix_web::{web, App, HttpResponse, HttpServer};
use runq_demo::Truth;

/// The HTTP workers (actix-web's default is one per CPU).
const WORKERS: usize = 3;

/// When `late` starts its second system, after the pid is printed.
const LATE: Duration = Duration::from_secs(3);

/// How long a page takes to render.
const RENDER: Duration = Duration::from_millis(25);

/// What each part of a request cost, as the service measured it.
static TRUTHS: [Truth; 4] = [
    Truth::new("render_page"),
    Truth::new("compress_body"),
    Truth::new("record_request"),
    Truth::new("run_child"),
];

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

/// Records the request in the SQLite database: an insert in a
/// transaction of its own, synced to disk.
#[inline(never)]
fn record_request(db: &Mutex<rusqlite::Connection>, id: u64, size: usize) -> usize {
    let db = db.lock().unwrap_or_else(|e| e.into_inner());
    let inserted = db.execute(
        "INSERT INTO requests (id, size) VALUES (?1, ?2)",
        (id as i64, size as i64),
    );
    inserted.unwrap_or(0)
}

/// Runs a child process and waits for it.
#[inline(never)]
fn run_child() -> bool {
    std::process::Command::new("true")
        .status()
        .is_ok_and(|s| s.success())
}

/// The whole of one request, as blocking code; returns the body's size.
fn handle(db: &Mutex<rusqlite::Connection>, id: u64) -> usize {
    let [render, compress, record, child] = &TRUTHS;
    let page = render.time(|| render_page(id));
    let size = compress.time(|| compress_body(&page));
    record.time(|| record_request(db, id, size));
    child.time(run_child);
    size
}

/// What every handler shares: the database, and whether it offloads.
struct Service {
    db: Mutex<rusqlite::Connection>,
    calm: bool,
    requests: std::sync::atomic::AtomicU64,
}

/// `GET /`: handles a request, on the worker or through `web::block`.
async fn index(service: web::Data<Service>) -> HttpResponse {
    use std::sync::atomic::Ordering;
    let id = service.requests.fetch_add(1, Ordering::Relaxed);
    let size = match service.calm {
        true => {
            let service = service.clone();
            web::block(move || handle(&service.db, id))
                .await
                .unwrap_or(0)
        }
        false => handle(&service.db, id),
    };
    HttpResponse::Ok().body(format!("{size}\n"))
}

/// Opens the request database, synced on every commit, in a scratch
/// directory it then removes: with no journal, SQLite needs no other file,
/// and the open database is left behind by no end of the demo (the tests
/// kill it).
fn open_database() -> rusqlite::Result<rusqlite::Connection> {
    let dir = std::env::temp_dir().join(format!("runq-demo-actix-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let db = rusqlite::Connection::open(dir.join("requests.db"));
    let _ = std::fs::remove_dir_all(&dir);
    let db = db?;
    db.execute_batch(
        "PRAGMA journal_mode = OFF;
         PRAGMA synchronous = FULL;
         CREATE TABLE requests (id INTEGER PRIMARY KEY, size INTEGER);",
    )?;
    Ok(db)
}

/// Sends requests to `addr` on one keep-alive connection, one at a time,
/// until the connection ends; sends `()` on `served` after each answer.
fn client(addr: SocketAddr, served: std::sync::mpsc::Sender<()>) -> std::io::Result<()> {
    let stream = TcpStream::connect(addr)?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    loop {
        writer.write_all(b"GET / HTTP/1.1\r\nHost: demo\r\n\r\n")?;
        let mut length = 0;
        let mut line = String::new();
        while reader.read_line(&mut line)? > 2 {
            let header = line.to_ascii_lowercase();
            if let Some(v) = header.strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
            line.clear();
        }
        if line.is_empty() {
            return Ok(());
        }
        reader.read_exact(&mut vec![0; length])?;
        let _ = served.send(());
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Starts one client thread per worker (the acceptor hands connections
/// to the workers in turn) and waits until each has been answered once.
fn start_clients(addr: SocketAddr) {
    let (served, first) = std::sync::mpsc::channel();
    for n in 0..WORKERS {
        let served = served.clone();
        std::thread::Builder::new()
            .name(format!("client-{n}"))
            .spawn(move || client(addr, served))
            .expect("a client thread");
        // The next connection only once this one is accepted and served,
        // so that each worker gets one.
        let _ = first.recv_timeout(Duration::from_secs(10));
    }
}

/// Starts the second actix system, on a thread named `late-rt`: one task
/// that does a request's work every 5 ms, blocking its runtime.
fn start_late_system(service: web::Data<Service>) {
    let late = move || {
        actix_web::rt::System::new().block_on(async move {
            for id in 0.. {
                handle(&service.db, id);
                actix_web::rt::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };
    std::thread::Builder::new()
        .name("late-rt".into())
        .spawn(late)
        .expect("the late system's thread");
}

/// Serves on the actix system of the main thread until `lifetime` ends.
fn serve(mode: &str, lifetime: Option<Duration>) -> std::io::Result<()> {
    let service = web::Data::new(Service {
        db: Mutex::new(open_database().map_err(std::io::Error::other)?),
        calm: mode == "calm",
        requests: Default::default(),
    });
    let late = (mode == "late").then(|| service.clone());
    actix_web::rt::System::new().block_on(async move {
        let server = HttpServer::new(move || {
            App::new()
                .app_data(service.clone())
                .route("/", web::get().to(index))
        })
        .workers(WORKERS)
        // SIGTERM and SIGINT end the demo, as they do the others.
        .disable_signals()
        .bind(("127.0.0.1", 0))?;
        let addr = server.addrs()[0];
        let server = server.run();
        let handle = server.handle();
        actix_web::rt::spawn(server);
        actix_web::rt::task::spawn_blocking(move || start_clients(addr)).await?;
        // The pid once every worker serves: a tool attached now sees it
        // at work.
        println!("{}", std::process::id());
        let (started, lifetime) = (std::time::Instant::now(), lifetime.unwrap_or(Duration::MAX));
        if let Some(service) = late.filter(|_| lifetime > LATE) {
            actix_web::rt::time::sleep(LATE).await;
            start_late_system(service);
        }
        actix_web::rt::time::sleep(lifetime.saturating_sub(started.elapsed())).await;
        handle.stop(false).await;
        Ok(())
    })
}

fn main() {
    let mode = std::env::args().nth(2).unwrap_or_default();
    if let Err(e) = serve(&mode, runq_demo::duration_from_args()) {
        eprintln!("runq-demo-actix: {e}");
        std::process::exit(1);
    }
    for t in &TRUTHS {
        println!("{}", t.line());
    }
}

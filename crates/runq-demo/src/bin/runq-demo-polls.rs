//! A cooperative service that times its own polls: more tasks than
//! workers, each poll 1 ms of work and a `yield_now`, and one task whose
//! every poll burns 30 ms. Each poll is timed inside the program (a
//! wrapper future), with the thread's context switches around it, so
//! `runq hud --exact-polls` can be checked against the program's own
//! figures. `runq-demo-polls [SECONDS] [WORKERS]` (default 10 s, 4
//! workers); prints its pid first (as every demo) and its poll figures
//! at the end.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// Polls longer than this are counted (hud's default threshold).
const LONG: Duration = Duration::from_millis(5);

/// One task's poll figures.
#[derive(Default)]
struct Figures {
    polls: AtomicU64,
    long_with_switch: AtomicU64,
    long_without_switch: AtomicU64,
    max_without_switch_ns: AtomicU64,
}

static COOPERATIVE: Figures = Figures::new();
static HEAVY: Figures = Figures::new();

impl Figures {
    const fn new() -> Self {
        Figures {
            polls: AtomicU64::new(0),
            long_with_switch: AtomicU64::new(0),
            long_without_switch: AtomicU64::new(0),
            max_without_switch_ns: AtomicU64::new(0),
        }
    }

    fn note(&self, took: Duration, switched: bool) {
        self.polls.fetch_add(1, Ordering::Relaxed);
        if took < LONG {
            return;
        }
        if switched {
            self.long_with_switch.fetch_add(1, Ordering::Relaxed);
        } else {
            self.long_without_switch.fetch_add(1, Ordering::Relaxed);
            let ns = took.as_nanos() as u64;
            self.max_without_switch_ns.fetch_max(ns, Ordering::Relaxed);
        }
    }

    fn line(&self, name: &str) -> String {
        format!(
            "{name}: {} polls; over {} ms: {} without a context switch (longest {:.1} ms), {} with one",
            self.polls.load(Ordering::Relaxed),
            LONG.as_millis(),
            self.long_without_switch.load(Ordering::Relaxed),
            self.max_without_switch_ns.load(Ordering::Relaxed) as f64 / 1e6,
            self.long_with_switch.load(Ordering::Relaxed),
        )
    }
}

/// The calling thread's context switches so far.
fn switches() -> i64 {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    ru.ru_nvcsw + ru.ru_nivcsw
}

/// A future whose every poll is timed into `figures`.
struct Timed<F> {
    inner: Pin<Box<F>>,
    figures: &'static Figures,
}

impl<F: Future> Future for Timed<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let (start, before) = (Instant::now(), switches());
        let out = self.inner.as_mut().poll(cx);
        self.figures.note(start.elapsed(), switches() != before);
        out
    }
}

fn timed<F: Future>(figures: &'static Figures, f: F) -> Timed<F> {
    Timed {
        inner: Box::pin(f),
        figures,
    }
}

fn main() {
    let workers: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(4);
    let secs = runq_demo::duration_from_args().unwrap_or(Duration::from_secs(10));
    let runtime = runq_demo::runtime(workers);
    runtime.block_on(async move {
        for _ in 0..workers * 2 {
            tokio::spawn(timed(&COOPERATIVE, async {
                loop {
                    runq_demo::burn(Duration::from_millis(1));
                    tokio::task::yield_now().await;
                }
            }));
        }
        tokio::spawn(timed(&HEAVY, async {
            loop {
                runq_demo::burn(Duration::from_millis(30));
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }));
        tokio::time::sleep(secs).await;
    });
    println!("{}", COOPERATIVE.line("cooperative"));
    println!("{}", HEAVY.line("30 ms"));
    runtime.shutdown_timeout(Duration::from_millis(100));
}

//! A Tokio service whose workers are all busy with short polls (1 ms of
//! CPU, then a yield): the load for measuring hud's own cost.
//! `runq-demo-busy [SECONDS] [WORKERS]` (default 8 workers).

use std::time::Duration;

fn main() {
    let workers: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(8);
    let runtime = runq_demo::runtime(workers);
    runtime.block_on(async move {
        for _ in 0..workers * 2 {
            tokio::spawn(async {
                loop {
                    runq_demo::burn(Duration::from_millis(1));
                    tokio::task::yield_now().await;
                }
            });
        }
        match runq_demo::duration_from_args() {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending::<()>().await,
        }
    });
    runtime.shutdown_timeout(Duration::from_millis(100));
}

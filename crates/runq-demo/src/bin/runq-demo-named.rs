//! A Tokio runtime whose threads have a custom name without a number
//! (`svc`), next to a larger pool of plain threads named `pool-N`, so only
//! stacks can tell which threads are the workers. One task sleeps in
//! `demo_thread_sleep` every 100 ms, another hands `twin_thread_sleep` to the
//! blocking pool. `runq-demo-named [SECONDS]`.

use std::time::Duration;

fn main() {
    for i in 0..6 {
        std::thread::Builder::new()
            .name(format!("pool-{i}"))
            .spawn(|| loop {
                std::thread::sleep(Duration::from_millis(3));
            })
            .expect("spawn a pool thread");
    }
    let runtime = runq_demo::named_runtime(2, Some("svc"));
    runtime.block_on(async {
        tokio::spawn(async {
            loop {
                runq_demo::demo_thread_sleep();
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        tokio::spawn(async {
            loop {
                // The blocking pool's threads are named `svc` too.
                let _ = tokio::task::spawn_blocking(runq_demo::twin_thread_sleep).await;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        match runq_demo::duration_from_args() {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending::<()>().await,
        }
    });
    runtime.shutdown_timeout(Duration::from_millis(100));
}

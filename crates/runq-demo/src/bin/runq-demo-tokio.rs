//! A Tokio service with four known blockers in task code and their
//! spawn_blocking twins, each run every 100 ms.
//! `runq-demo-tokio [SECONDS] [calm]`: with `calm`, only the twins run
//! (every blocking part through `spawn_blocking`, nothing blocks a worker).

use std::sync::Arc;
use std::time::Duration;

use runq_demo::*;

const PERIOD: Duration = Duration::from_millis(100);

fn main() {
    let calm = std::env::args().nth(2).as_deref() == Some("calm");
    let runtime = runq_demo::runtime(2);
    runtime.block_on(async move {
        let mutex = contended_mutex();
        let twin_fifo = Arc::new(make_fifo("twin").expect("fifo"));
        if !calm {
            spawn_blockers(mutex.clone());
        }
        let (m, f) = (mutex.clone(), twin_fifo.clone());
        tokio::spawn(async move {
            loop {
                let (m2, f2) = (m.clone(), f.clone());
                let _ = tokio::task::spawn_blocking(move || {
                    twin_cpu_spin();
                    twin_thread_sleep();
                    twin_file_read(&f2);
                    twin_mutex_lock(&m2)
                })
                .await;
                tokio::time::sleep(PERIOD).await;
            }
        });
        match duration_from_args() {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending::<()>().await,
        }
    });
    runtime.shutdown_timeout(Duration::from_millis(100));
}

/// The four blockers in task code, each every [`PERIOD`].
fn spawn_blockers(mutex: Arc<std::sync::Mutex<u64>>) {
    let fifo = Arc::new(make_fifo("task").expect("fifo"));
    tokio::spawn(async {
        loop {
            demo_cpu_spin();
            tokio::time::sleep(PERIOD).await;
        }
    });
    tokio::spawn(async {
        loop {
            demo_thread_sleep();
            tokio::time::sleep(PERIOD).await;
        }
    });
    tokio::spawn(async move {
        loop {
            demo_file_read(&fifo);
            tokio::time::sleep(PERIOD).await;
        }
    });
    tokio::spawn(async move {
        loop {
            demo_mutex_lock(&mutex);
            tokio::time::sleep(PERIOD).await;
        }
    });
}

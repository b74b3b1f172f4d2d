//! The control: a Tokio service whose tasks only await timers and do a
//! few microseconds of work; it never blocks a worker. `runq-demo-control
//! [SECONDS]`.

use std::time::Duration;

fn main() {
    let runtime = runq_demo::runtime(2);
    runtime.block_on(async {
        for i in 0..8u64 {
            tokio::spawn(async move {
                let mut acc = i;
                loop {
                    for k in 0..200 {
                        acc = std::hint::black_box(acc.wrapping_mul(31).wrapping_add(k));
                    }
                    tokio::time::sleep(Duration::from_millis(5 + i)).await;
                }
            });
        }
        match runq_demo::duration_from_args() {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending::<()>().await,
        }
    });
}

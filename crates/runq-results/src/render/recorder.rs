//! The per-task recorder's account of a failed check's worker, as the
//! sentence under its cause: what the worker did, how long each part held
//! its CPU while it waited, and the tasks that held the CPUs it waited
//! on (with their share of the samples under sampled fidelity).

use runq_common::units::fmt_ms_grouped as ms;
use runq_workload::{HeldParts, NamedHolder, RecorderAccount};

/// `recorder: worker 3497 (spinners) ran 288 ms and waited 2,746 ms
/// runnable (118 waits, ...; woken 1x, most by runq[3494]); while it
/// waited its CPU went to ...; the tasks that held the CPUs it waited on,
/// while workers waited there: runq[3502] (pingpong) 1,390 ms, ...`.
pub fn recorder_sentence(acc: &RecorderAccount) -> String {
    let w = &acc.record;
    let mut text = head(acc);
    // The wakers' pairs and the task's own count are kept apart (and a
    // wakeup the task's count missed still names its waker): the larger.
    let woken = w.wakeups.max(w.wakers.iter().map(|k| k.wakeups).sum());
    match w.wakers.first() {
        Some(k) => text.push_str(&format!("; woken {woken}x, most by {}[{}])", k.comm, k.pid)),
        None => text.push(')'),
    }
    let held = held_parts(&acc.held);
    if !held.is_empty() {
        text.push_str(&format!(
            "; while it waited its CPU went to {}",
            held.join(", ")
        ));
    }
    if !acc.holders.is_empty() {
        let top: Vec<String> = acc.holders.iter().map(|h| holder(acc, h)).collect();
        text.push_str(&format!(
            "; the tasks that held the CPUs it waited on, while workers waited there: {}",
            top.join(", ")
        ));
    }
    text
}

/// `its own group or cgroup 199 ms`, ... for each part that held it.
fn held_parts(p: &HeldParts) -> Vec<String> {
    [
        ("its own group or cgroup", p.own_ns),
        ("the run's other groups", p.run_ns),
        ("runq's own threads", p.runq_ns),
        ("tasks outside the run", p.outside_ns),
    ]
    .into_iter()
    .filter(|(_, ns)| *ns > 0)
    .map(|(label, ns)| format!("{label} {}", ms(ns)))
    .collect()
}

/// `runq[3502] (pingpong) 1,390 ms`, with its share of the samples under
/// sampled fidelity.
fn holder(acc: &RecorderAccount, h: &NamedHolder) -> String {
    let whose = match h.whose.as_str() {
        "outside" => "outside the run",
        "runq" => "runq's own",
        group => group,
    };
    format!(
        "{}[{}] ({whose}) {}{}",
        h.comm,
        h.pid,
        ms(h.held_ns),
        sample_share(acc, h.samples)
    )
}

/// The opening of the sentence: the worker's run, its waits and
/// migrations, from schedstat under sampled fidelity; the clause is left
/// open for the wakers.
fn head(acc: &RecorderAccount) -> String {
    let (w, group) = (&acc.record, &acc.group);
    if let Some(basis) = &w.sampled {
        format!(
            "recorder (sampled: {} samples of other tasks on CPU {}): worker {} ({group}) ran {} \
             and waited {} runnable (schedstat; {} migrations",
            basis.samples,
            cpu_list(&basis.cpus),
            w.worker,
            ms(w.run_ns),
            ms(w.wait_ns),
            w.migrations,
        )
    } else if w.waits == 0 {
        format!(
            "recorder: worker {} ({group}) ran {} and never waited runnable ({} migrations",
            w.worker,
            ms(w.run_ns),
            w.migrations
        )
    } else {
        format!(
            "recorder: worker {} ({group}) ran {} and waited {} runnable ({} waits, the \
             longest {} on CPU {}; {} migrations",
            w.worker,
            ms(w.run_ns),
            ms(w.wait_ns),
            w.waits,
            ms(w.max_wait_ns),
            w.max_wait_cpu,
            w.migrations,
        )
    }
}

/// Under sampled fidelity, a holder's share of the samples with its 95%
/// margin (` (88% ± 2% of the samples)`); empty when exact.
fn sample_share(acc: &RecorderAccount, samples: u64) -> String {
    let Some(basis) = acc.record.sampled.as_ref().filter(|b| b.samples > 0) else {
        return String::new();
    };
    let p = samples as f64 / basis.samples as f64;
    format!(
        " ({:.0}% ± {:.0}% of the samples)",
        p * 100.0,
        basis.margin(p) * 100.0
    )
}

/// CPUs as `0`, `0,1` or `0-3`.
fn cpu_list(cpus: &[u32]) -> String {
    match (cpus.first(), cpus.last()) {
        (Some(a), Some(b)) if cpus.len() > 2 && (b - a) as usize + 1 == cpus.len() => {
            format!("{a}-{b}")
        }
        _ => cpus
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(","),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runq_kernel::task_record::{SampledBasis, TaskRecord, Waker};

    fn account() -> RecorderAccount {
        RecorderAccount {
            record: TaskRecord {
                worker: 3497,
                run_ns: 288_000_000,
                wait_ns: 2_746_000_000,
                waits: 118,
                max_wait_ns: 1_803_000_000,
                max_wait_cpu: 1,
                migrations: 3,
                wakeups: 1,
                wakers: vec![Waker {
                    pid: 3494,
                    comm: "runq".into(),
                    wakeups: 1,
                }],
                ..TaskRecord::default()
            },
            group: "spinners".into(),
            held: HeldParts {
                own_ns: 199_000_000,
                run_ns: 2_484_000_000,
                runq_ns: 0,
                outside_ns: 64_000_000,
            },
            holders: vec![
                NamedHolder {
                    comm: "runq".into(),
                    pid: 3502,
                    whose: "pingpong".into(),
                    held_ns: 1_390_000_000,
                    samples: 0,
                },
                NamedHolder {
                    comm: "qemu-system-x86".into(),
                    pid: 3504,
                    whose: "outside".into(),
                    held_ns: 28_000_000,
                    samples: 0,
                },
            ],
        }
    }

    #[test]
    fn the_exact_account_reads_as_one_sentence() {
        assert_eq!(
            recorder_sentence(&account()),
            "recorder: worker 3497 (spinners) ran 288 ms and waited 2,746 ms runnable (118 \
             waits, the longest 1,803 ms on CPU 1; 3 migrations; woken 1x, most by runq[3494]); \
             while it waited its CPU went to its own group or cgroup 199 ms, the run's other \
             groups 2,484 ms, tasks outside the run 64 ms; the tasks that held the CPUs it \
             waited on, while workers waited there: runq[3502] (pingpong) 1,390 ms, \
             qemu-system-x86[3504] (outside the run) 28 ms"
        );
    }

    #[test]
    fn a_sampled_account_gives_each_holder_its_share_of_the_samples() {
        let mut acc = account();
        acc.record.sampled = Some(SampledBasis {
            samples: 400,
            cpus: vec![0, 1, 2, 3],
            ..SampledBasis::default()
        });
        acc.holders[0].samples = 352;
        let text = recorder_sentence(&acc);
        assert!(
            text.starts_with(
                "recorder (sampled: 400 samples of other tasks on CPU 0-3): worker 3497 \
                 (spinners) ran 288 ms and waited 2,746 ms runnable (schedstat; 3 migrations"
            ),
            "{text}"
        );
        assert!(
            text.contains("runq[3502] (pingpong) 1,390 ms (88% ± 3% of the samples)"),
            "{text}"
        );
        assert_eq!(cpu_list(&[0, 2]), "0,2");
    }
}

use super::*;

/// Groups one snapshot's threads, its comm row names decided over itself.
fn group_threads<'a>(
    threads: &'a [ThreadState],
    g: &Grouping,
) -> BTreeMap<String, Vec<&'a ThreadState>> {
    let names = view_names(g, [threads]);
    group_threads_named(threads, g, names.as_ref())
}

#[test]
fn normalization_examples() {
    let cases = [
        ("tokio-worker-0", "tokio-worker-{N}"),
        ("tokio-worker-17", "tokio-worker-{N}"),
        (
            "kworker/0:1H-events_highpri",
            "kworker/{N}:{N}H-events_highpri",
        ),
        (
            "kworker/1:0H-events_highpri",
            "kworker/{N}:{N}H-events_highpri",
        ),
        ("kworker/u8:3", "kworker/u{N}:{N}"),
        ("bash", "bash"),
        ("", ""),
    ];
    for (input, want) in cases {
        assert_eq!(normalize_thread_name(input), want, "{input}");
    }
}

fn thread(comm: &str, pcomm: &str, cgroup: &str) -> ThreadState {
    ThreadState {
        comm: comm.into(),
        pcomm: pcomm.into(),
        cgroup: cgroup.into(),
        ..Default::default()
    }
}

#[test]
fn buckets_collapse_and_singletons_keep_literal_names() {
    let ts = vec![
        thread("tokio-worker-0", "a", "/"),
        thread("tokio-worker-1", "b", "/"),
        thread("kworker/0:1H-events_highpri", "k", "/"),
        thread("kworker/1:0H-events_highpri", "k", "/"),
        thread("db-7", "c", "/"),
    ];
    let g = group_threads(
        &ts,
        &Grouping {
            by: GroupBy::Comm,
            ..Default::default()
        },
    );
    let keys: Vec<&str> = g.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "db-7",
            "kworker/{N}:{N}H-events_highpri",
            "tokio-worker-{N}"
        ]
    );
    assert_eq!(g["tokio-worker-{N}"].len(), 2);
    let exact = group_threads(
        &ts,
        &Grouping {
            by: GroupBy::CommExact,
            ..Default::default()
        },
    );
    assert_eq!(exact.len(), 5);
    let no_norm = group_threads(
        &ts,
        &Grouping {
            by: GroupBy::Comm,
            normalize: false,
            flatten: vec![],
        },
    );
    assert_eq!(no_norm.len(), 5);
    assert_eq!(group_threads(&ts, &Grouping::default()).len(), 4);
}

#[test]
fn globs_validate_and_flatten() {
    assert!(Glob::new("/a/[bc").is_err());
    assert!(Glob::new("/a/b]").is_err());
    assert!(Glob::new("").is_err());
    let g = vec![
        Glob::new("/kubepods/*/pod-*/container").unwrap(),
        Glob::new("/system.slice/*.scope").unwrap(),
    ];
    assert_eq!(
        flatten_cgroup("/kubepods/burstable/pod-1234/container", &g),
        "/kubepods/*/pod-*/container"
    );
    assert_eq!(
        flatten_cgroup("/system.slice/session-4.scope/sub", &g),
        "/system.slice/*.scope/sub"
    );
    assert_eq!(
        flatten_cgroup("/system.slice/a/b.scope", &g),
        "/system.slice/a/b.scope"
    );
    assert_eq!(flatten_cgroup("/other", &g), "/other");
    let c = Glob::new("/x/[!0-9]?").unwrap();
    assert!(c.match_prefix("/x/ab").is_some());
    assert!(c.match_prefix("/x/1b").is_none());
}

#[test]
fn comm_names_are_decided_over_every_side() {
    let a = [thread("worker-3", "svc", "/"), thread("db-1", "db", "/")];
    let b = [thread("worker-7", "svc", "/"), thread("db-1", "db", "/")];
    let names = CommNames::decide([&a[..], &b[..]]);
    assert_eq!(names.key("worker-3"), "worker-{N}");
    assert_eq!(names.key("worker-7"), "worker-{N}");
    assert_eq!(names.key("db-1"), "db-1", "one literal on both sides");
    // A pool growing from one thread to two keeps its row name.
    let grown = vec![thread("pool-0", "p", "/"), thread("pool-1", "p", "/")];
    let one = vec![thread("pool-0", "p", "/")];
    let names = CommNames::decide([&one[..], &grown[..]]);
    let g = Grouping {
        by: GroupBy::Comm,
        ..Default::default()
    };
    let before = group_threads_named(&one, &g, Some(&names));
    let after = group_threads_named(&grown, &g, Some(&names));
    assert_eq!(before.keys().collect::<Vec<_>>(), ["pool-{N}"]);
    assert_eq!(after.keys().collect::<Vec<_>>(), ["pool-{N}"]);
    assert_eq!(after["pool-{N}"].len(), 2);
    // Without a view-wide decision a lone thread keeps its literal name.
    assert_eq!(
        group_threads(&one, &g).keys().collect::<Vec<_>>(),
        ["pool-0"]
    );
    assert!(view_names(&Grouping::default(), [&one[..]]).is_none());
}

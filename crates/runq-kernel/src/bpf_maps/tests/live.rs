//! As root: maps of this process, created with BTF and filled, found
//! through `/proc`, held, dumped and rendered.

use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use super::builder::{BtfBuilder, SIGNED};
use crate::bpf_maps::sys::{self, MapSpec};
use crate::bpf_maps::{hold_maps_of, map_ids_of, render, HeldMap, MapDump};

/// The possible CPUs, in per-CPU slot order.
fn possible_cpus() -> Vec<usize> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/possible").unwrap();
    crate::cpulist::parse_cpu_list(&text)
        .unwrap()
        .into_iter()
        .collect()
}

/// The BTF the maps are typed with, loaded; and its type ids
/// (`unsigned int`, `unsigned long long`, `struct task_info`, `.bss`).
fn load_btf() -> (OwnedFd, [u32; 4]) {
    let mut b = BtfBuilder::new();
    let int = b.int("int", 4, SIGNED);
    let u32_ = b.int("unsigned int", 4, 0);
    let u64_ = b.int("unsigned long long", 8, 0);
    let ch = b.int("char", 1, SIGNED);
    let comm = b.array(ch, u32_, 16);
    let state = b.enumeration("task_state", 4, false, &[("RUNNING", 0), ("SLEEPING", 1)]);
    let task = b.structure(
        "task_info",
        28,
        false,
        &[
            ("pid", int, 0, 0),
            ("comm", comm, 32, 0),
            ("nr", u32_, 160, 0),
            ("state", state, 192, 0),
        ],
    );
    let counter = b.var("counter", u64_);
    let flag = b.var("flag", int);
    let bss = b.datasec(".bss", 16, &[(counter, 0, 8), (flag, 8, 4)]);
    let fd = sys::btf_load(&b.build()).expect("BTF_LOAD of the test's BTF");
    (fd, [u32_, u64_, task, bss])
}

/// A `struct task_info` value.
fn task(pid: i32, comm: &str, nr: u32, state: u32) -> Vec<u8> {
    let mut v = pid.to_ne_bytes().to_vec();
    let mut name = [0u8; 16];
    name[..comm.len()].copy_from_slice(comm.as_bytes());
    v.extend(name);
    v.extend(nr.to_ne_bytes());
    v.extend(state.to_ne_bytes());
    v
}

/// Sets `key` of map `fd` to `value`.
fn set(fd: &OwnedFd, key: u32, value: &[u8]) {
    // SAFETY: every map here has 4-byte keys, and each value passed is
    // one full copy of its map's value (per-CPU ones sized per CPU).
    unsafe { sys::update(fd.as_fd(), &key.to_ne_bytes(), value) }.expect("update");
}

/// Creates the maps: a hash, a per-CPU array, a `.bss`, an array with no
/// BTF and a ring buffer; filled.
fn create_maps(btf: &OwnedFd, [u32_, u64_, task_ty, bss]: [u32; 4]) -> Vec<OwnedFd> {
    let spec = |map_type, value_size, max_entries, name, types: Option<(u32, u32)>| MapSpec {
        map_type,
        key_size: if map_type == 27 { 0 } else { 4 },
        value_size,
        max_entries,
        name,
        btf: types.map(|(k, v)| (btf.as_fd(), k, v)),
    };
    let specs = [
        spec(1, 28, 8, "runq_tasks", Some((u32_, task_ty))),
        spec(6, 8, 4, "runq_percpu", Some((u32_, u64_))),
        spec(2, 16, 1, "runq.bss", Some((0, bss))),
        spec(2, 4, 16, "runq_raw", None),
        spec(27, 0, 4096, "runq_events", None),
    ];
    let fds: Vec<OwnedFd> = specs
        .iter()
        .map(|s| sys::map_create(s).expect(s.name))
        .collect();
    set(&fds[0], 1, &task(42, "worker", 7, 0));
    set(&fds[0], 2, &task(43, "idle", 0, 1));
    let cpus = possible_cpus().len();
    let mut percpu = vec![0u8; 8 * cpus];
    percpu[8 * (cpus - 1)..].copy_from_slice(&9u64.to_ne_bytes());
    set(&fds[1], 1, &percpu);
    let all: Vec<u8> = (0..cpus).flat_map(|_| 3u64.to_ne_bytes()).collect();
    set(&fds[1], 3, &all);
    let mut bss_value = 5u64.to_ne_bytes().to_vec();
    bss_value.extend((-1i32).to_ne_bytes());
    bss_value.extend([0; 4]);
    set(&fds[2], 0, &bss_value);
    set(&fds[3], 2, &0xdead_beefu32.to_ne_bytes());
    fds
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn dumps_this_process_maps_through_btf() {
    let (btf, types) = load_btf();
    let fds = create_maps(&btf, types);
    let ids: Vec<u32> = fds
        .iter()
        .map(|fd| sys::map_info(fd.as_fd()).unwrap().id)
        .collect();
    let me = std::process::id();
    let listed = map_ids_of(Path::new("/proc"), me).unwrap();
    assert!(
        ids.iter().all(|id| listed.contains(id)),
        "{ids:?} in {listed:?}"
    );
    let (held, errors) = hold_maps_of(Path::new("/proc"), me);
    assert!(errors.is_empty(), "{errors:?}");
    // The held maps outlive the descriptors that created them.
    drop(fds);
    drop(btf);
    let mine: Vec<&HeldMap> = ids
        .iter()
        .map(|id| held.iter().find(|m| m.info().id == *id).expect("held"))
        .collect();
    let info = mine[0].info();
    assert_eq!((info.name.as_str(), info.map_type), ("runq_tasks", 1));
    assert_eq!(
        (info.key_size, info.value_size, info.max_entries),
        (4, 28, 8)
    );
    assert_eq!(
        (info.btf_key_type_id, info.btf_value_type_id),
        (types[0], types[2])
    );
    let dumps: Vec<MapDump> = mine.iter().map(|m| m.dump(100)).collect();
    eprintln!("{}", render(&dumps));
    assert_dumps(&dumps);
    let cut = mine[0].dump(1);
    assert_eq!((cut.shown, cut.total), (1, 2));
    assert!(render(&[cut]).ends_with("\n  ... 1 more\n"));
    let err = HeldMap::open(u32::MAX).unwrap_err().to_string();
    assert!(err.contains("no such map"), "{err}");
}

/// What each of the maps' dumps says.
fn assert_dumps(dumps: &[MapDump]) {
    let mut tasks = dumps[0].entries.clone();
    tasks.sort();
    assert_eq!(
        tasks,
        [
            r#"1: {pid: 42, comm: "worker", nr: 7, state: RUNNING}"#,
            r#"2: {pid: 43, comm: "idle", nr: 0, state: SLEEPING}"#,
        ]
    );
    assert_eq!((dumps[0].kind.as_str(), dumps[0].total), ("hash", 2));
    let cpus = possible_cpus();
    let all: Vec<String> = cpus.iter().map(|c| format!("cpu{c}: 3")).collect();
    let last = cpus[cpus.len() - 1];
    assert_eq!(
        dumps[1].entries,
        [
            format!("1: {{cpu{last}: 9}}"),
            format!("3: {{{}}}", all.join(", "))
        ]
    );
    assert_eq!(
        (dumps[1].kind.as_str(), dumps[1].total),
        ("percpu_array", 4)
    );
    assert_eq!(dumps[2].entries, ["0: {counter: 5, flag: -1}"]);
    assert_eq!(dumps[3].entries, ["2: ef be ad de"]);
    assert_eq!((dumps[3].shown, dumps[3].total), (1, 16));
    assert_eq!(dumps[4].kind, "ringbuf");
    let why = dumps[4].unreadable.as_deref().unwrap_or_default();
    assert!(why.contains("ring buffer"), "{why}");
    assert!(
        dumps.iter().take(4).all(|d| d.unreadable.is_none()),
        "{dumps:?}"
    );
}

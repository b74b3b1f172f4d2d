//! The fdinfo listing on fixture trees, and the rendering's layout.

use std::fs;
use std::path::Path;

use crate::bpf_maps::dump::kind_name;
use crate::bpf_maps::{fdinfo_maps, hold_maps_of, map_ids_of, render, MapDump};

/// Writes `<dir>/<pid>/fdinfo/<name>` files.
fn fixture(dir: &Path, pid: u32, files: &[(&str, String)]) {
    let fdinfo = dir.join(pid.to_string()).join("fdinfo");
    fs::create_dir_all(&fdinfo).unwrap();
    for (name, text) in files {
        fs::write(fdinfo.join(name), text).unwrap();
    }
}

/// A map descriptor's fdinfo as kernel 6.x writes it.
fn map_fdinfo(id: u32, map_type: u32) -> String {
    format!(
        "pos:\t0\nflags:\t02000002\nmnt_id:\t15\nino:\t1057\nmap_type:\t{map_type}\n\
         key_size:\t4\nvalue_size:\t8\nmax_entries:\t64\nmap_flags:\t0x0\n\
         map_extra:\t0x0\nmemlock:\t4096\nmap_id:\t{id}\nfrozen:\t0\n"
    )
}

#[test]
fn map_ids_come_from_fdinfo_deduplicated_and_sorted() {
    let dir = tempfile::tempdir().unwrap();
    let plain = "pos:\t0\nflags:\t02\nmnt_id:\t1\nino:\t5\n".to_string();
    let prog = "pos:\t0\nflags:\t02000002\nprog_type:\t1\nprog_jited:\t1\nprog_id:\t30\n";
    let link = "pos:\t0\nflags:\t02000000\nlink_type:\tstruct_ops\nlink_id:\t4\nmap_id:\t9\n";
    fixture(
        dir.path(),
        123,
        &[
            ("0", plain),
            ("3", map_fdinfo(12, 1)),
            ("4", map_fdinfo(7, 2)),
            ("5", map_fdinfo(12, 1)),
            ("6", prog.to_string()),
            ("7", link.to_string()),
            ("8", map_fdinfo(9, 26)),
        ],
    );
    assert_eq!(map_ids_of(dir.path(), 123).unwrap(), vec![7, 9, 12]);
    let typed: Vec<_> = fdinfo_maps(dir.path(), 123).unwrap().into_iter().collect();
    assert_eq!(typed, vec![(7, Some(2)), (9, Some(26)), (12, Some(1))]);
    fixture(dir.path(), 124, &[("0", "pos:\t0\n".to_string())]);
    assert_eq!(map_ids_of(dir.path(), 124).unwrap(), Vec::<u32>::new());
    let err = map_ids_of(dir.path(), 999).unwrap_err();
    assert!(err.to_string().contains("999/fdinfo"), "{err}");
}

#[test]
fn holding_skips_struct_ops_and_says_what_failed() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path(), 1, &[("3", map_fdinfo(9, 26))]);
    let (held, errors) = hold_maps_of(dir.path(), 1);
    assert!(held.is_empty() && errors.is_empty(), "{errors:?}");
    fixture(dir.path(), 2, &[("3", map_fdinfo(u32::MAX, 1))]);
    let (held, errors) = hold_maps_of(dir.path(), 2);
    assert!(held.is_empty());
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].starts_with("opening BPF map 4294967295: "),
        "{errors:?}"
    );
    let (held, errors) = hold_maps_of(dir.path(), 3);
    assert!(held.is_empty());
    assert!(
        errors[0].starts_with("listing the BPF maps of process 3: "),
        "{errors:?}"
    );
}

#[test]
fn render_layout() {
    let dump = |id, name: &str, kind: &str, max, entries: &[&str], total| MapDump {
        id,
        name: name.to_string(),
        kind: kind.to_string(),
        max_entries: max,
        entries: entries.iter().map(|e| e.to_string()).collect(),
        shown: entries.len(),
        total,
        unreadable: None,
    };
    let mut ringbuf = dump(14, "events", "ringbuf", 4096, &[], 0);
    ringbuf.unreadable = Some("a ring buffer is not read by key".to_string());
    let mut stopped = dump(15, "", "lru_hash", 8, &["7: 0"], 1);
    stopped.unreadable = Some("reading its entries: Operation not permitted".to_string());
    let dumps = [
        dump(
            12,
            "tasks",
            "hash",
            1024,
            &["1: {pid: 42}", "2: {pid: 43}"],
            5,
        ),
        dump(13, "counts", "percpu_array", 4, &["1: {cpu1: 9}"], 4),
        ringbuf,
        stopped,
        dump(16, "empty", "hash", 2, &[], 0),
    ];
    let want = "\
map 12 tasks (hash, 1024 max): 5 entries
  1: {pid: 42}
  2: {pid: 43}
  ... 3 more
map 13 counts (percpu_array, 4 max): 4 entries
  1: {cpu1: 9}
  ... 3 more (all-zero values are not listed)
map 14 events (ringbuf, 4096 max): not readable: a ring buffer is not read by key
map 15 (lru_hash, 8 max): 1 entry
  7: 0
  stopped: reading its entries: Operation not permitted
map 16 empty (hash, 2 max): 0 entries
";
    assert_eq!(render(&dumps), want);
    assert_eq!(render(&[]), "");
}

#[test]
fn kind_names_are_bpftools() {
    assert_eq!(kind_name(1), "hash");
    assert_eq!(kind_name(6), "percpu_array");
    assert_eq!(kind_name(27), "ringbuf");
    assert_eq!(kind_name(33), "arena");
    assert_eq!(kind_name(99), "type 99");
}

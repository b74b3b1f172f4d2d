//! ARCHITECTURE.md's crate table held against the workspace: every crate
//! under `crates/` has a row, every row a crate, and each row's
//! "depends on" names exactly the runq crates its `Cargo.toml` lists under
//! `[dependencies]`.

use std::collections::BTreeSet;
use std::path::Path;

/// The crate table's rows: each crate with the runq crates its "depends
/// on" column names.
fn table_rows(doc: &str) -> Vec<(String, BTreeSet<String>)> {
    let table = doc
        .split("\n## ")
        .find(|s| s.starts_with("Crates\n"))
        .expect("a `## Crates` section");
    table
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split(" | ").collect();
            let name = cells[0].trim().trim_matches('`').to_string();
            let deps = cells.last().map_or("", |c| c.trim());
            (name, runq_names(deps.split(", ")))
        })
        .collect()
}

/// The runq crates among `names`.
fn runq_names<'a>(names: impl Iterator<Item = &'a str>) -> BTreeSet<String> {
    names
        .map(str::trim)
        .filter(|n| *n == "runq" || n.starts_with("runq-"))
        .map(String::from)
        .collect()
}

/// The runq crates a `Cargo.toml` lists under `[dependencies]`.
fn manifest_deps(toml: &str) -> BTreeSet<String> {
    let section = toml
        .split("\n[")
        .find(|s| s.starts_with("dependencies]"))
        .unwrap_or("");
    let keys = section.lines().skip(1).filter_map(|l| {
        let key = l.split(['=', '.', ' ']).next()?;
        (!key.is_empty() && !key.starts_with('#')).then_some(key)
    });
    runq_names(keys)
}

#[test]
fn the_crate_table_matches_the_manifests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let doc = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let rows = table_rows(&doc);
    let mut crates: Vec<String> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("Cargo.toml").exists())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    crates.sort();
    let mut listed: Vec<String> = rows.iter().map(|(n, _)| n.clone()).collect();
    listed.sort();
    assert_eq!(listed, crates, "ARCHITECTURE.md's crate table");
    for (name, deps) in rows {
        let toml = std::fs::read_to_string(root.join("crates").join(&name).join("Cargo.toml"));
        assert_eq!(
            deps,
            manifest_deps(&toml.unwrap()),
            "ARCHITECTURE.md: what `{name}` depends on"
        );
    }
}

#[test]
fn manifests_and_rows_are_read_as_written() {
    let toml = "[package]\nname = \"x\"\n\n[dependencies]\nrunq-kernel.workspace = true\n\
                runq-ctprof = { workspace = true }\nlibc = \"0.2\"\n\n[dev-dependencies]\n\
                runq-testkit.workspace = true\n";
    let want: BTreeSet<String> = ["runq-ctprof", "runq-kernel"].map(String::from).into();
    assert_eq!(manifest_deps(toml), want);
    let doc = "# x\n\n## Crates\n\n| crate | holds | depends on |\n|---|---|---|\n\
               | `runq-x` | a \\| b | runq-kernel, runq-ctprof, libc |\n\n## Next\n| `no` | - | - |\n";
    let rows = table_rows(doc);
    assert_eq!(rows, vec![("runq-x".to_string(), want)]);
}

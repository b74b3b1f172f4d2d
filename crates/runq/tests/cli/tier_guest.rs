//! One guest that runs many `runq run`s, for the VM tier and the sched_ext
//! tier: virtme-ng boots a kernel under single-threaded TCG, a guest
//! script runs each listed run from a copy of runq in the guest's memory
//! (its JSON, stderr, exit code and cost left in the shared directory),
//! then lists any runq cgroup or process left behind and the topology
//! its sysfs shows (checked against the one asked for). Software emulation
//! is no scheduler's speed, so a run is judged only on what does not
//! depend on it: a verdict reached (or a skip with its reason), the setup
//! applied, every worker ran and reported.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use runq_vm::guest_topology::GuestTopology;
use runq_vm::topology::Topology;
use serde_json::Value;

use crate::common::runq;

/// The guest: cgroup v2 with the controllers systemd would give, then
/// each run of `$O/runs` (`KEY<TAB>ARGS`, ARGS shell-quoted) with the
/// shell-quoted `$O/args` added to every one. Each run may take 5 minutes
/// (exit 124 past them: one stalled run must not take the whole guest).
const GUEST: &str = r#"#!/bin/sh
O="$1"; R="$2"; T="timeout -k 10 300"; A=$(cat "$O/args")
# runq from the guest's memory, as `runq run --vm` does: from the 9p root
# every exec faulted the image in page by page (7.6 s for --version).
D=$(mktemp -d /tmp/runq-bin.XXXXXX) && cp "$R" "$D/runq" && R="$D/runq"
( @TOPOLOGY@ ) > "$O/topology" 2>/dev/null
for c in cpu cpuset; do echo "+$c" > /sys/fs/cgroup/cgroup.subtree_control; done
# One run: its JSON, stderr, exit code, and its wall seconds with the
# guest's free memory, slab and per-CPU memory after it (kB), to see a
# guest that degrades run by run.
one() {
  k="$1"; t0=$(date +%s)
  eval "NO_COLOR=1 $T \"\$R\" run $2 $A --json" > "$O/$k.json" 2> "$O/$k.err"; echo $? > "$O/$k.rc"
  m=$(awk '/^(MemAvailable|Slab|Percpu):/ { printf "%s ", $2 }' /proc/meminfo)
  echo "$(( $(date +%s) - t0 )) $m" > "$O/$k.t"
}
TAB=$(printf '\t')
while IFS="$TAB" read -r k args; do one "$k" "$args"; done < "$O/runs"
find /sys/fs/cgroup/runq -mindepth 1 -type d > "$O/leftover-cgroups"
for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = runq ] && echo "${p#/proc/}"; done > "$O/runq-procs"
: > "$O/done"
"#;

/// One guest: the kernel it boots, its vCPUs and NUMA nodes, what every
/// run gets, and how long it may take.
pub(crate) struct TierGuest {
    /// What its lines start with (`vm-tier`, `sched_ext-tier`).
    pub label: String,
    /// The kernel image.
    pub kernel: PathBuf,
    /// Its vCPUs, caches and NUMA nodes (`2n2c2t`, a preset's name).
    pub topology: String,
    /// Arguments every run gets (a scheduler, say).
    pub run_args: Vec<String>,
    /// How long the guest may take before it is killed.
    pub limit: Duration,
}

/// One run of a guest: its key (the name of its files) and its arguments.
pub(crate) struct TierRun {
    /// `S-<scenario>`, `T-<type>`, a fault's name.
    pub key: String,
    /// The arguments after `runq run`.
    pub args: Vec<String>,
}

impl TierRun {
    /// A catalog scenario's run.
    pub fn scenario(name: &str) -> TierRun {
        TierRun {
            key: format!("S-{name}"),
            args: vec![name.to_string()],
        }
    }

    /// A work type's run, one second long.
    pub fn work_type(name: &str) -> TierRun {
        TierRun {
            key: format!("T-{name}"),
            args: ["--work-type", name, "--duration", "1s"]
                .map(String::from)
                .to_vec(),
        }
    }
}

/// What a guest left: its shared directory (kept while this lives).
pub(crate) struct TierOutcome {
    dir: tempfile::TempDir,
    /// Whether the guest finished every run.
    pub finished: bool,
    /// The topology it was asked for.
    topology: Topology,
}

impl TierOutcome {
    /// A run's file with extension `ext`.
    pub fn read(&self, key: &str, ext: &str) -> std::io::Result<String> {
        std::fs::read_to_string(self.dir.path().join(format!("{key}.{ext}")))
    }

    /// Whether `key` ran (its exit code was written).
    pub fn ran(&self, key: &str) -> bool {
        self.dir.path().join(format!("{key}.rc")).exists()
    }

    /// A run's exit code (-1 when it left none).
    pub fn rc(&self, key: &str) -> i32 {
        self.read(key, "rc")
            .map_or(-1, |t| t.trim().parse().unwrap_or(-1))
    }

    /// Where the guest's sysfs differed from the topology asked for
    /// (`None`: it matched).
    pub fn topology_mismatch(&self) -> Option<String> {
        let seen = std::fs::read_to_string(self.dir.path().join("topology")).unwrap_or_default();
        match GuestTopology::parse(&seen) {
            Some(g) => g.mismatch(&self.topology),
            None => Some(format!("the guest wrote no topology: {seen:?}")),
        }
    }

    /// What the guest left behind: runq cgroups and runq processes, and a
    /// topology other than the one asked for.
    pub fn leftovers(&self) -> Vec<String> {
        let mut problems: Vec<String> = self.topology_mismatch().into_iter().collect();
        for (file, what) in [
            ("leftover-cgroups", "runq cgroups left"),
            ("runq-procs", "runq processes left"),
        ] {
            let left = std::fs::read_to_string(self.dir.path().join(file)).unwrap_or_default();
            if !left.trim().is_empty() {
                let left: Vec<&str> = left.split_whitespace().collect();
                problems.push(format!("{what}: {}", left.join(" ")));
            }
        }
        problems
    }
}

/// The names a listing (`runq ARGS --json`) gives under `key`.
pub(crate) fn names(args: &[&str], key: &str) -> Vec<String> {
    let out = runq().args(args).arg("--json").output().expect("run runq");
    let v: Value = serde_json::from_slice(&out.stdout).expect("listing JSON");
    v[key]
        .as_array()
        .expect("a listing")
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect()
}

/// A word for the guest script: quoted for sh.
fn sh_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

impl TierGuest {
    /// Boots the guest, runs `runs` in it, and returns what it left; when
    /// it did not finish, prints its kernel's complaints.
    pub fn run(&self, runs: &[TierRun]) -> TierOutcome {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let quoted = |args: &[String]| args.iter().map(|a| sh_quote(a)).collect::<Vec<_>>();
        let lines: Vec<String> = runs
            .iter()
            .map(|r| format!("{}\t{}", r.key, quoted(&r.args).join(" ")))
            .collect();
        std::fs::write(d.join("runs"), lines.join("\n") + "\n").unwrap();
        std::fs::write(d.join("args"), quoted(&self.run_args).join(" ")).unwrap();
        let script = GUEST.replace("@TOPOLOGY@", runq_vm::guest_topology::SCRIPT);
        std::fs::write(d.join("guest.sh"), script).unwrap();
        let t0 = Instant::now();
        self.boot(d);
        let finished = d.join("done").exists();
        if !finished {
            self.print_complaints(d);
        }
        let outcome = TierOutcome {
            finished,
            topology: self.topology(),
            dir,
        };
        println!(
            "{}: {} runs in {:.0} s",
            self.label,
            runs.len(),
            t0.elapsed().as_secs_f64()
        );
        outcome
    }

    /// Boots the guest on `d` and waits for it for at most the limit,
    /// then kills it. TCG runs single-threaded: every run attaches the
    /// recorder's tracepoints (and a scheduler flips static keys), and
    /// multi-threaded TCG races with the kernel patching its own code for
    /// them (a guest locked up on its 48th run, in `exc_int3`). The
    /// kernel's console goes to `d/console`.
    fn boot(&self, d: &Path) {
        let t0 = Instant::now();
        let console = std::fs::File::create(d.join("console")).expect("console file");
        let args = self
            .topology()
            .vng_args(2048, true)
            .expect("2 GiB fit the topology");
        // One --qemu-opts: the topology's CPU model with the accelerator.
        let (qemu, args): (Vec<String>, Vec<String>) = args
            .into_iter()
            .partition(|a| a.starts_with("--qemu-opts="));
        let mut qemu: Vec<&str> = qemu.iter().map(|a| &a["--qemu-opts=".len()..]).collect();
        qemu.push("-accel tcg,thread=single");
        let mut vm = Command::new("vng")
            .args(["-v", "--disable-kvm", "-r"])
            .arg(&self.kernel)
            .args(args)
            .arg(format!("--qemu-opts={}", qemu.join(" ")))
            .arg(format!("--rwdir={}", d.display()))
            .args(["--", "/bin/sh"])
            .arg(d.join("guest.sh"))
            .arg(d)
            .arg(env!("CARGO_BIN_EXE_runq"))
            .stdin(Stdio::null())
            .stdout(console)
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("a tier guest needs virtme-ng's vng (pip install virtme-ng)");
        while vm.try_wait().unwrap().is_none() {
            if t0.elapsed() > self.limit {
                // SAFETY: killing the process group this test made (vng, qemu).
                unsafe { libc::kill(-(vm.id() as i32), libc::SIGKILL) };
                let _ = vm.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// The guest's topology, parsed.
    fn topology(&self) -> Topology {
        Topology::parse(&self.topology).expect("a tier guest's topology")
    }

    /// The guest's console lines that say its kernel was in trouble.
    fn print_complaints(&self, d: &Path) {
        let label = &self.label;
        println!("{label}: the guest did not finish; its console, its kernel's complaints:");
        let console = std::fs::read_to_string(d.join("console")).unwrap_or_default();
        let complaints = console.lines().filter(|l| {
            ["BUG", "Oops", "stall", "lockup", "panic", "blocked for"]
                .iter()
                .any(|w| l.contains(w))
        });
        for line in complaints.take(20) {
            println!("{label}:   {line}");
        }
    }
}

/// What is wrong with one run, judged without timings; its line.
pub(crate) fn judge(out: &TierOutcome, key: &str) -> (String, Option<String>) {
    let rc = out.rc(key);
    let cost = cost_of_run(&out.read(key, "t").unwrap_or_default());
    let err = out.read(key, "err").unwrap_or_default();
    if rc == 77 {
        let why = err.lines().last().unwrap_or_default().to_string();
        let bad = (!why.contains("skipped")).then(|| format!("{key}: exit 77 without a reason"));
        return (format!("{key}: SKIP ({why})"), bad);
    }
    let doc = match out
        .read(key, "json")
        .map(|t| serde_json::from_str::<Value>(&t))
    {
        Ok(Ok(doc)) => doc,
        _ => {
            let bad = format!("{key}: exit {rc}, no JSON: {err}");
            return (format!("{key}: exit {rc} ({cost})"), Some(bad));
        }
    };
    let failed = runq_vm::matrix::failed_checks(&doc);
    let mut line = format!(
        "{key}: {} exit {rc} failed: {} ({})",
        doc["verdict"],
        failed.join(" "),
        cost
    );
    // A FAIL's cause, as runq's first line gives it.
    if let Some(first) = err.lines().next().filter(|_| !failed.is_empty()) {
        line.push_str(&format!("\n    {first}"));
    }
    let mut bad = Vec::new();
    if !matches!(rc, 0 | 1 | 75) || !doc["run_error"].is_null() {
        let first = err.lines().next().unwrap_or_default();
        bad.push(format!(
            "exit {rc}, run_error {}: {first}",
            doc["run_error"]
        ));
    }
    bad.extend(
        failed
            .iter()
            .filter(|f| f.starts_with("setup_applied") || f.starts_with("scheduler_alive"))
            .cloned(),
    );
    bad.extend(workers_that_did_not_run(&doc));
    (
        line,
        (!bad.is_empty()).then(|| format!("{key}: {}", bad.join("; "))),
    )
}

/// Workers that did not start or did not report, and a run with no work
/// unit at all.
fn workers_that_did_not_run(doc: &Value) -> Vec<String> {
    let reports = doc["reports"].as_array().into_iter().flatten();
    let mut bad: Vec<String> = reports
        .clone()
        .filter(|r| !r["exit_info"].is_null() || !r["start_error"].is_null())
        .map(|r| {
            format!(
                "worker {} did not run: {} {}",
                r["tid"], r["exit_info"], r["start_error"]
            )
        })
        .collect();
    let units: u64 = reports.filter_map(|r| r["work_units"].as_u64()).sum();
    if units == 0 {
        bad.push("no work unit at all".into());
    }
    bad
}

/// A run's wall time and the guest's memory after it, from the guest's
/// `<seconds> <MemAvailable> <Slab> <Percpu>` line (kB).
fn cost_of_run(line: &str) -> String {
    let n: Vec<u64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    match n[..] {
        [secs, avail, slab, percpu] => format!(
            "{secs} s; guest memory available {} MiB, slab {} MiB, per-cpu {} MiB",
            avail / 1024,
            slab / 1024,
            percpu / 1024
        ),
        _ => "no timing".to_string(),
    }
}

/// Judges every run of `runs` that ran, prints its line under `label`,
/// and returns the problems, with what the guest left behind.
pub(crate) fn judge_all(label: &str, out: &TierOutcome, runs: &[TierRun]) -> Vec<String> {
    let mut problems = Vec::new();
    if !out.finished {
        problems
            .push("the guest did not finish its runs (the lines above are those it did)".into());
    }
    for run in runs.iter().filter(|r| out.ran(&r.key)) {
        let (line, bad) = judge(out, &run.key);
        println!("{label}: {line}");
        problems.extend(bad);
    }
    problems.extend(out.leftovers());
    problems
}

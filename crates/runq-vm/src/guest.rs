//! The guest's side of `runq run --vm`: the same runq binary with the
//! same arguments, less the VM's own flags, its files written into the
//! run's shared directory, started by a small shell script.

use std::path::{Path, PathBuf};

/// Flags of the host side only, which take a value (the binary's
/// `VmArgs` has these and [`VM_SWITCHES`]; a test there holds them equal).
pub const VM_VALUE_FLAGS: [&str; 9] = [
    "--kernel",
    "--vm-disk",
    "--jobs",
    "--shard",
    "--topology",
    "--memory",
    "--vm-boot-timeout",
    "--vm-accel",
    "--vm-tcg-threads",
];

/// Flags of the host side only, which take no value.
pub const VM_SWITCHES: [&str; 3] = ["--vm", "--vm-matrix", "--vm-net"];

/// The guest's command line and where its files land.
#[derive(Debug, PartialEq, Eq)]
pub struct GuestArgs {
    /// runq's arguments in the guest (after the program name).
    pub args: Vec<String>,
    /// The host path the user gave `--output`, written from the guest's.
    pub output: Option<PathBuf>,
    /// The host path the user gave `--junit`, copied from the guest's.
    pub junit: Option<PathBuf>,
    /// The host directory the user gave `--evidence-dir`, where the
    /// guest's evidence files are copied (the host's temporary directory
    /// when `None`).
    pub evidence: Option<PathBuf>,
}

/// The guest's file for `--output`, in the shared directory `dir`.
pub fn guest_output(dir: &Path) -> PathBuf {
    dir.join("output.json")
}

/// The guest's `--evidence-dir`, in the shared directory `dir`.
pub fn guest_evidence(dir: &Path) -> PathBuf {
    dir.join("evidence")
}

/// The guest's file for `--junit`, in the shared directory `dir`.
pub fn guest_junit(dir: &Path) -> PathBuf {
    dir.join("junit.xml")
}

/// Rewrites the host's arguments (after the program name) for the guest:
/// drops `--vm` and the VM's flags, and points `--output`/`-o`,
/// `--junit` and `--evidence-dir` (given or not) into `dir`.
pub fn guest_args(host: &[String], dir: &Path) -> GuestArgs {
    let mut out = GuestArgs {
        args: Vec::new(),
        output: None,
        junit: None,
        evidence: None,
    };
    let mut it = host.iter();
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let (flag, inline) = match flag
            .strip_prefix("-o")
            .filter(|v| !v.is_empty() && !flag.starts_with("--"))
        {
            Some(v) => ("-o", Some(v.to_string())),
            None => (flag, inline),
        };
        let mut value = || inline.clone().or_else(|| it.next().cloned());
        match flag {
            f if VM_SWITCHES.contains(&f) => {}
            f if VM_VALUE_FLAGS.contains(&f) => {
                value();
            }
            "--output" | "-o" => {
                out.output = value().map(PathBuf::from);
                out.args.push("--output".into());
                out.args.push(guest_output(dir).display().to_string());
            }
            "--junit" => {
                out.junit = value().map(PathBuf::from);
                out.args.push("--junit".into());
                out.args.push(guest_junit(dir).display().to_string());
            }
            "--evidence-dir" => out.evidence = value().map(PathBuf::from),
            _ => out.args.push(arg.clone()),
        }
    }
    out.args.push("--evidence-dir".into());
    out.args.push(guest_evidence(dir).display().to_string());
    out
}

/// Shell lines that copy the binary `$R` names into the guest's /tmp (in
/// memory under virtme-ng) and point `$R` at the copy, keeping the name
/// `runq`. Run from the host's root, shared over 9p, every exec of runq
/// faulted its image in page by page: under TCG, `runq --version` took
/// 7.6 s and a 1 s run 6.5-9.3 s, against 2.3 s from the copy. Where the
/// copy fails (no room), the shared binary runs.
const COPY_RUNQ: &str =
    "D=$(mktemp -d /tmp/runq-bin.XXXXXX) && cp \"$R\" \"$D/runq\" && R=\"$D/runq\"";

/// The serial number of `--vm-disk`'s virtio block device, by which the
/// guest finds it among its disks.
pub const DISK_SERIAL: &str = "runq-disk";

/// Where the guest mounts `--vm-disk`'s file system; the run's TMPDIR, so
/// that the I/O work types' files live on the virtio block device.
pub const DISK_MOUNT: &str = "/tmp/runq-disk";

/// Shell lines that find `--vm-disk`'s device by its serial, format it
/// ext4, mount it at [`DISK_MOUNT`] and make it TMPDIR; on failure the
/// run ends with exit 3 and the reason in its stderr, runq not started.
fn disk_setup(d: &dyn Fn(&str) -> String) -> String {
    format!(
        "dev=; for b in /sys/block/vd*; do [ \"$(cat \"$b/serial\" 2>/dev/null)\" = {DISK_SERIAL} ] \
         && dev=/dev/${{b##*/}}; done\n\
         if [ -z \"$dev\" ] || ! mkdir -p {DISK_MOUNT} || ! mkfs.ext4 -q -F \"$dev\" > {log} 2>&1 \
         || ! mount -t ext4 \"$dev\" {DISK_MOUNT} >> {log} 2>&1; then\n\
         echo \"runq: --vm-disk: the guest could not format and mount its virtio disk \
         ${{dev:-(none with serial {DISK_SERIAL})}}: $(tail -n 1 {log} 2>/dev/null)\" > {stderr}\n\
         echo 3 > {rc}; exit 0\n\
         fi\n\
         export TMPDIR={DISK_MOUNT}\n\
         echo \"$dev\" > {disk}\n",
        log = d("disk.log"),
        stderr = d("stderr"),
        rc = d("rc"),
        disk = d("disk"),
    )
}

/// The MAC address of `--vm-net`'s near device; the far one's last octet
/// is one more (virtme-ng counts up from the address it is given).
pub const NET_MAC: &str = "52:54:00:72:71:00";

/// Shell lines that find `--vm-net`'s two virtio-net devices by MAC,
/// move the far one into [`runq_kernel::netns::NIC_PEER_NETNS`] and give
/// both their addresses; on failure the run ends with exit 3 and the
/// reason in its stderr, runq not started.
fn net_setup(d: &dyn Fn(&str) -> String) -> String {
    use runq_kernel::netns::{NIC_LOCAL_ADDR, NIC_PEER_ADDR, NIC_PEER_NETNS};
    let far_mac = format!("{}01", &NET_MAC[..NET_MAC.len() - 2]);
    format!(
        "near=; far=; for n in /sys/class/net/*; do case \"$(cat \"$n/address\")\" in \
         {NET_MAC}) near=${{n##*/}};; {far_mac}) far=${{n##*/}};; esac; done\n\
         if [ -z \"$near\" ] || [ -z \"$far\" ] || ! {{ ip netns add {NIC_PEER_NETNS} \
         && ip link set \"$far\" netns {NIC_PEER_NETNS} && ip addr add {NIC_LOCAL_ADDR}/24 dev \"$near\" \
         && ip link set \"$near\" up && ip -n {NIC_PEER_NETNS} addr add {NIC_PEER_ADDR}/24 dev \"$far\" \
         && ip -n {NIC_PEER_NETNS} link set \"$far\" up && ip -n {NIC_PEER_NETNS} link set lo up; }} \
         > {log} 2>&1; then\n\
         echo \"runq: --vm-net: the guest could not set up its two virtio-net devices \
         (near ${{near:-none}}, far ${{far:-none}}): $(tail -n 1 {log} 2>/dev/null)\" > {stderr}\n\
         echo 3 > {rc}; exit 0\n\
         fi\n\
         echo \"$near $far\" > {net}\n",
        log = d("net.log"),
        stderr = d("stderr"),
        rc = d("rc"),
        net = d("net"),
    )
}

/// What the guest sets up before runq starts.
#[derive(Debug, Clone, Copy, Default)]
pub struct Setup {
    /// `--vm-disk`: format and mount the scratch disk as TMPDIR.
    pub disk: bool,
    /// `--vm-net`: the NIC pair, its far device in its own namespace.
    pub net: bool,
}

/// Quotes `s` for a POSIX shell.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// runq's settings from the environment that the guest's runq takes
/// from the host's.
const FORWARDED_ENV: [&str; 2] = ["RUNQ_RECORDER_TRACEPOINTS", "RUNQ_CLOCK"];

/// One runq of a guest's script: its arguments (after the program name),
/// the prefix of its files in the shared directory (`stdout`, `stderr`,
/// `rc` after it), and how long it may take (`timeout`; `None`: as long
/// as the VM runs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestCommand {
    /// runq's arguments.
    pub args: Vec<String>,
    /// What its files' names start with (`""` for a lone run).
    pub files: String,
    /// Its time limit, whole seconds.
    pub limit_s: Option<u64>,
}

impl GuestCommand {
    /// The lone run of `runq run --vm`: files `stdout`, `stderr`, `rc`.
    pub fn lone(args: &[String]) -> Self {
        GuestCommand {
            args: args.to_vec(),
            files: String::new(),
            limit_s: None,
        }
    }
}

/// The script the guest runs: marks its start (the host times the boot
/// by it), lists the topology it sees (`topology`, checked by the host:
/// [`crate::guest_topology`]), gives the root's children the cpu and
/// cpuset controllers as systemd does on a production cgroup v2 host,
/// copies runq into the guest's memory (`COPY_RUNQ`), and runs each of
/// `runs` in turn in the host's working directory with the host's
/// [`FORWARDED_ENV`] settings, leaving its stdout, stderr and exit code
/// in `dir`; first sets up `--vm-disk` (`disk_setup`) and `--vm-net`
/// (`net_setup`) as `setup` asks. With several runs, an `rc` of 0 at the
/// end says the script got through them all.
pub fn script(dir: &Path, runq: &Path, cwd: &Path, runs: &[GuestCommand], setup: Setup) -> String {
    let d = |name: &str| quote(&dir.join(name).display().to_string());
    let env: String = FORWARDED_ENV
        .iter()
        .filter_map(|k| Some(format!("{k}={} ", quote(&std::env::var(k).ok()?))))
        .collect();
    let mut disk = if setup.disk {
        disk_setup(&d)
    } else {
        String::new()
    };
    if setup.net {
        disk.push_str(&net_setup(&d));
    }
    let mut body: String = runs.iter().map(|r| run_line(r, &env, &d)).collect();
    if runs.len() != 1 || !runs[0].files.is_empty() {
        body.push_str(&format!("echo 0 > {}\n", d("rc")));
    }
    format!(
        "#!/bin/sh\n\
         # runq run --vm: the guest side of the run\n\
         : > {started}\n\
         ( {topology_script} ) > {topology} 2>/dev/null\n\
         for c in cpu cpuset; do echo \"+$c\" > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; done\n\
         {disk}\
         R={runq}\n\
         {COPY_RUNQ}\n\
         cd {cwd} || exit 1\n\
         {body}",
        started = d("started"),
        topology_script = crate::guest_topology::SCRIPT,
        topology = d("topology"),
        cwd = quote(&cwd.display().to_string()),
        runq = quote(&runq.display().to_string()),
    )
}

/// The lines of one run: runq under its time limit, its outputs and its
/// exit code into its files.
fn run_line(run: &GuestCommand, env: &str, d: &dyn Fn(&str) -> String) -> String {
    let argv: Vec<String> = run.args.iter().map(|a| quote(a)).collect();
    let limit = run
        .limit_s
        .map_or(String::new(), |s| format!("timeout -k 10 {s} "));
    let file = |name: &str| d(&format!("{}{name}", run.files));
    format!(
        "NO_COLOR=1 {env}{limit}\"$R\" {argv} > {stdout} 2> {stderr}\n\
         echo $? > {rc}\n",
        argv = argv.join(" "),
        stdout = file("stdout"),
        stderr = file("stderr"),
        rc = file("rc"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn vm_flags_go_and_outputs_point_into_the_shared_dir() {
        let dir = Path::new("/tmp/runq-vm-1");
        let got = guest_args(
            &args(
                "-v run oversubscribed --vm --kernel /boot/k --topology=2n2c2t --memory 2G \
                 --json -o out.json --junit=j.xml --vm-accel tcg --duration 1s",
            ),
            dir,
        );
        assert_eq!(
            got.args,
            args(
                "-v run oversubscribed --json --output /tmp/runq-vm-1/output.json --junit \
                 /tmp/runq-vm-1/junit.xml --duration 1s --evidence-dir /tmp/runq-vm-1/evidence"
            )
        );
        assert_eq!(got.output, Some(PathBuf::from("out.json")));
        assert_eq!(got.junit, Some(PathBuf::from("j.xml")));
        assert_eq!(got.evidence, None);
        let ev = guest_args(&args("run --evidence-dir=/srv/ev --vm"), dir);
        assert_eq!(ev.evidence, Some(PathBuf::from("/srv/ev")));
        assert_eq!(ev.args, args("run --evidence-dir /tmp/runq-vm-1/evidence"));
        let short = guest_args(&args("run -oresult.json --vm"), dir);
        assert_eq!(short.output, Some(PathBuf::from("result.json")));
        assert_eq!(short.args[1], "--output");
    }

    #[test]
    fn the_script_quotes_every_argument() {
        let s = script(
            Path::new("/tmp/d"),
            Path::new("/usr/bin/runq"),
            Path::new("/home/a b"),
            &[GuestCommand::lone(&args("run --param it's=1"))],
            Setup::default(),
        );
        assert!(s.contains("cd '/home/a b'"), "{s}");
        assert!(s.contains("R='/usr/bin/runq'\n"), "{s}");
        assert!(
            s.contains(r#""$R" 'run' '--param' 'it'\''s=1' > '/tmp/d/stdout'"#),
            "{s}"
        );
        assert!(s.contains("echo $? > '/tmp/d/rc'"), "{s}");
        assert!(s.find("/tmp/d/started") < s.find("/usr/bin/runq"));
        assert!(s.find(COPY_RUNQ) < s.find("NO_COLOR"));
        assert!(!s.contains("mkfs") && !s.contains("netns"), "{s}");
    }

    #[test]
    fn several_runs_each_leave_their_own_files_under_their_limit() {
        let runs: Vec<GuestCommand> = ["steady", "mixed_workloads"]
            .iter()
            .enumerate()
            .map(|(i, s)| GuestCommand {
                args: args(&format!("run {s} --json")),
                files: format!("{i}."),
                limit_s: Some(90),
            })
            .collect();
        let s = script(
            Path::new("/tmp/d"),
            Path::new("/usr/bin/runq"),
            Path::new("/"),
            &runs,
            Setup::default(),
        );
        assert!(
            s.contains(
                r#"timeout -k 10 90 "$R" 'run' 'steady' '--json' > '/tmp/d/0.stdout' 2> '/tmp/d/0.stderr'"#
            ),
            "{s}"
        );
        assert!(s.contains("echo $? > '/tmp/d/1.rc'"), "{s}");
        assert!(
            s.find("/tmp/d/1.rc") < s.find("echo 0 > '/tmp/d/rc'"),
            "the script's own rc comes last: {s}"
        );
    }

    #[test]
    fn the_nic_pair_is_found_by_mac_and_split_across_namespaces() {
        let s = script(
            Path::new("/tmp/d"),
            Path::new("/usr/bin/runq"),
            Path::new("/"),
            &[GuestCommand::lone(&args("run --vm-net"))],
            Setup {
                disk: false,
                net: true,
            },
        );
        assert!(s.contains("52:54:00:72:71:00) near="), "{s}");
        assert!(s.contains("52:54:00:72:71:01) far="), "{s}");
        assert!(s.contains("ip link set \"$far\" netns runq-peer"), "{s}");
        assert!(s.contains("ip addr add 10.77.0.1/24"), "{s}");
        assert!(s.contains("addr add 10.77.0.2/24"), "{s}");
        assert!(s.find("/tmp/d/net'") < s.find("NO_COLOR"), "{s}");
        let dropped = guest_args(&args("run --vm --vm-net"), Path::new("/tmp/d"));
        assert_eq!(dropped.args, args("run --evidence-dir /tmp/d/evidence"));
    }

    #[test]
    fn a_disk_is_found_by_serial_formatted_mounted_and_made_tmpdir() {
        let s = script(
            Path::new("/tmp/d"),
            Path::new("/usr/bin/runq"),
            Path::new("/"),
            &[GuestCommand::lone(&args("run"))],
            Setup {
                disk: true,
                net: false,
            },
        );
        assert!(s.contains("= runq-disk ]"), "{s}");
        assert!(
            s.contains("mkfs.ext4 -q -F \"$dev\" > '/tmp/d/disk.log'"),
            "{s}"
        );
        assert!(s.contains("echo 3 > '/tmp/d/rc'; exit 0"), "{s}");
        assert!(
            s.find("export TMPDIR=/tmp/runq-disk") < s.find("NO_COLOR"),
            "{s}"
        );
    }
}

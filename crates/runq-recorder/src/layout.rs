//! The record layout of the classic tracepoints whose comms moved:
//! `sched_migrate_task` and `sched_process_fork` carry their comms as
//! `char[16]` on older kernels (6.1, 6.12) and as `__data_loc` strings on
//! newer ones (6.18), which moves every field after them. The object has
//! a program for each layout; the tracepoint's `format` file says which
//! one reads the right offsets.

use std::path::Path;

/// The program of the classic object that reads `tracepoint`'s records
/// on this kernel, given `prog`, the one for the newer layout.
pub(crate) fn classic_program(
    prog: &'static str,
    tracepoint: &str,
    tracefs: &Path,
) -> Result<&'static str, String> {
    let fixed = match prog {
        "recorder_migrate" => "recorder_migrate_fixed",
        "recorder_fork" => "recorder_fork_fixed",
        _ => return Ok(prog),
    };
    let path = tracefs.join(format!("events/sched/{tracepoint}/format"));
    let format =
        std::fs::read_to_string(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    Ok(if comms_are_inline(&format) {
        fixed
    } else {
        prog
    })
}

/// True when the record's comm fields are `char[16]` arrays in place
/// (rather than `__data_loc` strings).
fn comms_are_inline(format: &str) -> bool {
    format
        .lines()
        .filter(|l| l.trim_start().starts_with("field:"))
        .any(|l| l.contains("char ") && l.contains("comm[16];"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// sched_process_fork's format on Linux 6.1 (Debian bookworm).
    const FORK_6_1: &str = "name: sched_process_fork
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:char parent_comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t parent_pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:char child_comm[16];\toffset:28;\tsize:16;\tsigned:0;
\tfield:pid_t child_pid;\toffset:44;\tsize:4;\tsigned:1;

print fmt: \"comm=%s pid=%d child_comm=%s child_pid=%d\", REC->parent_comm, REC->parent_pid, REC->child_comm, REC->child_pid
";

    /// sched_process_fork's format on Linux 6.18.
    const FORK_6_18: &str = "name: sched_process_fork
ID: 366
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:__data_loc char[] parent_comm;\toffset:8;\tsize:4;\tsigned:0;
\tfield:pid_t parent_pid;\toffset:12;\tsize:4;\tsigned:1;
\tfield:__data_loc char[] child_comm;\toffset:16;\tsize:4;\tsigned:0;
\tfield:pid_t child_pid;\toffset:20;\tsize:4;\tsigned:1;

print fmt: \"comm=%s pid=%d child_comm=%s child_pid=%d\", __get_str(parent_comm), REC->parent_pid, __get_str(child_comm), REC->child_pid
";

    #[test]
    fn inline_comms_are_told_from_data_loc_ones() {
        assert!(comms_are_inline(FORK_6_1));
        assert!(!comms_are_inline(FORK_6_18));
    }

    #[test]
    fn each_layout_gets_its_program() {
        let dir = tempfile::tempdir().unwrap();
        let write = |tp: &str, text: &str| {
            let d = dir.path().join("events/sched").join(tp);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("format"), text).unwrap();
        };
        write("sched_process_fork", FORK_6_1);
        let got = classic_program("recorder_fork", "sched_process_fork", dir.path());
        assert_eq!(got.unwrap(), "recorder_fork_fixed");
        write("sched_process_fork", FORK_6_18);
        let got = classic_program("recorder_fork", "sched_process_fork", dir.path());
        assert_eq!(got.unwrap(), "recorder_fork");
        let got = classic_program("recorder_switch", "sched_switch", dir.path());
        assert_eq!(got.unwrap(), "recorder_switch", "one layout, no file read");
        let err = classic_program("recorder_migrate", "sched_migrate_task", dir.path());
        assert!(err.unwrap_err().contains("sched_migrate_task/format"));
    }
}

/* SPDX-License-Identifier: GPL-2.0 */
/* The records of the classic tracepoints runq's BPF programs read (see
 * /sys/kernel/tracing/events/<category>/<name>/format), one home for
 * every program: runq-hud's hud.bpf.c and runqwait.bpf.c and
 * runq-recorder's recorder.bpf.c include it (their build.sh adds this
 * directory to the include path), and each source's recorded hash covers
 * this file too, so a change here makes their committed objects stale.
 * `common` is the 8 bytes every record starts with (type, flags,
 * preempt count, pid). */
#ifndef RUNQ_TRACEPOINTS_H
#define RUNQ_TRACEPOINTS_H

#include <linux/types.h>

/* sched/sched_switch */
struct switch_args {
	__u64 common;
	char prev_comm[16];
	__s32 prev_pid;
	__s32 prev_prio;
	__s64 prev_state;
	char next_comm[16];
	__s32 next_pid;
	__s32 next_prio;
};

/* sched/sched_wakeup and sched/sched_wakeup_new */
struct wakeup_args {
	__u64 common;
	char comm[16];
	__s32 pid;
	__s32 prio;
	__s32 target_cpu;
};

/* sched_migrate_task and sched_process_fork carry their comms as
 * __data_loc strings on newer kernels (6.18 has them) and as char[16] on
 * older ones (6.1, 6.12), which moves the pids after them: a struct for
 * each layout (the _fixed ones), and user space attaches the program
 * that reads the one the tracepoint's format file shows. */

/* sched/sched_migrate_task, comm as __data_loc */
struct migrate_args {
	__u64 common;
	__u32 comm_loc;
	__s32 pid;
	__s32 prio;
	__s32 orig_cpu;
	__s32 dest_cpu;
};

/* sched/sched_migrate_task, comm in place */
struct migrate_args_fixed {
	__u64 common;
	char comm[16];
	__s32 pid;
	__s32 prio;
	__s32 orig_cpu;
	__s32 dest_cpu;
};

/* sched/sched_process_fork, comms as __data_loc */
struct fork_args {
	__u64 common;
	__u32 parent_comm_loc;
	__s32 parent_pid;
	__u32 child_comm_loc;
	__s32 child_pid;
};

/* sched/sched_process_fork, comms in place */
struct fork_args_fixed {
	__u64 common;
	char parent_comm[16];
	__s32 parent_pid;
	char child_comm[16];
	__s32 child_pid;
};

/* raw_syscalls/sys_exit */
struct sys_exit_args {
	__u64 common;
	__s64 id;
	__s64 ret;
};

#endif

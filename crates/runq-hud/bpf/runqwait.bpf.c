// SPDX-License-Identifier: GPL-2.0
// The longest time any runnable task waited for a CPU, host-wide, as
// runqslower measures it, with classic tracepoints only:
//
// sched_wakeup, sched_wakeup_new: the task became runnable; note when.
// sched_switch, prev still runnable (preempted, prev_state & 0xff == 0; a
//   preemption reads 0x100, "R+"): it is back on a run queue; note when.
//   prev went to sleep: forget its note (a missed wakeup then loses one
//   wait instead of inventing one from a stale note).
// sched_switch, next: it waited from its note to now; keep the longest
//   (who, where, when), count the waits and sum them, forget the note.
//
// Pid 0 (the idle tasks) is skipped. Figures are kept per CPU (the CPU the
// task got; no atomics) and only for waits that end at or after CONFIG[0]
// (user space sets it when the run starts; 0: not started, nothing kept).

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <stddef.h>
#include "tracepoints.h" /* the tracepoint records (runq-kernel/bpf) */

/* The figures of one CPU; user space takes the longest and the sums. */
struct wait_stats {
	__u64 max_ns;    /* the longest wait */
	__u64 max_at_ns; /* when it ended, bpf_ktime_get_ns */
	__u32 max_pid;   /* the task (thread id) that waited */
	__u32 max_cpu;   /* the CPU it then got */
	char max_comm[16];
	__u64 count;     /* waits that ended */
	__u64 sum_ns;    /* their total */
	__u64 untracked; /* notes the ENQUEUED map had no room for */
};

/* The layout user space reads (crates/runq-hud/src/hostwait.rs mirrors it). */
_Static_assert(offsetof(struct wait_stats, max_pid) == 16, "wait_stats.max_pid");
_Static_assert(offsetof(struct wait_stats, max_comm) == 24, "wait_stats.max_comm");
_Static_assert(offsetof(struct wait_stats, count) == 40, "wait_stats.count");
_Static_assert(sizeof(struct wait_stats) == 64, "wait_stats size");

/* When each runnable task was enqueued. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);
	__type(value, __u64);
} ENQUEUED SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct wait_stats);
} STATS SEC(".maps");

/* [0]: waits that end before this bpf_ktime_get_ns are not kept. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} CONFIG SEC(".maps");

static __always_inline struct wait_stats *stats(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&STATS, &zero);
}

static __always_inline void enqueued(__u32 pid)
{
	if (!pid)
		return;
	__u64 now = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&ENQUEUED, &pid, &now, BPF_ANY)) {
		struct wait_stats *s = stats();
		if (s)
			s->untracked++;
	}
}

static __always_inline void switched_in(struct switch_args *ctx, __u32 pid)
{
	__u64 *since = bpf_map_lookup_elem(&ENQUEUED, &pid);
	if (!since)
		return;
	__u64 now = bpf_ktime_get_ns();
	__u64 waited = now - *since;
	bpf_map_delete_elem(&ENQUEUED, &pid);
	__u32 zero = 0;
	__u64 *start = bpf_map_lookup_elem(&CONFIG, &zero);
	if (!start || !*start || now < *start)
		return;
	struct wait_stats *s = stats();
	if (!s)
		return;
	s->count++;
	s->sum_ns += waited;
	if (waited > s->max_ns) {
		s->max_ns = waited;
		s->max_at_ns = now;
		s->max_pid = pid;
		s->max_cpu = bpf_get_smp_processor_id();
		__builtin_memcpy(s->max_comm, ctx->next_comm, sizeof(s->max_comm));
	}
}

SEC("tracepoint/sched/sched_wakeup")
int runqwait_wakeup(struct wakeup_args *ctx)
{
	enqueued((__u32)ctx->pid);
	return 0;
}

SEC("tracepoint/sched/sched_wakeup_new")
int runqwait_wakeup_new(struct wakeup_args *ctx)
{
	enqueued((__u32)ctx->pid);
	return 0;
}

SEC("tracepoint/sched/sched_switch")
int runqwait_switch(struct switch_args *ctx)
{
	__u32 prev = (__u32)ctx->prev_pid;
	if (prev) {
		if ((ctx->prev_state & 0xff) == 0)
			enqueued(prev);
		else
			bpf_map_delete_elem(&ENQUEUED, &prev);
	}
	__u32 next = (__u32)ctx->next_pid;
	if (next)
		switched_in(ctx, next);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

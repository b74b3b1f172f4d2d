// SPDX-License-Identifier: GPL-2.0
// runq's per-task recorder: what happened to the run's workers, summed in
// maps instead of streamed, cheap enough to stay on (classic tracepoints
// only).
//
// TASKS holds the watched threads (user space adds each worker as it is
// forked; a thread or child a watched task clones is added here, under the
// same worker). For each: time on a CPU, time runnable without one (from a
// wakeup or a preemption to the next switch-in), the longest such wait,
// wakeups, migrations.
//
// Every switch notes on its CPU who got the CPU and when (HIST, the last
// HIST_LEN turns). When a watched task gets a CPU after waiting, the turns
// of that CPU during its wait are charged to the tasks that had them: HELD
// (waiter, holder) -> time; a wait longer than the history goes to the
// waiter's unattributed time, and a turn of the idle task to its idle time.
// WAKERS (wakee, waker) counts who woke each watched task (the task running
// when the wakeup was issued; a timer's interrupt names whoever it cut).

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <stddef.h>

#define HIST_LEN 32 /* a power of two */

/* One watched thread (crates/runq-recorder/src/decode.rs mirrors it). */
struct task_stats {
	__u64 run_ns;          /* on a CPU */
	__u64 wait_ns;         /* runnable without a CPU */
	__u64 waits;           /* waits that ended */
	__u64 max_wait_ns;     /* the longest */
	__u64 wakeups;         /* sched_wakeup(_new) of it */
	__u64 migrations;      /* sched_migrate_task of it */
	__u64 unattributed_ns; /* waited past the CPU's history */
	__u64 idle_ns;         /* its CPU ran the idle task while it waited */
	__u64 in_ns;           /* on a CPU since (0: off) */
	__u64 enq_ns;          /* runnable since (0: not waiting) */
	__u32 worker;          /* the worker (tid user space added) it belongs to */
	__u32 max_wait_cpu;    /* where the longest wait ended */
};

_Static_assert(offsetof(struct task_stats, in_ns) == 64, "task_stats.in_ns");
_Static_assert(sizeof(struct task_stats) == 88, "task_stats size");

struct pair {
	__u32 task;  /* the watched thread */
	__u32 other; /* the holder, or the waker */
};

struct charged {
	__u64 ns;    /* held time, or wakeups */
	__u64 turns; /* turns that overlapped a wait, or 0 */
	char comm[16];
};

struct turn {
	__u64 start_ns;
	__u32 pid;
	__u32 pad;
	char comm[16];
};

struct cpu_hist {
	__u64 head;
	struct turn turns[HIST_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct task_stats);
} TASKS SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct pair);
	__type(value, struct charged);
} HELD SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, struct pair);
	__type(value, struct charged);
} WAKERS SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_hist);
} HIST SEC(".maps");

/* [0]: HELD or WAKERS entries that found no room; [1]: threads TASKS had
 * no room for. Per CPU, summed by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} LOST SEC(".maps");

/* Classic tracepoint records (see events/sched/<name>/format). */
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

struct wakeup_args {
	__u64 common;
	char comm[16];
	__s32 pid;
	__s32 prio;
	__s32 target_cpu;
};

struct migrate_args {
	__u64 common;
	__u32 comm_loc;
	__s32 pid;
	__s32 prio;
	__s32 orig_cpu;
	__s32 dest_cpu;
};

struct fork_args {
	__u64 common;
	__u32 parent_comm_loc;
	__s32 parent_pid;
	__u32 child_comm_loc;
	__s32 child_pid;
};

static __always_inline void lost(__u32 which)
{
	__u64 *n = bpf_map_lookup_elem(&LOST, &which);
	if (n)
		(*n)++;
}

static __always_inline void charge(__u32 waiter, struct turn *t, __u64 ns)
{
	struct pair key = { .task = waiter, .other = t->pid };
	struct charged *c = bpf_map_lookup_elem(&HELD, &key);
	if (c) {
		c->ns += ns;
		c->turns++;
		return;
	}
	struct charged fresh = { .ns = ns, .turns = 1 };
	__builtin_memcpy(fresh.comm, t->comm, sizeof(fresh.comm));
	if (bpf_map_update_elem(&HELD, &key, &fresh, BPF_NOEXIST))
		lost(0);
}

/* Charges the turns of this CPU between `since` and `now` to their tasks. */
static __always_inline void attribute(struct cpu_hist *h, __u32 waiter,
				      struct task_stats *s, __u64 since, __u64 now)
{
	__u64 end = now;
	for (int i = 0; i < HIST_LEN && end > since; i++) {
		struct turn *t = &h->turns[(h->head - i) & (HIST_LEN - 1)];
		__u64 start = t->start_ns;
		if (!start)
			break;
		__u64 from = start > since ? start : since;
		if (end > from) {
			if (t->pid)
				charge(waiter, t, end - from);
			else
				s->idle_ns += end - from;
		}
		end = start;
	}
	if (end > since)
		s->unattributed_ns += end - since;
}

static __always_inline void switched_out(__u32 pid, __s64 state, __u64 now)
{
	struct task_stats *s = bpf_map_lookup_elem(&TASKS, &pid);
	if (!s)
		return;
	if (s->in_ns)
		s->run_ns += now - s->in_ns;
	s->in_ns = 0;
	/* Still runnable (preempted: 0, or 0x100 "R+"): it waits from now. */
	s->enq_ns = (state & 0xff) == 0 ? now : 0;
}

static __always_inline void switched_in(struct cpu_hist *h, __u32 pid, __u64 now)
{
	struct task_stats *s = bpf_map_lookup_elem(&TASKS, &pid);
	if (!s)
		return;
	s->in_ns = now;
	if (!s->enq_ns)
		return;
	__u64 waited = now - s->enq_ns;
	s->wait_ns += waited;
	s->waits++;
	if (waited > s->max_wait_ns) {
		s->max_wait_ns = waited;
		s->max_wait_cpu = bpf_get_smp_processor_id();
	}
	if (h)
		attribute(h, pid, s, s->enq_ns, now);
	s->enq_ns = 0;
}

SEC("tracepoint/sched/sched_switch")
int recorder_switch(struct switch_args *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 zero = 0;
	struct cpu_hist *h = bpf_map_lookup_elem(&HIST, &zero);
	__u32 prev = (__u32)ctx->prev_pid, next = (__u32)ctx->next_pid;
	if (prev)
		switched_out(prev, ctx->prev_state, now);
	if (next)
		switched_in(h, next, now);
	if (!h)
		return 0;
	h->head++;
	struct turn *t = &h->turns[h->head & (HIST_LEN - 1)];
	t->start_ns = now;
	t->pid = next;
	__builtin_memcpy(t->comm, ctx->next_comm, sizeof(t->comm));
	return 0;
}

static __always_inline void woken(__u32 pid)
{
	struct task_stats *s = bpf_map_lookup_elem(&TASKS, &pid);
	if (!s)
		return;
	s->wakeups++;
	if (!s->enq_ns && !s->in_ns)
		s->enq_ns = bpf_ktime_get_ns();
	struct pair key = { .task = pid, .other = (__u32)bpf_get_current_pid_tgid() };
	struct charged *c = bpf_map_lookup_elem(&WAKERS, &key);
	if (c) {
		c->ns++;
		return;
	}
	struct charged fresh = { .ns = 1 };
	bpf_get_current_comm(fresh.comm, sizeof(fresh.comm));
	if (bpf_map_update_elem(&WAKERS, &key, &fresh, BPF_NOEXIST))
		lost(0);
}

SEC("tracepoint/sched/sched_wakeup")
int recorder_wakeup(struct wakeup_args *ctx)
{
	woken((__u32)ctx->pid);
	return 0;
}

SEC("tracepoint/sched/sched_wakeup_new")
int recorder_wakeup_new(struct wakeup_args *ctx)
{
	woken((__u32)ctx->pid);
	return 0;
}

SEC("tracepoint/sched/sched_migrate_task")
int recorder_migrate(struct migrate_args *ctx)
{
	__u32 pid = (__u32)ctx->pid;
	struct task_stats *s = bpf_map_lookup_elem(&TASKS, &pid);
	if (s)
		s->migrations++;
	return 0;
}

SEC("tracepoint/sched/sched_process_fork")
int recorder_fork(struct fork_args *ctx)
{
	__u32 parent = (__u32)ctx->parent_pid, child = (__u32)ctx->child_pid;
	struct task_stats *p = bpf_map_lookup_elem(&TASKS, &parent);
	if (!p)
		return 0;
	struct task_stats fresh = { .worker = p->worker };
	if (bpf_map_update_elem(&TASKS, &child, &fresh, BPF_NOEXIST))
		lost(1);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

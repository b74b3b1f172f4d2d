// SPDX-License-Identifier: GPL-2.0
// runq's per-task recorder: what happened to the run's workers, summed in
// maps instead of streamed, cheap enough to stay on.
//
// Built twice (build.sh): recorder.bpf.o on the classic tracepoints, which
// load on any kernel, and, with -DBTF_TP, recorder-btf.bpf.o on the BTF
// tracepoints (tp_btf), which skip the copy of each event into a trace
// record and read the tasks' fields directly, placed by the kernel's BTF
// (CO-RE): cheaper on every switch. User space loads the BTF object where
// the kernel has BTF and takes the classic one when it does not load.
//
// TASKS holds the watched threads: user space adds each worker as it is
// forked, with its class (its group's index + 1), and runq's own threads
// with theirs; a thread or process a watched task clones is added here
// under the same worker and class. For
// each: time on a CPU, time runnable without one (from a wakeup or a
// preemption to the next switch-in), the longest wait, wakeups,
// migrations, and the time its CPU was held from it by class.
//
// Who held a waiting worker's CPU, in O(1) per switch: each CPU sums the
// time it gave each class of task (CPUS: 0 is every task outside the
// run, the idle task apart). A worker that starts waiting notes its CPU's
// sums; when it gets a CPU (or moves to another queue) the difference is
// what each class held from it. While any watched task waits on a CPU,
// each task that gets off that CPU is charged there by name (HELD:
// (cpu, task) -> time, with its comm and class), which names the holders.
//
// WAKERS (wakee, waker) counts who woke each watched task (the task
// running when the wakeup was issued; a timer's interrupt names whoever
// it cut).
//
// Sampled fidelity: when exact recording would cost more than runq's
// overhead budget, user space detaches the programs above and attaches
// recorder_sample to a software cpu-clock event on every CPU (about
// 1 kHz): each sample counts the task holding that CPU by name (SAMPLES:
// (cpu, task) -> samples, with its comm and class), nothing else runs.

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <stddef.h>

#define CLASSES 16   /* 0: outside the run; g + 1: group g (14 holds the rest); 15: runq's own */
#define MAX_CPUS 1024

/* One watched thread (crates/runq-recorder/src/decode.rs mirrors it). */
struct task_stats {
	__u64 run_ns;          /* on a CPU */
	__u64 wait_ns;         /* runnable without a CPU */
	__u64 waits;           /* waits that ended */
	__u64 max_wait_ns;     /* the longest */
	__u64 wakeups;         /* sched_wakeup(_new) of it */
	__u64 migrations;      /* sched_migrate_task of it */
	__u64 idle_ns;         /* its queue's CPU ran the idle task while it waited */
	__u64 wait_cpus;       /* CPUs (below 64) it waited on, a bit each */
	__u64 in_ns;           /* on a CPU since (0: off) */
	__u64 enq_ns;          /* runnable since (0: not waiting) */
	__u32 worker;          /* the worker (tid user space added) it belongs to */
	__u32 cls;             /* its class */
	__u32 max_wait_cpu;    /* where the longest wait ended */
	__u32 wait_cpu;        /* the queue it waits on */
	__u64 held[CLASSES];   /* time each class held its CPU while it waited */
	__u64 mark[CLASSES + 1]; /* its queue's sums when it began waiting there (the last: idle) */
};

_Static_assert(offsetof(struct task_stats, in_ns) == 64, "task_stats.in_ns");
_Static_assert(offsetof(struct task_stats, held) == 96, "task_stats.held");
_Static_assert(sizeof(struct task_stats) == 96 + 8 * (2 * CLASSES + 1), "task_stats size");

struct cpu_time {
	__u64 by_class[CLASSES]; /* time given to each class */
	__u64 idle;              /* time the idle task had it */
	__u64 since;             /* when its current task got it */
	__s64 waiting;           /* watched tasks waiting on it */
};

struct cpu_task {
	__u32 cpu;
	__u32 pid;
};

struct held {
	__u64 ns;    /* time it held the CPU while a watched task waited there */
	__u64 turns; /* such turns */
	__u32 cls;   /* its class */
	__u32 pad;
	char comm[16];
};

struct pair {
	__u32 task;  /* the watched thread */
	__u32 other; /* the waker */
};

struct woke {
	__u64 count;
	char comm[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct task_stats);
} TASKS SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_CPUS);
	__type(key, __u32);
	__type(value, struct cpu_time);
} CPUS SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct cpu_task);
	__type(value, struct held);
} HELD SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, struct pair);
	__type(value, struct woke);
} WAKERS SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct cpu_task);
	__type(value, struct held);
} SAMPLES SEC(".maps");

/* [0]: HELD or WAKERS entries that found no room; [1]: threads TASKS had
 * no room for. Per CPU, summed by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} LOST SEC(".maps");

static __always_inline void lost(__u32 which)
{
	__u64 *n = bpf_map_lookup_elem(&LOST, &which);
	if (n)
		(*n)++;
}

static __always_inline struct cpu_time *cpu_time(__u32 cpu)
{
	return bpf_map_lookup_elem(&CPUS, &cpu);
}

/* `s` begins waiting on `cpu`'s queue at `now`. */
static __always_inline void begin_wait(struct task_stats *s, __u32 cpu, __u64 now)
{
	struct cpu_time *c = cpu_time(cpu);
	if (!c)
		return;
	s->enq_ns = now;
	s->wait_cpu = cpu;
	if (cpu < 64)
		s->wait_cpus |= 1ULL << cpu;
	for (int k = 0; k < CLASSES; k++)
		s->mark[k] = c->by_class[k];
	s->mark[CLASSES] = c->idle;
	__sync_fetch_and_add(&c->waiting, 1);
}

/* `s` stops waiting on its queue: what each class held from it there. */
static __always_inline void leave_queue(struct task_stats *s)
{
	struct cpu_time *c = cpu_time(s->wait_cpu);
	if (!c)
		return;
	for (int k = 0; k < CLASSES; k++)
		s->held[k] += c->by_class[k] - s->mark[k];
	s->idle_ns += c->idle - s->mark[CLASSES];
	__sync_fetch_and_add(&c->waiting, -1);
}

/* This CPU's task `prev` got off it at `now`: its time goes to its class,
 * and by name when a watched task waits here. */
static __always_inline void account(__u32 cpu, __u32 prev, struct task_stats *ps, __u64 now)
{
	struct cpu_time *c = cpu_time(cpu);
	if (!c)
		return;
	__u64 ran = c->since && now > c->since ? now - c->since : 0;
	c->since = now;
	if (!prev) {
		c->idle += ran;
		return;
	}
	__u32 cls = ps ? ps->cls : 0;
	if (cls >= CLASSES)
		cls = CLASSES - 1;
	c->by_class[cls] += ran;
	if (c->waiting <= 0 || !ran)
		return;
	struct cpu_task key = { .cpu = cpu, .pid = prev };
	struct held *h = bpf_map_lookup_elem(&HELD, &key);
	if (h) {
		h->ns += ran;
		h->turns++;
		h->cls = cls; /* a worker forked by runq is runq's until watched */
		return;
	}
	struct held fresh = { .ns = ran, .turns = 1, .cls = cls };
	bpf_get_current_comm(fresh.comm, sizeof(fresh.comm)); /* prev is current */
	if (bpf_map_update_elem(&HELD, &key, &fresh, BPF_NOEXIST))
		lost(0);
}

/* This CPU switches from `prev` (still runnable, or not) to `next`. */
static __always_inline void switched(__u32 prev, int runnable, __u32 next)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 cpu = bpf_get_smp_processor_id();
	struct task_stats *ps = prev ? bpf_map_lookup_elem(&TASKS, &prev) : NULL;
	account(cpu, prev, ps, now);
	if (ps) {
		if (ps->in_ns)
			ps->run_ns += now - ps->in_ns;
		ps->in_ns = 0;
		if (runnable && !ps->enq_ns)
			begin_wait(ps, cpu, now);
	}
	struct task_stats *ns = next ? bpf_map_lookup_elem(&TASKS, &next) : NULL;
	if (!ns)
		return;
	ns->in_ns = now;
	if (!ns->enq_ns)
		return;
	__u64 waited = now - ns->enq_ns;
	ns->wait_ns += waited;
	ns->waits++;
	if (waited > ns->max_wait_ns) {
		ns->max_wait_ns = waited;
		ns->max_wait_cpu = cpu;
	}
	leave_queue(ns);
	ns->enq_ns = 0;
}

static __always_inline void woken(__u32 pid, __s32 target_cpu)
{
	struct task_stats *s = bpf_map_lookup_elem(&TASKS, &pid);
	if (!s)
		return;
	s->wakeups++;
	if (!s->enq_ns && !s->in_ns)
		begin_wait(s, (__u32)target_cpu, bpf_ktime_get_ns());
	struct pair key = { .task = pid, .other = (__u32)bpf_get_current_pid_tgid() };
	struct woke *w = bpf_map_lookup_elem(&WAKERS, &key);
	if (w) {
		w->count++;
		return;
	}
	struct woke fresh = { .count = 1 };
	bpf_get_current_comm(fresh.comm, sizeof(fresh.comm));
	if (bpf_map_update_elem(&WAKERS, &key, &fresh, BPF_NOEXIST))
		lost(0);
}

/* A waiting task moved to another queue: what it was held from on the
 * old one is kept, and it waits on the new one from now. */
static __always_inline void migrated(__u32 pid, __s32 dest_cpu)
{
	struct task_stats *s = bpf_map_lookup_elem(&TASKS, &pid);
	if (!s)
		return;
	s->migrations++;
	if (!s->enq_ns)
		return;
	__u64 since = s->enq_ns;
	leave_queue(s);
	begin_wait(s, (__u32)dest_cpu, since);
}

/* A watched task cloned `child`: it is watched under the same worker. */
static __always_inline void forked(__u32 parent, __u32 child)
{
	struct task_stats *p = bpf_map_lookup_elem(&TASKS, &parent);
	if (!p)
		return;
	struct task_stats fresh = { .worker = p->worker, .cls = p->cls };
	if (bpf_map_update_elem(&TASKS, &child, &fresh, BPF_NOEXIST))
		lost(1);
}

/* One sample of this CPU (sampled fidelity): the task holding it, by
 * name; `turns` counts the samples, `ns` is when the last was taken. The
 * idle task is pid 0. */
SEC("perf_event")
int recorder_sample(void *ctx)
{
	struct cpu_task key = {
		.cpu = bpf_get_smp_processor_id(),
		.pid = (__u32)bpf_get_current_pid_tgid(),
	};
	__u64 now = bpf_ktime_get_ns();
	struct held *h = bpf_map_lookup_elem(&SAMPLES, &key);
	if (h) {
		h->turns++;
		h->ns = now;
		return 0;
	}
	struct task_stats *s = key.pid ? bpf_map_lookup_elem(&TASKS, &key.pid) : NULL;
	struct held fresh = { .ns = now, .turns = 1, .cls = s ? s->cls : 0 };
	bpf_get_current_comm(fresh.comm, sizeof(fresh.comm));
	if (bpf_map_update_elem(&SAMPLES, &key, &fresh, BPF_NOEXIST))
		lost(0);
	return 0;
}

#ifndef BTF_TP

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

/* sched_migrate_task and sched_process_fork carry their comms as
 * __data_loc strings on newer kernels (6.18 has them) and as char[16] on
 * older ones (6.1, 6.12), which moves the pids after them: a program for
 * each, user space attaches the one the tracepoint's format matches. */
struct migrate_args {
	__u64 common;
	__u32 comm_loc;
	__s32 pid;
	__s32 prio;
	__s32 orig_cpu;
	__s32 dest_cpu;
};

struct migrate_args_fixed {
	__u64 common;
	char comm[16];
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

struct fork_args_fixed {
	__u64 common;
	char parent_comm[16];
	__s32 parent_pid;
	char child_comm[16];
	__s32 child_pid;
};

SEC("tracepoint/sched/sched_switch")
int recorder_switch(struct switch_args *ctx)
{
	/* Still runnable: preempted (0x100, "R+") or running (0). */
	switched((__u32)ctx->prev_pid, (ctx->prev_state & 0xff) == 0, (__u32)ctx->next_pid);
	return 0;
}

SEC("tracepoint/sched/sched_wakeup")
int recorder_wakeup(struct wakeup_args *ctx)
{
	woken((__u32)ctx->pid, ctx->target_cpu);
	return 0;
}

SEC("tracepoint/sched/sched_wakeup_new")
int recorder_wakeup_new(struct wakeup_args *ctx)
{
	woken((__u32)ctx->pid, ctx->target_cpu);
	return 0;
}

SEC("tracepoint/sched/sched_migrate_task")
int recorder_migrate(struct migrate_args *ctx)
{
	migrated((__u32)ctx->pid, ctx->dest_cpu);
	return 0;
}

SEC("tracepoint/sched/sched_migrate_task")
int recorder_migrate_fixed(struct migrate_args_fixed *ctx)
{
	migrated((__u32)ctx->pid, ctx->dest_cpu);
	return 0;
}

SEC("tracepoint/sched/sched_process_fork")
int recorder_fork(struct fork_args *ctx)
{
	forked((__u32)ctx->parent_pid, (__u32)ctx->child_pid);
	return 0;
}

SEC("tracepoint/sched/sched_process_fork")
int recorder_fork_fixed(struct fork_args_fixed *ctx)
{
	forked((__u32)ctx->parent_pid, (__u32)ctx->child_pid);
	return 0;
}

#else

/* The fields read from the kernel's task_struct, placed by its BTF. */
struct thread_info {
	__u32 cpu;
} __attribute__((preserve_access_index));

struct task_struct {
	struct thread_info thread_info;
	int pid;
} __attribute__((preserve_access_index));

/* The running task's pid (the outgoing task at a switch, the parent at a
 * fork, the waker at a wakeup). */
static __always_inline __u32 current_pid(void)
{
	return (__u32)bpf_get_current_pid_tgid();
}

/* The arguments of a BTF tracepoint, as its kernel function declares
 * them; the task pointers among them are read directly. */
static __always_inline struct task_struct *task_arg(__u64 *ctx, int i)
{
	return (struct task_struct *)ctx[i];
}

/* sched_switch(bool preempt, prev, next, unsigned int prev_state): the
 * last argument exists from Linux 5.18; before it the program does not
 * load and the classic object is used. */
SEC("tp_btf/sched_switch")
int recorder_switch(__u64 *ctx)
{
	int runnable = ctx[0] || (__u32)ctx[3] == 0;
	switched(current_pid(), runnable, (__u32)task_arg(ctx, 2)->pid);
	return 0;
}

/* sched_wakeup(p): it was put on task_cpu(p)'s queue. */
static __always_inline void btf_woken(struct task_struct *p)
{
	woken((__u32)p->pid, (__s32)p->thread_info.cpu);
}

SEC("tp_btf/sched_wakeup")
int recorder_wakeup(__u64 *ctx)
{
	btf_woken(task_arg(ctx, 0));
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int recorder_wakeup_new(__u64 *ctx)
{
	btf_woken(task_arg(ctx, 0));
	return 0;
}

/* sched_migrate_task(p, int dest_cpu) */
SEC("tp_btf/sched_migrate_task")
int recorder_migrate(__u64 *ctx)
{
	migrated((__u32)task_arg(ctx, 0)->pid, (__s32)ctx[1]);
	return 0;
}

/* sched_process_fork(parent, child): the parent is the running task. */
SEC("tp_btf/sched_process_fork")
int recorder_fork(__u64 *ctx)
{
	forked(current_pid(), (__u32)task_arg(ctx, 1)->pid);
	return 0;
}

#endif

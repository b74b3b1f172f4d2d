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
// Each watched thread has a slot, an index of TASKS (an array): user
// space claims one for each worker as it is forked, with its class (its
// group's index + 1), and for runq's own threads with theirs; a thread or
// process a watched task clones gets one here, under the same worker and
// class. SLOT_OF finds a thread's slot from its pid with one array read
// (at pid % PID_SLOTS, the pid and its slot; pids that share an entry
// with another are in SLOT_MORE), so a task that is not watched costs a
// switch two array reads. For each: time on a CPU, time runnable without
// one (from a wakeup or a preemption to the next switch-in), the longest
// wait, wakeups, migrations, and the time its CPU was held from it by
// class.
//
// Who held a waiting worker's CPU, in O(1) per switch: each CPU sums the
// time it gave each class of task while a watched task waited on it
// (CPUS: 0 is every task outside the run, the idle task apart), its clock
// started by the first watched task to wait there (the task holding it
// then is charged from that moment, not from when it got the CPU). A
// worker that starts waiting notes its CPU's sums; when it gets a CPU (or
// moves to another queue) the difference is what each class held from
// it. A switch between tasks that are not watched, on a CPU no watched
// task waits on, returns at once. While any watched task waits on a CPU,
// each task that gets off that CPU is charged there by name (HELD:
// (cpu, task) -> time, with its comm and class): a watched task keeps its
// charges in its own entry while it holds the same CPU, a task outside
// the run in its CPU's entry of OTHER (a per-CPU array) while it is the
// same task, and each goes to HELD when that changes. User space adds
// what is still in the entries.
//
// A watched task's wakers: the task running when the wakeup was issued
// (a timer's interrupt names whoever it cut), counted in the task's own
// entry while it is the same waker, and in WAKERS ((wakee, waker) ->
// count, with the waker's comm) when another wakes it.
//
// Sampled fidelity: when exact recording would cost more than runq's
// overhead budget, user space detaches the programs above and attaches
// recorder_sample to a software cpu-clock event on every CPU (about
// 1 kHz): each sample counts the task holding that CPU by name (SAMPLES:
// (cpu, task) -> samples, with its comm and class), nothing else runs.

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <stddef.h>
#include "tracepoints.h" /* the classic tracepoints' records (runq-kernel/bpf) */

#define CLASSES 16   /* 0: outside the run; g + 1: group g (14 holds the rest); 15: runq's own */
#define RUNQ_CLASS (CLASSES - 1)
#define MAX_CPUS 1024
#define MAX_SLOTS 16384  /* watched threads */
#define PID_SLOTS 65536  /* SLOT_OF's entries: every pid below it has its own */
#define SLOT_MASK 0x7fffffffULL /* an entry's low bits: its pid's slot + 1 (0: none) */
#define MORE (1ULL << 31)        /* other pids with this entry are in SLOT_MORE */

/* A task's time holding a CPU while watched tasks waited there. */
struct held {
	__u64 ns;    /* time it held the CPU while a watched task waited there */
	__u64 turns; /* such turns */
	__u32 cls;   /* its class */
	__u32 pad;
	char comm[16];
};

/* A waker's wakeups of a watched task. */
struct woke {
	__u64 count;
	char comm[16];
};

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
	__u32 tid;             /* the thread (0: the slot is being filled) */
	__u32 held_cpu;        /* the CPU `holding` is for */
	struct held holding;   /* its own charges there, not yet in HELD */
	__u32 waker;           /* its last waker */
	__u32 mark_top;        /* the classes below runq's that `mark` holds: 0..=mark_top */
	struct woke woke;      /* that waker's wakeups of it, not yet in WAKERS */
	__u64 pad;             /* to 7 cache lines: TASKS is page aligned (mmapable),
				  so no two threads' entries share a line */
};

_Static_assert(offsetof(struct task_stats, in_ns) == 64, "task_stats.in_ns");
_Static_assert(offsetof(struct task_stats, held) == 96, "task_stats.held");
_Static_assert(offsetof(struct task_stats, tid) == 96 + 8 * (2 * CLASSES + 1), "task_stats.tid");
_Static_assert(sizeof(struct task_stats) == 448, "task_stats size");

struct cpu_time {
	__u64 by_class[CLASSES]; /* time given to each class while watched tasks waited */
	__u64 idle;              /* time the idle task had it then */
	__u64 since;             /* when its current task got it */
	__s64 waiting;           /* watched tasks waiting on it */
	__u64 top;               /* the highest class below runq's it has given time to */
	__u64 pad[12];           /* to 256 bytes: a CPU's fields share no cache line
				    with another's, wherever the array starts */
};

struct cpu_task {
	__u32 cpu;
	__u32 pid;
};

/* The last task outside the watched ones charged on a CPU. */
struct other {
	__u32 pid;
	__u32 pad;
	struct held held; /* its charges there, not yet in HELD */
};

struct pair {
	__u32 task;  /* the watched thread */
	__u32 other; /* the waker */
};

/* The watched threads, by slot. Mapped by user space, which claims and
 * reads slots in place. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_SLOTS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct task_stats);
} TASKS SEC(".maps");

/* pid -> slot: at pid % PID_SLOTS, pid << 32 | (slot + 1), with MORE set
 * when another pid wanted the entry. Mapped by user space, which claims
 * entries with the same atomic compare-and-swap. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PID_SLOTS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u64);
} SLOT_OF SEC(".maps");

/* The slots of pids whose SLOT_OF entry another pid has. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_SLOTS);
	__type(key, __u32);
	__type(value, __u32);
} SLOT_MORE SEC(".maps");

/* [0]: the next free slot, taken with an atomic add (user space's too). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u64);
} NEXT_SLOT SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_CPUS);
	__type(key, __u32);
	__type(value, struct cpu_time);
} CPUS SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct other);
} OTHER SEC(".maps");

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

/* The watched thread `pid`'s entry, or NULL (the idle task, pid 0, is
 * never watched). A task that is not watched costs one array read. */
static __always_inline struct task_stats *task_of(__u32 pid)
{
	__u32 i = pid & (PID_SLOTS - 1);
	__u64 *e = bpf_map_lookup_elem(&SLOT_OF, &i);
	if (!e || !pid)
		return NULL;
	__u64 v = *e;
	__u32 slot;
	if ((__u32)(v >> 32) == pid && (v & SLOT_MASK)) {
		slot = (__u32)(v & SLOT_MASK) - 1;
	} else if (v & MORE) {
		__u32 *s = bpf_map_lookup_elem(&SLOT_MORE, &pid);
		if (!s)
			return NULL;
		slot = *s;
	} else {
		return NULL;
	}
	return bpf_map_lookup_elem(&TASKS, &slot);
}

/* `pid` has slot `slot` from now on (lib.rs's slots.rs does the same). */
static __always_inline void publish(__u32 pid, __u32 slot)
{
	__u32 i = pid & (PID_SLOTS - 1);
	__u64 *e = bpf_map_lookup_elem(&SLOT_OF, &i);
	if (!e)
		return;
	__u64 mine = (__u64)pid << 32 | (slot + 1);
	if (!__sync_val_compare_and_swap(e, 0, mine))
		return;
	if (bpf_map_update_elem(&SLOT_MORE, &pid, &slot, BPF_ANY)) {
		lost(1);
		return;
	}
	__sync_fetch_and_or(e, MORE);
}

/* `s` begins waiting on `cpu`'s queue (`c`) at `now`. The first waiter
 * there starts the CPU's clock: its current task holds it from now. The
 * sums noted are those of the classes the CPU has given time to (the
 * others are 0), runq's own and the idle task's. */
static __always_inline void begin_wait(struct task_stats *s, struct cpu_time *c, __u32 cpu, __u64 now)
{
	s->enq_ns = now;
	s->wait_cpu = cpu;
	if (cpu < 64)
		s->wait_cpus |= 1ULL << cpu;
	__u64 top = c->top;
	for (int k = 0; k < RUNQ_CLASS; k++) {
		if (k > top)
			break;
		s->mark[k] = c->by_class[k];
	}
	s->mark_top = top;
	s->mark[RUNQ_CLASS] = c->by_class[RUNQ_CLASS];
	s->mark[CLASSES] = c->idle;
	if (c->waiting <= 0)
		c->since = now;
	__sync_fetch_and_add(&c->waiting, 1);
}

/* `s` stops waiting on its queue: what each class held from it there (a
 * class the CPU first gave time to meanwhile had a sum of 0). */
static __always_inline void leave_queue(struct task_stats *s)
{
	struct cpu_time *c = cpu_time(s->wait_cpu);
	if (!c)
		return;
	__u64 top = c->top;
	for (int k = 0; k < RUNQ_CLASS; k++) {
		if (k > top)
			break;
		s->held[k] += c->by_class[k] - (k <= s->mark_top ? s->mark[k] : 0);
	}
	s->held[RUNQ_CLASS] += c->by_class[RUNQ_CLASS] - s->mark[RUNQ_CLASS];
	s->idle_ns += c->idle - s->mark[CLASSES];
	__sync_fetch_and_add(&c->waiting, -1);
}

/* Adds `h`, `pid`'s charges on `cpu`, to HELD. */
static __always_inline void flush_held(__u32 cpu, __u32 pid, struct held *h)
{
	struct cpu_task key = { .cpu = cpu, .pid = pid };
	struct held *t = bpf_map_lookup_elem(&HELD, &key);
	if (t) {
		t->ns += h->ns;
		t->turns += h->turns;
		t->cls = h->cls; /* a worker forked by runq is runq's until watched */
	} else if (bpf_map_update_elem(&HELD, &key, h, BPF_NOEXIST)) {
		lost(0);
	}
	h->ns = 0;
	h->turns = 0;
}

/* `h` (its task's charges, kept since its first turn) takes a turn of
 * `ran` by the current task, the one getting off this CPU. */
static __always_inline void take_turn(struct held *h, __u32 cls, __u64 ran)
{
	if (!h->turns)
		bpf_get_current_comm(h->comm, sizeof(h->comm));
	h->ns += ran;
	h->turns++;
	h->cls = cls;
}

/* The watched task `ps` (of class `cls`) held `cpu` for `ran` while
 * watched tasks waited there: kept in its entry while it is this CPU. */
static __always_inline void held_by_watched(struct task_stats *ps, __u32 cpu, __u32 cls, __u64 ran)
{
	if (ps->holding.turns && ps->held_cpu != cpu)
		flush_held(ps->held_cpu, ps->tid, &ps->holding);
	ps->held_cpu = cpu;
	take_turn(&ps->holding, cls, ran);
}

/* Task `pid`, outside the watched ones, held this CPU (`cpu`) for `ran`
 * while watched tasks waited here: kept in the CPU's OTHER while it is
 * the same task. */
static __always_inline void held_by_other(__u32 cpu, __u32 pid, __u64 ran)
{
	__u32 zero = 0;
	struct other *o = bpf_map_lookup_elem(&OTHER, &zero);
	if (!o)
		return;
	if (o->held.turns && o->pid != pid)
		flush_held(cpu, o->pid, &o->held);
	o->pid = pid;
	take_turn(&o->held, 0, ran);
}

/* This CPU's task `prev` got off it after `ran`, while watched tasks
 * waited here: its time goes to its class, and to it by name. */
static __always_inline void account(struct cpu_time *c, __u32 cpu, __u32 prev,
				    struct task_stats *ps, __u64 ran)
{
	if (!prev) {
		c->idle += ran;
		return;
	}
	__u32 cls = ps ? ps->cls : 0;
	if (cls >= CLASSES)
		cls = RUNQ_CLASS;
	if (cls < RUNQ_CLASS && cls > c->top)
		c->top = cls;
	c->by_class[cls] += ran;
	if (!ran)
		return;
	if (ps)
		held_by_watched(ps, cpu, cls, ran);
	else
		held_by_other(cpu, prev, ran);
}

/* This CPU switches from `prev` (still runnable, or not) to `next`. Two
 * tasks that are not watched, on a CPU no watched task waits on: nothing
 * to do (not even a clock read: the CPU's clock matters only while a
 * watched task waits there, and the first to wait starts it). */
static __always_inline void switched(__u32 prev, int runnable, __u32 next)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct cpu_time *c = cpu_time(cpu);
	if (!c)
		return;
	struct task_stats *ps = task_of(prev);
	struct task_stats *ns = task_of(next);
	int waited_on = c->waiting > 0;
	if (!ps && !ns && !waited_on)
		return;
	__u64 now = bpf_ktime_get_ns();
	__u64 ran = c->since && now > c->since ? now - c->since : 0;
	c->since = now;
	if (waited_on)
		account(c, cpu, prev, ps, ran);
	if (ps) {
		if (ps->in_ns)
			ps->run_ns += now - ps->in_ns;
		ps->in_ns = 0;
		if (runnable && !ps->enq_ns)
			begin_wait(ps, c, cpu, now);
	}
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

/* Adds `w`, `waker`'s wakeups of the watched thread `task`, to WAKERS. */
static __always_inline void flush_woke(__u32 task, __u32 waker, struct woke *w)
{
	struct pair key = { .task = task, .other = waker };
	struct woke *t = bpf_map_lookup_elem(&WAKERS, &key);
	if (t)
		t->count += w->count;
	else if (bpf_map_update_elem(&WAKERS, &key, w, BPF_NOEXIST))
		lost(0);
	w->count = 0;
}

/* Task `pid` was woken onto `target_cpu`'s queue by the current task. */
static __always_inline void woken(__u32 pid, __s32 target_cpu)
{
	struct task_stats *s = task_of(pid);
	if (!s)
		return;
	s->wakeups++;
	if (!s->enq_ns && !s->in_ns) {
		struct cpu_time *c = cpu_time((__u32)target_cpu);
		if (c)
			begin_wait(s, c, (__u32)target_cpu, bpf_ktime_get_ns());
	}
	__u32 waker = (__u32)bpf_get_current_pid_tgid();
	if (s->woke.count && s->waker != waker)
		flush_woke(s->tid, s->waker, &s->woke);
	if (!s->woke.count)
		bpf_get_current_comm(s->woke.comm, sizeof(s->woke.comm));
	s->waker = waker;
	s->woke.count++;
}

/* A waiting task moved to another queue: what it was held from on the
 * old one is kept, and it waits on the new one from now. */
static __always_inline void migrated(__u32 pid, __s32 dest_cpu)
{
	struct task_stats *s = task_of(pid);
	if (!s)
		return;
	s->migrations++;
	if (!s->enq_ns)
		return;
	__u64 since = s->enq_ns;
	leave_queue(s);
	struct cpu_time *c = cpu_time((__u32)dest_cpu);
	if (c)
		begin_wait(s, c, (__u32)dest_cpu, since);
	else
		s->enq_ns = 0;
}

/* A watched task cloned `child`: it gets the next slot, under the same
 * worker. A child whose pid still has an entry (the pid was reused) is
 * not watched afresh, and is counted as lost. */
static __always_inline void forked(__u32 parent, __u32 child)
{
	struct task_stats *p = task_of(parent);
	if (!p)
		return;
	__u32 zero = 0;
	__u64 *next = bpf_map_lookup_elem(&NEXT_SLOT, &zero);
	if (!next || task_of(child)) {
		lost(1);
		return;
	}
	__u32 slot = (__u32)__sync_fetch_and_add(next, 1);
	struct task_stats *s = slot < MAX_SLOTS ? bpf_map_lookup_elem(&TASKS, &slot) : NULL;
	if (!s) {
		lost(1);
		return;
	}
	s->worker = p->worker;
	s->cls = p->cls;
	s->tid = child;
	publish(child, slot);
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
	struct task_stats *s = task_of(key.pid);
	struct held fresh = { .ns = now, .turns = 1, .cls = s ? s->cls : 0 };
	bpf_get_current_comm(fresh.comm, sizeof(fresh.comm));
	if (bpf_map_update_elem(&SAMPLES, &key, &fresh, BPF_NOEXIST))
		lost(0);
	return 0;
}

#ifndef BTF_TP

/* The classic tracepoints, their records in tracepoints.h. */

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

// SPDX-License-Identifier: GPL-2.0
// runq hud's data plane: scheduler tracepoints and cpu-clock samples,
// filtered in the kernel to the target's worker threads (the `workers`
// map), reported through one ring buffer.
//
// sched_switch, outgoing worker: remember when and from which user stack
//   it left the CPU, and whether it went to sleep or was preempted.
// sched_wakeup: note when a sleeping worker became runnable again.
// sched_switch, incoming worker: the time asleep (switch-out to wakeup)
//   and the time runnable but waiting (wakeup or preemption to switch-in);
//   either above the threshold becomes an event carrying the stack taken
//   at switch-out.
// perf_event (cpu-clock): a user stack of whichever worker is running.

#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <bpf/bpf_helpers.h>

#define MAX_FRAMES 64

enum event_kind {
	EV_BLOCKED = 1, /* asleep (S/D) longer than the threshold */
	EV_RUNQ = 2,    /* runnable but waiting for a CPU longer than the threshold */
	EV_SAMPLE = 3,  /* a cpu-clock sample of a running worker */
};

struct event {
	__u32 kind;
	__u32 tid;
	__u64 start_ns;
	__u64 duration_ns;
	__u64 state;
	__u32 cpu;
	__u32 frames;
	__u64 stack[MAX_FRAMES];
};

struct offcpu {
	__u64 out_ns;
	__u64 wake_ns;
	__u64 state;
	__s64 stack_bytes;
	__u64 stack[MAX_FRAMES];
};

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

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u8);
} WORKERS SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct offcpu);
} OFFCPU SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct offcpu);
} SCRATCH SEC(".maps");

/* [0] threshold ns */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} CONFIG SEC(".maps");

/* [0] events dropped (ring buffer full) */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} DROPS SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} EVENTS SEC(".maps");

static __always_inline void count_drop(void)
{
	__u32 zero = 0;
	__u64 *d = bpf_map_lookup_elem(&DROPS, &zero);
	if (d)
		__sync_fetch_and_add(d, 1);
}

static __always_inline __u64 threshold_ns(void)
{
	__u32 zero = 0;
	__u64 *t = bpf_map_lookup_elem(&CONFIG, &zero);
	return t ? *t : 5000000;
}

static __always_inline void emit(__u32 kind, __u32 tid, __u64 start, __u64 dur,
				 struct offcpu *o)
{
	struct event *e = bpf_ringbuf_reserve(&EVENTS, sizeof(*e), 0);
	if (!e) {
		count_drop();
		return;
	}
	e->kind = kind;
	e->tid = tid;
	e->start_ns = start;
	e->duration_ns = dur;
	e->state = o->state;
	e->cpu = bpf_get_smp_processor_id();
	e->frames = o->stack_bytes > 0 ? (__u32)((__u64)o->stack_bytes / 8) : 0;
	bpf_probe_read_kernel(e->stack, sizeof(e->stack), o->stack);
	bpf_ringbuf_submit(e, 0);
}

static __always_inline void switch_out(struct switch_args *ctx, __u32 tid, __u64 now)
{
	__u32 zero = 0;
	struct offcpu *o = bpf_map_lookup_elem(&SCRATCH, &zero);
	if (!o)
		return;
	o->out_ns = now;
	o->wake_ns = 0;
	o->state = (__u64)ctx->prev_state;
	/* The outgoing task is still current: this is its user stack. */
	o->stack_bytes = bpf_get_stack(ctx, o->stack, sizeof(o->stack), BPF_F_USER_STACK);
	bpf_map_update_elem(&OFFCPU, &tid, o, BPF_ANY);
}

static __always_inline void switch_in(__u32 tid, __u64 now)
{
	struct offcpu *o = bpf_map_lookup_elem(&OFFCPU, &tid);
	if (!o)
		return;
	__u64 thr = threshold_ns();
	/* Preempted (state 0): runnable from switch-out to now. Asleep: blocked
	 * until the wakeup (or now, if the wakeup was not seen), then runnable. */
	__u64 runnable_from = o->out_ns;
	if ((o->state & 0xff) != 0) {
		__u64 woke = o->wake_ns ? o->wake_ns : now;
		if (woke - o->out_ns >= thr)
			emit(EV_BLOCKED, tid, o->out_ns, woke - o->out_ns, o);
		runnable_from = woke;
	}
	if (now - runnable_from >= thr)
		emit(EV_RUNQ, tid, runnable_from, now - runnable_from, o);
	bpf_map_delete_elem(&OFFCPU, &tid);
}

SEC("tracepoint/sched/sched_switch")
int hud_sched_switch(struct switch_args *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 prev = (__u32)ctx->prev_pid;
	__u32 next = (__u32)ctx->next_pid;
	if (bpf_map_lookup_elem(&WORKERS, &prev))
		switch_out(ctx, prev, now);
	if (bpf_map_lookup_elem(&WORKERS, &next))
		switch_in(next, now);
	return 0;
}

SEC("tracepoint/sched/sched_wakeup")
int hud_sched_wakeup(struct wakeup_args *ctx)
{
	__u32 tid = (__u32)ctx->pid;
	struct offcpu *o = bpf_map_lookup_elem(&OFFCPU, &tid);
	if (o && o->wake_ns == 0)
		o->wake_ns = bpf_ktime_get_ns();
	return 0;
}

SEC("perf_event")
int hud_sample(struct bpf_perf_event_data *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	if (!bpf_map_lookup_elem(&WORKERS, &tid))
		return 0;
	struct event *e = bpf_ringbuf_reserve(&EVENTS, sizeof(*e), 0);
	if (!e) {
		count_drop();
		return 0;
	}
	long n = bpf_get_stack(ctx, e->stack, sizeof(e->stack), BPF_F_USER_STACK);
	e->kind = EV_SAMPLE;
	e->tid = tid;
	e->start_ns = bpf_ktime_get_ns();
	e->duration_ns = 0;
	e->state = 0;
	e->cpu = bpf_get_smp_processor_id();
	e->frames = n > 0 ? (__u32)((__u64)n / 8) : 0;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

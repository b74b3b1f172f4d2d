// SPDX-License-Identifier: GPL-2.0
// runq hud's data plane: scheduler tracepoints and cpu-clock samples,
// filtered in the kernel to the target's worker threads (the `workers`
// map), reported through one ring buffer.
//
// sched_switch, outgoing worker: remember when and from which user stack
//   (frame-pointer walk) it left the CPU, and whether it went to sleep or
//   was preempted.
// sched_wakeup: note when a sleeping worker became runnable again.
// sched_switch, incoming worker: the time asleep (switch-out to wakeup)
//   and the time runnable but waiting (wakeup or preemption to switch-in);
//   either above the threshold becomes an event.
// perf_event (cpu-clock): a user stack of whichever worker is running.
//
// Two ways to a user stack, chosen by user space per target (CONFIG[1]):
// - frame pointers: bpf_get_stack walks the chain in the kernel;
// - copy: the user registers (ip, sp, bp) and the top of the user stack
//   (up to 16 KiB, to the end of its mapping) are copied into the event,
//   and user space unwinds them with the
//   objects' DWARF CFI (.eh_frame). Samples copy at the sample; a sleep
//   above the threshold copies at the worker's next syscall exit, when the
//   blocking call's frames are still on its stack (raw_syscalls/sys_exit),
//   so only over-threshold sleeps of workers pay for a copy.

#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <bpf/bpf_helpers.h>

/* bpf_get_stack's limit (kernel.perf_event_max_stack defaults to 127). */
#define MAX_FRAMES 127

/* Offsets of the user registers in x86_64's struct pt_regs (uapi). */
#define PT_RBP 32
#define PT_RIP 128
#define PT_RSP 152

enum event_kind {
	EV_BLOCKED = 1, /* asleep (S/D) longer than the threshold */
	EV_RUNQ = 2,    /* runnable but waiting for a CPU longer than the threshold */
	EV_SAMPLE = 3,  /* a cpu-clock sample of a running worker */
};

enum event_flags {
	F_TRUNCATED = 1,  /* the frame-pointer walk filled MAX_FRAMES */
	F_COPY_FAILED = 2, /* no part of the user stack could be copied */
	F_NO_REGS = 4,    /* the user registers could not be read */
};

/* A record is this header, then `stack_len` bytes of user stack copied
 * from address `sp` upwards (copy mode only). */
struct event {
	__u32 kind;
	__u32 tid;
	__u64 start_ns;
	__u64 duration_ns;
	__u64 state;
	__u32 cpu;
	__u32 frames;
	__u64 ip;
	__u64 sp;
	__u64 bp;
	__u32 stack_len;
	__u32 flags;
	__u64 switches; /* the worker's switch-outs so far */
	__u64 stack[MAX_FRAMES];
};

struct offcpu {
	__u64 out_ns;
	__u64 wake_ns;
	__u64 state;
	__s64 stack_bytes;
	/* copy mode: a sleep over the threshold waiting for its syscall exit */
	__u64 pending_start;
	__u64 pending_ns;
	__u64 stack[MAX_FRAMES];
};

/* Classic tracepoint records (see events/<category>/<name>/format). */
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

struct sys_exit_args {
	__u64 common;
	__s64 id;
	__s64 ret;
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

/* Per worker: how often it left the CPU, so that user space joins two
 * samples into one poll only when no switch (even a short one) came
 * between them. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u64);
} SWITCHES SEC(".maps");

/* [0] threshold ns, [1] copy mode (0: frame pointers, 1: copy stacks) */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} CONFIG SEC(".maps");

/* [0] events dropped (ring buffer full), [1] bytes of user stack copied */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} DROPS SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 23);
} EVENTS SEC(".maps");

static __always_inline void count(__u32 slot, __u64 n)
{
	__u64 *d = bpf_map_lookup_elem(&DROPS, &slot);
	if (d)
		__sync_fetch_and_add(d, n);
}

static __always_inline __u64 config(__u32 slot, __u64 dflt)
{
	__u64 *v = bpf_map_lookup_elem(&CONFIG, &slot);
	return v ? *v : dflt;
}

static __always_inline __u64 threshold_ns(void)
{
	return config(0, 5000000);
}

static __always_inline int copy_mode(void)
{
	return config(1, 0) != 0;
}

static __always_inline void fill(struct event *e, __u32 kind, __u32 tid, __u64 start, __u64 dur,
				 __u64 state)
{
	e->kind = kind;
	e->tid = tid;
	e->start_ns = start;
	e->duration_ns = dur;
	e->state = state;
	e->cpu = bpf_get_smp_processor_id();
	e->frames = 0;
	e->ip = 0;
	e->sp = 0;
	e->bp = 0;
	e->stack_len = 0;
	e->flags = 0;
	__u64 *n = bpf_map_lookup_elem(&SWITCHES, &tid);
	e->switches = n ? *n : 0;
}

static __always_inline void count_switch(__u32 tid)
{
	__u64 *n = bpf_map_lookup_elem(&SWITCHES, &tid);
	if (n) {
		__sync_fetch_and_add(n, 1);
	} else {
		__u64 one = 1;
		bpf_map_update_elem(&SWITCHES, &tid, &one, BPF_NOEXIST);
	}
}

/* An event with the frame-pointer stack taken at switch-out. */
static __always_inline void emit(__u32 kind, __u32 tid, __u64 start, __u64 dur,
				 struct offcpu *o)
{
	struct event *e = bpf_ringbuf_reserve(&EVENTS, sizeof(*e), 0);
	if (!e) {
		count(0, 1);
		return;
	}
	fill(e, kind, tid, start, dur, o->state);
	e->frames = o->stack_bytes > 0 ? (__u32)((__u64)o->stack_bytes / 8) : 0;
	if (e->frames >= MAX_FRAMES)
		e->flags |= F_TRUNCATED;
	bpf_probe_read_kernel(e->stack, sizeof(e->stack), o->stack);
	bpf_ringbuf_submit(e, 0);
}

/* The current task's user registers, saved at its last kernel entry. */
static __always_inline int user_regs(struct event *e)
{
	struct task_struct *task = bpf_get_current_task_btf();
	long regs = bpf_task_pt_regs(task);
	if (!regs)
		return -1;
	if (bpf_probe_read_kernel(&e->ip, 8, (void *)(regs + PT_RIP)) ||
	    bpf_probe_read_kernel(&e->sp, 8, (void *)(regs + PT_RSP)) ||
	    bpf_probe_read_kernel(&e->bp, 8, (void *)(regs + PT_RBP)))
		return -1;
	return 0;
}

/* How much user stack an event carries at most, and the record's room
 * for it (one page more, so the verifier can see every page read fit). */
#define COPY_MAX 16384
#define COPY_ROOM (COPY_MAX + 4096)

/* An event carrying the current task's registers and the top of its user
 * stack: from sp to the next page boundary, then whole pages, until
 * COPY_MAX or the end of the stack's mapping (a thread's stack often ends
 * a few KiB above sp; page-sized reads never straddle the end). */
static __noinline int emit_copy(__u32 kind, __u32 tid, __u64 start, __u64 dur, __u64 state)
{
	struct event *e = bpf_ringbuf_reserve(&EVENTS, sizeof(struct event) + COPY_ROOM, 0);
	if (!e) {
		count(0, 1);
		return 1;
	}
	fill(e, kind, tid, start, dur, state);
	if (user_regs(e)) {
		e->flags |= F_NO_REGS;
		bpf_ringbuf_submit(e, 0);
		return 1;
	}
	__u8 *buf = (__u8 *)(e + 1);
	__u64 sp = e->sp;
	__u32 len = 4096 - (__u32)(sp & 4095);
	if (len > 4096)
		len = 4096;
	if (bpf_probe_read_user(buf, len, (void *)sp)) {
		len = 0;
	} else {
#pragma unroll
		for (int i = 0; i < 3; i++) {
			__u32 at = len;
			if (at > COPY_MAX - 4096)
				break;
			if (bpf_probe_read_user(buf + at, 4096, (void *)(sp + at)))
				break;
			len = at + 4096;
		}
	}
	if (!len)
		e->flags |= F_COPY_FAILED;
	e->stack_len = len;
	count(1, len);
	bpf_ringbuf_submit(e, 0);
	return 1;
}

/* Copy mode: a sleep over the threshold that no syscall exit picked up
 * (the worker slept in a page fault, say) goes out with the frame-pointer
 * stack before its entry is reused. */
static __always_inline void flush_pending(__u32 tid, struct offcpu *o)
{
	if (o->pending_ns)
		emit(EV_BLOCKED, tid, o->pending_start, o->pending_ns, o);
	o->pending_ns = 0;
}

static __always_inline void switch_out(struct switch_args *ctx, __u32 tid, __u64 now)
{
	count_switch(tid);
	struct offcpu *old = bpf_map_lookup_elem(&OFFCPU, &tid);
	if (old)
		flush_pending(tid, old);
	__u32 zero = 0;
	struct offcpu *o = bpf_map_lookup_elem(&SCRATCH, &zero);
	if (!o)
		return;
	o->out_ns = now;
	o->wake_ns = 0;
	o->state = (__u64)ctx->prev_state;
	o->pending_start = 0;
	o->pending_ns = 0;
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
	int deferred = 0;
	/* Preempted (state 0): runnable from switch-out to now. Asleep: blocked
	 * until the wakeup (or now, if the wakeup was not seen), then runnable. */
	__u64 runnable_from = o->out_ns;
	if ((o->state & 0xff) != 0) {
		__u64 woke = o->wake_ns ? o->wake_ns : now;
		if (woke - o->out_ns >= thr) {
			if (copy_mode()) {
				o->pending_start = o->out_ns;
				o->pending_ns = woke - o->out_ns;
				deferred = 1;
			} else {
				emit(EV_BLOCKED, tid, o->out_ns, woke - o->out_ns, o);
			}
		}
		runnable_from = woke;
	}
	if (now - runnable_from >= thr)
		emit(EV_RUNQ, tid, runnable_from, now - runnable_from, o);
	if (!deferred)
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

/* Copy mode only: the worker is back from the call it slept in, and that
 * call's frames are still on its stack. */
SEC("tracepoint/raw_syscalls/sys_exit")
int hud_sys_exit(struct sys_exit_args *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct offcpu *o = bpf_map_lookup_elem(&OFFCPU, &tid);
	if (!o || !o->pending_ns)
		return 0;
	emit_copy(EV_BLOCKED, tid, o->pending_start, o->pending_ns, o->state);
	bpf_map_delete_elem(&OFFCPU, &tid);
	return 0;
}

SEC("perf_event")
int hud_sample(struct bpf_perf_event_data *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	if (!bpf_map_lookup_elem(&WORKERS, &tid))
		return 0;
	__u64 now = bpf_ktime_get_ns();
	if (copy_mode()) {
		emit_copy(EV_SAMPLE, tid, now, 0, 0);
		return 0;
	}
	struct event *e = bpf_ringbuf_reserve(&EVENTS, sizeof(*e), 0);
	if (!e) {
		count(0, 1);
		return 0;
	}
	fill(e, EV_SAMPLE, tid, now, 0, 0);
	long n = bpf_get_stack(ctx, e->stack, sizeof(e->stack), BPF_F_USER_STACK);
	e->frames = n > 0 ? (__u32)((__u64)n / 8) : 0;
	if (e->frames >= MAX_FRAMES)
		e->flags |= F_TRUNCATED;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

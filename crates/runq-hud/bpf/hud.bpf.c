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
// A run-queue wait names what held the CPU: the task that ran just before
// the worker got it back (the previous task at its switch-in, as
// `runqslower -P` prints it). When that task is a thread of the target, a
// second record (EV_HOLDER) carries the holder's own user stack.
//
// Exact polls (opt-in, CONFIG[3]): uprobes on the entry and the return of
// every instance of Tokio's task poll (tokio::runtime::task::raw::poll)
// time each poll of a worker; a poll whose time on CPU (its wall time less
// the worker's off-CPU time inside it) reaches the threshold becomes an
// event. A uprobe program can be preempted while it runs, and while it
// waits the scheduler tracepoints on its CPU run no BPF program (the
// kernel's per-CPU recursion guard), so switches can go unseen: each poll
// compares the kernel's own count of the worker's context switches
// (task_struct nvcsw + nivcsw, read with CO-RE) with the switches the
// tracepoints saw, and a poll whose off-CPU time cannot be trusted is
// counted (CNT_POLLS_UNTIMED), never reported. The uretprobe replaces the poll's return address with the
// kernel's trampoline while the poll runs: stacks copied meanwhile get the
// original address back (frame-pointer stacks are fixed by the kernel).
//
// Task ids, two ways chosen by user space: where it found the slot of
// Tokio's thread-local CONTEXT that holds the current task id (an offset
// from the thread pointer, CONFIG[4]), the programs read it from the
// worker's own memory whenever it is current (samples, switch-outs,
// syscall exits); otherwise a uprobe on every instance of
// tokio::runtime::context::set_current_task_id (which Tokio calls as a
// task's poll begins and ends, with the task's id or the one it restores)
// keeps it. Either way TASKS holds each watched thread's last known task
// id; every event carries its worker's (0: no task), and a long poll the
// first id seen inside it.
//
// Two ways to a user stack, chosen by user space per target (CONFIG[1]):
// - frame pointers: bpf_get_stack walks the chain in the kernel;
// - copy: the user registers (ip, sp, bp) and the top of the user stack
//   (at least 32 KiB, as perf-based profilers copy, or to the end of its
//   mapping) are copied into the event,
//   and user space unwinds them with the
//   objects' DWARF CFI (.eh_frame). Samples copy at the sample; a sleep
//   above the threshold copies at the worker's next syscall exit, when the
//   blocking call's frames are still on its stack (raw_syscalls/sys_exit),
//   so only over-threshold sleeps of workers pay for a copy.

#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <bpf/bpf_helpers.h>
#include <stddef.h>
#include "tracepoints.h" /* the tracepoint records (runq-kernel/bpf) */

/* The fields of the kernel's task_struct that exact polls and task ids
 * read; their offsets are relocated against the running kernel's BTF
 * (CO-RE). */
struct thread_struct {
	unsigned long fsbase;
} __attribute__((preserve_access_index));

struct inode {
	unsigned short i_mode;
} __attribute__((preserve_access_index));

struct file {
	struct inode *f_inode;
	void *private_data;
} __attribute__((preserve_access_index));

struct sock_common {
	unsigned short skc_family;
} __attribute__((preserve_access_index));

struct sock {
	struct sock_common __sk_common;
} __attribute__((preserve_access_index));

struct socket {
	short type;
	struct sock *sk;
} __attribute__((preserve_access_index));

struct fdtable {
	unsigned int max_fds;
	struct file **fd;
} __attribute__((preserve_access_index));

struct files_struct {
	struct fdtable *fdt;
} __attribute__((preserve_access_index));

struct task_struct {
	unsigned long nvcsw;
	unsigned long nivcsw;
	struct thread_struct thread;
	struct files_struct *files;
} __attribute__((preserve_access_index));

/* bpf_get_stack's limit (kernel.perf_event_max_stack defaults to 127). */
#define MAX_FRAMES 127

/* Offsets of the user registers in x86_64's struct pt_regs (uapi). */
#define PT_RBP 32
#define PT_RDI 112
#define PT_ORIG_RAX 120
#define PT_RIP 128
#define PT_RSP 152

enum event_kind {
	EV_BLOCKED = 1, /* asleep (S/D) longer than the threshold */
	EV_RUNQ = 2,    /* runnable but waiting for a CPU longer than the threshold */
	EV_SAMPLE = 3,  /* a cpu-clock sample of a running worker */
	EV_HOLDER = 4,  /* the stack of the target's thread that held a waiting worker's CPU */
	EV_POLL = 5,    /* exact polls: one poll ran on CPU longer than the threshold */
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
	/* EV_RUNQ and EV_HOLDER: the task that ran just before the worker got
	 * its CPU back (tid 0: not seen) */
	__u32 holder_tid;
	__u32 holder_tgid;
	char holder_comm[16];
	/* the Tokio task the worker was polling (0: none, or not tracked) */
	__u64 task_id;
	/* EV_BLOCKED: the system call it slept in (-1: none), its first
	 * argument when that is a descriptor (-1: not one), the type bits of
	 * that descriptor's inode (i_mode >> 12; 0: anonymous, unknown), and
	 * for a socket its family and type (family << 16 | type) */
	__s32 syscall;
	__s32 fd;
	__u32 fd_type;
	__u32 sock;
	__u64 stack[MAX_FRAMES];
};

/* The layout user space decodes (crates/runq-hud/src/event.rs asserts the
 * same offsets on its #[repr(C)] mirror). */
_Static_assert(offsetof(struct event, tid) == 4, "event.tid");
_Static_assert(offsetof(struct event, start_ns) == 8, "event.start_ns");
_Static_assert(offsetof(struct event, duration_ns) == 16, "event.duration_ns");
_Static_assert(offsetof(struct event, state) == 24, "event.state");
_Static_assert(offsetof(struct event, cpu) == 32, "event.cpu");
_Static_assert(offsetof(struct event, frames) == 36, "event.frames");
_Static_assert(offsetof(struct event, ip) == 40, "event.ip");
_Static_assert(offsetof(struct event, sp) == 48, "event.sp");
_Static_assert(offsetof(struct event, bp) == 56, "event.bp");
_Static_assert(offsetof(struct event, stack_len) == 64, "event.stack_len");
_Static_assert(offsetof(struct event, flags) == 68, "event.flags");
_Static_assert(offsetof(struct event, switches) == 72, "event.switches");
_Static_assert(offsetof(struct event, holder_tid) == 80, "event.holder_tid");
_Static_assert(offsetof(struct event, holder_tgid) == 84, "event.holder_tgid");
_Static_assert(offsetof(struct event, holder_comm) == 88, "event.holder_comm");
_Static_assert(offsetof(struct event, task_id) == 104, "event.task_id");
_Static_assert(offsetof(struct event, syscall) == 112, "event.syscall");
_Static_assert(offsetof(struct event, fd) == 116, "event.fd");
_Static_assert(offsetof(struct event, fd_type) == 120, "event.fd_type");
_Static_assert(offsetof(struct event, sock) == 124, "event.sock");
_Static_assert(offsetof(struct event, stack) == 128, "event.stack");
_Static_assert(sizeof(struct event) == 128 + 8 * MAX_FRAMES, "event size");

/* Who held a CPU, as the sched_switch that gave it back saw it. */
struct holder {
	__u32 tid;
	__u32 tgid;
	char comm[16];
};

/* The system call a worker went to sleep in (see struct event). */
struct sleep_call {
	__s32 nr;
	__s32 fd;
	__u32 fd_type;
	__u32 sock;
};

struct offcpu {
	__u64 out_ns;
	__u64 wake_ns;
	__u64 state;
	__s64 stack_bytes;
	/* copy mode: a sleep over the threshold waiting for its syscall exit */
	__u64 pending_start;
	__u64 pending_ns;
	/* copy mode: a run-queue wait after such a sleep, and who held the CPU */
	__u64 pending_rq_start;
	__u64 pending_rq_ns;
	struct holder pending_holder;
	/* a sleep's system call, descriptor and its type (see struct event) */
	struct sleep_call call;
	__u64 stack[MAX_FRAMES];
};

/* Slots of the CONFIG array, set by user space before attaching. */
enum config_slot {
	CFG_THRESHOLD_NS = 0, /* blocking and run-queue threshold */
	CFG_COPY_MODE = 1,    /* 0: frame pointers, 1: copy stacks */
	CFG_TARGET_TGID = 2,  /* the target's pid: a holder in it gets EV_HOLDER */
	CFG_EXACT_POLLS = 3,  /* 1: the poll uprobes are attached (count off-CPU time) */
	CFG_TASK_TLS = 4,     /* the task id's offset from the thread pointer (0: not read) */
	CFG_SLOTS = 5,
};

/* Slots of the COUNTERS array, read by user space. */
enum counter_slot {
	CNT_LOST = 0,       /* events dropped (ring buffer full) */
	CNT_COPIED = 1,     /* bytes of user stack copied */
	CNT_NO_RQ_COPY = 2, /* preemptions whose stack found no room in RQCOPY */
	CNT_POLLS_UNTIMED = 3, /* long polls whose switches the tracepoints missed */
	CNT_SLOTS = 4,
};

/* How much user stack an event carries at most (the rest of sp's page and
 * eight whole pages: never less than 32 KiB unless the stack ends first),
 * and the record's room for it (one page more, so the verifier can see
 * every page read fit). */
#define COPY_PAGES 8
#define COPY_MAX (4096 * (COPY_PAGES + 1))
#define COPY_ROOM (COPY_MAX + 4096)

/* Copy mode: a preempted worker's registers and user stack, taken when it
 * left the CPU, kept until it runs again (its stack cannot change while
 * it waits, and cannot be read from another task's context). */
struct stack_copy {
	__u64 ip;
	__u64 sp;
	__u64 bp;
	__u32 len;
	__u32 flags;
	__u8 bytes[COPY_ROOM];
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

/* A zeroed stack_copy to create RQCOPY entries from (a plain array: a
 * per-CPU value is limited to 32 KiB, less than a stack_copy; it is only
 * read, and its len only ever set to 0). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stack_copy);
} COPY_SCRATCH SEC(".maps");

/* Per preempted worker (copy mode): its stack at switch-out. Entries are
 * reused; `len` 0 means none is held. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct stack_copy);
} RQCOPY SEC(".maps");

/* Per worker: how often it left the CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u64);
} SWITCHES SEC(".maps");

/* Exact polls: a worker's poll in progress. */
struct poll_open {
	__u64 start_ns;
	__u64 off_ns;   /* the worker's OFFNS total at the poll's entry */
	__u64 kernel_switches; /* the kernel's count of its context switches */
	__u64 seen_switches;   /* the switch-outs and switch-ins the tracepoints saw */
	__u64 fn_ip;    /* the instance of raw::poll (one per future type) */
	__u64 ret_slot; /* where the return address sits on the stack */
	__u64 ret_addr; /* the return address the uretprobe replaced */
	__u64 task_id;  /* the first task id set inside the poll */
	__u64 parent;   /* the task id in force at its entry: not the poll's own */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct poll_open);
} POLLS SEC(".maps");

/* Exact polls: per worker, its time off CPU so far (ns) and how many
 * switch-outs and switch-ins the tracepoints saw. */
struct off_total {
	__u64 ns;
	__u64 outs;
	__u64 ins;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct off_total);
} OFFNS SEC(".maps");

/* Task ids: per watched thread, the Tokio task it polls now (0: none). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u64);
} TASKS SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CFG_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} CONFIG SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CNT_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} COUNTERS SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 24);
} EVENTS SEC(".maps");

static __always_inline void count(__u32 slot, __u64 n)
{
	__u64 *d = bpf_map_lookup_elem(&COUNTERS, &slot);
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
	return config(CFG_THRESHOLD_NS, 5000000);
}

static __always_inline int copy_mode(void)
{
	return config(CFG_COPY_MODE, 0) != 0;
}

static __always_inline int exact_polls(void)
{
	return config(CFG_EXACT_POLLS, 0) != 0;
}

/* A worker's off-CPU total, created on first use. */
static __always_inline struct off_total *off_total_of(__u32 tid)
{
	struct off_total *t = bpf_map_lookup_elem(&OFFNS, &tid);
	if (t)
		return t;
	struct off_total zero = {};
	bpf_map_update_elem(&OFFNS, &tid, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&OFFNS, &tid);
}

/* The kernel's count of the current task's context switches. */
static __always_inline __u64 kernel_switches(void)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	unsigned long v = 0, iv = 0;
	bpf_probe_read_kernel(&v, sizeof(v), &task->nvcsw);
	bpf_probe_read_kernel(&iv, sizeof(iv), &task->nivcsw);
	return v + iv;
}

/* Task ids by thread-local storage: the current task's current task id,
 * read from its own memory at the thread pointer's offset user space
 * found (0 when that is unknown or unreadable). */
static __always_inline __u64 tls_task_id(void)
{
	__s64 off = (__s64)config(CFG_TASK_TLS, 0);
	if (!off)
		return 0;
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u64 fsbase = 0, id = 0;
	bpf_probe_read_kernel(&fsbase, sizeof(fsbase), &task->thread.fsbase);
	if (!fsbase || bpf_probe_read_user(&id, sizeof(id), (void *)(fsbase + off)))
		return 0;
	return id;
}

/* The task id of watched thread `tid`: its own, read now when it is the
 * current task and the slot is known; else the last one kept for it (at
 * its switch-out, or by the uprobe). */
static __always_inline __u64 task_id_of(__u32 tid)
{
	if (config(CFG_TASK_TLS, 0) && tid == (__u32)bpf_get_current_pid_tgid())
		return tls_task_id();
	__u64 *task = bpf_map_lookup_elem(&TASKS, &tid);
	return task ? *task : 0;
}

/* Exact polls: a poll in progress takes the first task id seen in it
 * other than the one in force at its entry. Tokio sets the task's id a
 * little after raw::poll is entered and restores that one (the parent: a
 * multi_thread worker runs inside the blocking task that launched it) a
 * little before it returns, so a sample or switch-out at either edge
 * reads the parent's id, which is never the poll's. */
static __always_inline void note_poll_task(__u32 tid, __u64 id)
{
	if (!id)
		return;
	struct poll_open *p = bpf_map_lookup_elem(&POLLS, &tid);
	if (p && !p->task_id && id != p->parent)
		p->task_id = id;
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
	e->holder_tid = 0;
	e->holder_tgid = 0;
	__builtin_memset(e->holder_comm, 0, sizeof(e->holder_comm));
	e->task_id = task_id_of(tid);
	e->syscall = -1;
	e->fd = -1;
	e->fd_type = 0;
	e->sock = 0;
}

static __always_inline void set_call(struct event *e, const struct sleep_call *c)
{
	e->syscall = c->nr;
	e->fd = c->fd;
	e->fd_type = c->fd_type;
	e->sock = c->sock;
}

static __always_inline void set_holder(struct event *e, const struct holder *h)
{
	if (!h)
		return;
	e->holder_tid = h->tid;
	e->holder_tgid = h->tgid;
	__builtin_memcpy(e->holder_comm, h->comm, sizeof(e->holder_comm));
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
				 struct offcpu *o, const struct holder *h)
{
	struct event *e = bpf_ringbuf_reserve(&EVENTS, sizeof(*e), 0);
	if (!e) {
		count(CNT_LOST, 1);
		return;
	}
	fill(e, kind, tid, start, dur, o->state);
	set_holder(e, h);
	if (kind == EV_BLOCKED)
		set_call(e, &o->call);
	e->frames = o->stack_bytes > 0 ? (__u32)((__u64)o->stack_bytes / 8) : 0;
	if (e->frames >= MAX_FRAMES)
		e->flags |= F_TRUNCATED;
	bpf_probe_read_kernel(e->stack, sizeof(e->stack), o->stack);
	bpf_ringbuf_submit(e, 0);
}

/* The current task's user registers, saved at its last kernel entry. */
static __always_inline int user_regs(__u64 *ip, __u64 *sp, __u64 *bp)
{
	struct task_struct *task = bpf_get_current_task_btf();
	long regs = bpf_task_pt_regs(task);
	if (!regs)
		return -1;
	if (bpf_probe_read_kernel(ip, 8, (void *)(regs + PT_RIP)) ||
	    bpf_probe_read_kernel(sp, 8, (void *)(regs + PT_RSP)) ||
	    bpf_probe_read_kernel(bp, 8, (void *)(regs + PT_RBP)))
		return -1;
	return 0;
}

/* The top of the current task's user stack into buf (COPY_ROOM bytes):
 * from sp to the next page boundary, then whole pages, until COPY_MAX or
 * the end of the stack's mapping (a thread's stack often ends a few KiB
 * above sp; page-sized reads never straddle the end). Returns the length. */
static __always_inline __u32 copy_user_stack(__u8 *buf, __u64 sp)
{
	__u32 len = 4096 - (__u32)(sp & 4095);
	if (len > 4096)
		len = 4096;
	if (bpf_probe_read_user(buf, len, (void *)sp))
		return 0;
#pragma unroll
	for (int i = 0; i < COPY_PAGES; i++) {
		__u32 at = len;
		if (at > COPY_MAX - 4096)
			break;
		if (bpf_probe_read_user(buf + at, 4096, (void *)(sp + at)))
			break;
		len = at + 4096;
	}
	return len;
}

/* Exact polls: in a stack copied (len bytes from sp) while a poll runs,
 * put back the return address its uretprobe replaced, so the unwinder
 * finds the poll's caller instead of the kernel's trampoline. */
static __always_inline void restore_poll_return(__u8 *buf, __u64 sp, __u32 len)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct poll_open *p = bpf_map_lookup_elem(&POLLS, &tid);
	if (!p || !p->ret_addr || p->ret_slot < sp)
		return;
	__u64 off = p->ret_slot - sp;
	if (off + 8 > len || off > COPY_ROOM - 8)
		return;
	bpf_probe_read_kernel(buf + off, 8, &p->ret_addr);
}

/* What an event is about (BPF calls take at most five arguments). */
struct span {
	__u32 kind;
	__u32 tid;
	__u64 start;
	__u64 dur;
	__u64 state;
	/* EV_BLOCKED: the call it slept in */
	struct sleep_call call;
};

/* An event carrying the current task's registers and the top of its user
 * stack. */
static __noinline int emit_copy(const struct span *s, const struct holder *h)
{
	struct event *e = bpf_ringbuf_reserve(&EVENTS, sizeof(struct event) + COPY_ROOM, 0);
	if (!e) {
		count(CNT_LOST, 1);
		return 1;
	}
	fill(e, s->kind, s->tid, s->start, s->dur, s->state);
	set_holder(e, h);
	if (s->kind == EV_BLOCKED)
		set_call(e, &s->call);
	if (user_regs(&e->ip, &e->sp, &e->bp)) {
		e->flags |= F_NO_REGS;
		bpf_ringbuf_submit(e, 0);
		return 1;
	}
	__u32 len = copy_user_stack((__u8 *)(e + 1), e->sp);
	if (!len)
		e->flags |= F_COPY_FAILED;
	else
		restore_poll_return((__u8 *)(e + 1), e->sp, len);
	e->stack_len = len;
	count(CNT_COPIED, len);
	bpf_ringbuf_submit(e, 0);
	return 1;
}

/* Copy mode: a preempted worker's stack, kept in RQCOPY until it runs. */
static __noinline int keep_preempted_stack(__u32 tid)
{
	struct stack_copy *c = bpf_map_lookup_elem(&RQCOPY, &tid);
	if (!c) {
		__u32 zero = 0;
		struct stack_copy *blank = bpf_map_lookup_elem(&COPY_SCRATCH, &zero);
		if (!blank)
			return 0;
		blank->len = 0;
		if (bpf_map_update_elem(&RQCOPY, &tid, blank, BPF_NOEXIST)) {
			count(CNT_NO_RQ_COPY, 1);
			return 0;
		}
		c = bpf_map_lookup_elem(&RQCOPY, &tid);
		if (!c)
			return 0;
	}
	c->flags = 0;
	c->len = 0;
	if (user_regs(&c->ip, &c->sp, &c->bp)) {
		c->flags = F_NO_REGS;
		return 0;
	}
	c->len = copy_user_stack(c->bytes, c->sp);
	if (!c->len)
		c->flags = F_COPY_FAILED;
	else
		restore_poll_return(c->bytes, c->sp, c->len);
	count(CNT_COPIED, c->len);
	return 0;
}

/* Copy mode: a run-queue wait of a preempted worker, with the stack kept
 * at its switch-out. Returns 0 when no stack was kept. */
static __noinline int emit_kept_runq(__u32 tid, __u64 start, __u64 dur, const struct holder *h)
{
	struct stack_copy *c = bpf_map_lookup_elem(&RQCOPY, &tid);
	if (!c || (!c->len && !c->flags))
		return 0;
	struct event *e = bpf_ringbuf_reserve(&EVENTS, sizeof(struct event) + COPY_ROOM, 0);
	if (!e) {
		count(CNT_LOST, 1);
		c->len = 0;
		return 1;
	}
	fill(e, EV_RUNQ, tid, start, dur, 0);
	set_holder(e, h);
	e->ip = c->ip;
	e->sp = c->sp;
	e->bp = c->bp;
	e->flags = c->flags;
	__u32 len = c->len;
	if (len > COPY_MAX)
		len = COPY_MAX;
	e->stack_len = len;
	bpf_probe_read_kernel((__u8 *)(e + 1), len, c->bytes);
	bpf_ringbuf_submit(e, 0);
	c->len = 0;
	c->flags = 0;
	return 1;
}

/* True for the x86_64 system calls whose first argument is a descriptor
 * that a sleep in them waits on (reads, writes, syncs, sockets, locks). */
static __always_inline int takes_fd(__s32 nr)
{
	switch (nr) {
	case 0: case 1: case 16: case 17: case 18: case 19: case 20: /* read .. writev */
	case 40: case 42: case 43: case 44: case 45: case 46: case 47: /* sendfile, sockets */
	case 72: case 73: case 74: case 75: case 77: /* fcntl, flock, fsync, fdatasync, ftruncate */
	case 217: case 232: case 275: case 277: case 281: case 285: case 288: /* .. accept4 */
	case 295: case 296: case 299: case 306: case 307: case 326: case 327: case 328:
	case 441:
		return 1;
	}
	return 0;
}

/* The file behind the current task's descriptor fd (0: none). */
static __always_inline struct file *file_of(__s32 fd)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct files_struct *files = 0;
	struct fdtable *fdt = 0;
	struct file **fds = 0;
	struct file *f = 0;
	unsigned int max = 0;
	if (fd < 0 || bpf_probe_read_kernel(&files, sizeof(files), &task->files) || !files ||
	    bpf_probe_read_kernel(&fdt, sizeof(fdt), &files->fdt) || !fdt ||
	    bpf_probe_read_kernel(&max, sizeof(max), &fdt->max_fds) || (unsigned int)fd >= max ||
	    bpf_probe_read_kernel(&fds, sizeof(fds), &fdt->fd) || !fds ||
	    bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]))
		return 0;
	return f;
}

/* The descriptor's type bits (i_mode >> 12; 0 when it cannot be read, or
 * for an anonymous inode: eventfd, epoll) and, for a socket, its family
 * and type (family << 16 | type). */
static __always_inline void describe_fd(struct sleep_call *c)
{
	struct file *f = file_of(c->fd);
	struct inode *ino = 0;
	unsigned short mode = 0;
	if (!f || bpf_probe_read_kernel(&ino, sizeof(ino), &f->f_inode) || !ino ||
	    bpf_probe_read_kernel(&mode, sizeof(mode), &ino->i_mode))
		return;
	c->fd_type = (__u32)mode >> 12;
	if (c->fd_type != 014)
		return;
	struct socket *sock = 0;
	struct sock *sk = 0;
	short type = 0;
	unsigned short family = 0;
	if (bpf_probe_read_kernel(&sock, sizeof(sock), &f->private_data) || !sock ||
	    bpf_probe_read_kernel(&type, sizeof(type), &sock->type) ||
	    bpf_probe_read_kernel(&sk, sizeof(sk), &sock->sk) || !sk ||
	    bpf_probe_read_kernel(&family, sizeof(family), &sk->__sk_common.skc_family))
		return;
	c->sock = ((__u32)family << 16) | (__u16)type;
}

/* The system call the current task sleeps in, when `asleep`: its number
 * (orig_ax), its descriptor and that descriptor's type. */
static __always_inline void sleep_call_of(struct sleep_call *c, int asleep)
{
	c->nr = -1;
	c->fd = -1;
	c->fd_type = 0;
	c->sock = 0;
	if (!asleep)
		return;
	struct task_struct *task = bpf_get_current_task_btf();
	long regs = bpf_task_pt_regs(task);
	__s64 nr = -1, arg0 = -1;
	if (!regs || bpf_probe_read_kernel(&nr, 8, (void *)(regs + PT_ORIG_RAX)))
		return;
	c->nr = (__s32)nr;
	if (!takes_fd(c->nr) || bpf_probe_read_kernel(&arg0, 8, (void *)(regs + PT_RDI)))
		return;
	c->fd = (__s32)arg0;
	describe_fd(c);
}

/* Copy mode: a sleep (and a run-queue wait after it) over the threshold
 * that no syscall exit picked up (the worker slept in a page fault, say)
 * goes out with the frame-pointer stack before its entry is reused. */
static __always_inline void flush_pending(__u32 tid, struct offcpu *o)
{
	if (o->pending_ns)
		emit(EV_BLOCKED, tid, o->pending_start, o->pending_ns, o, 0);
	if (o->pending_rq_ns)
		emit(EV_RUNQ, tid, o->pending_rq_start, o->pending_rq_ns, o, &o->pending_holder);
	o->pending_ns = 0;
	o->pending_rq_ns = 0;
}

static __always_inline void switch_out(struct switch_args *ctx, __u32 tid, __u64 now)
{
	count_switch(tid);
	/* The outgoing task is still current: keep its task id for the
	 * events of its time off CPU. */
	if (config(CFG_TASK_TLS, 0)) {
		__u64 id = tls_task_id();
		bpf_map_update_elem(&TASKS, &tid, &id, BPF_ANY);
		note_poll_task(tid, id);
	}
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
	o->pending_rq_start = 0;
	o->pending_rq_ns = 0;
	/* The outgoing task is still current: this is its user stack, and
	 * these its registers at the system call it sleeps in. */
	o->stack_bytes = bpf_get_stack(ctx, o->stack, sizeof(o->stack), BPF_F_USER_STACK);
	sleep_call_of(&o->call, (o->state & 0xff) != 0);
	bpf_map_update_elem(&OFFCPU, &tid, o, BPF_ANY);
	if (exact_polls()) {
		struct off_total *t = off_total_of(tid);
		if (t)
			t->outs++;
	}
	/* Preempted: a wait for the CPU may follow, and the stack must be
	 * read now, while this task is current. */
	if ((o->state & 0xff) == 0 && copy_mode())
		keep_preempted_stack(tid);
}

/* The task leaving the CPU at this switch (still current). */
static __always_inline void holder_of(struct switch_args *ctx, struct holder *h)
{
	h->tid = (__u32)ctx->prev_pid;
	h->tgid = (__u32)(bpf_get_current_pid_tgid() >> 32);
	__builtin_memcpy(h->comm, ctx->prev_comm, sizeof(h->comm));
}

/* A holder in the target: its own stack (it is current), for its culprit. */
static __always_inline void emit_holder_stack(struct switch_args *ctx, __u32 victim, __u64 start,
					      __u64 dur, const struct holder *h)
{
	if (!h->tid || h->tgid != (__u32)config(CFG_TARGET_TGID, 0))
		return;
	if (copy_mode()) {
		struct span s = {EV_HOLDER, victim, start, dur, 0};
		emit_copy(&s, h);
		return;
	}
	struct event *e = bpf_ringbuf_reserve(&EVENTS, sizeof(*e), 0);
	if (!e) {
		count(CNT_LOST, 1);
		return;
	}
	fill(e, EV_HOLDER, victim, start, dur, 0);
	set_holder(e, h);
	long n = bpf_get_stack(ctx, e->stack, sizeof(e->stack), BPF_F_USER_STACK);
	e->frames = n > 0 ? (__u32)((__u64)n / 8) : 0;
	bpf_ringbuf_submit(e, 0);
}

/* A run-queue wait over the threshold: the victim's event, then the
 * holder's stack when it is the target's. */
static __always_inline void report_runq(struct switch_args *ctx, __u32 tid, __u64 start,
					__u64 dur, struct offcpu *o, int slept)
{
	struct holder h = {};
	holder_of(ctx, &h);
	if (copy_mode() && slept) {
		/* The stack of the call it slept in is back at its syscall exit. */
		o->pending_rq_start = start;
		o->pending_rq_ns = dur;
		o->pending_holder = h;
	} else if (!copy_mode() || !emit_kept_runq(tid, start, dur, &h)) {
		emit(EV_RUNQ, tid, start, dur, o, &h);
	}
	emit_holder_stack(ctx, tid, start, dur, &h);
}

static __always_inline void switch_in(struct switch_args *ctx, __u32 tid, __u64 now)
{
	struct offcpu *o = bpf_map_lookup_elem(&OFFCPU, &tid);
	if (!o)
		return;
	__u64 thr = threshold_ns();
	if (exact_polls()) {
		struct off_total *t = off_total_of(tid);
		if (t) {
			t->ns += now - o->out_ns;
			t->ins++;
		}
	}
	/* Preempted (state 0): runnable from switch-out to now. Asleep: blocked
	 * until the wakeup (or now, if the wakeup was not seen), then runnable. */
	__u64 runnable_from = o->out_ns;
	int slept = (o->state & 0xff) != 0;
	if (slept) {
		__u64 woke = o->wake_ns ? o->wake_ns : now;
		if (woke - o->out_ns >= thr) {
			if (copy_mode()) {
				o->pending_start = o->out_ns;
				o->pending_ns = woke - o->out_ns;
			} else {
				emit(EV_BLOCKED, tid, o->out_ns, woke - o->out_ns, o, 0);
			}
		}
		runnable_from = woke;
	}
	/* A stack kept at a preemption whose wait stayed short is left to be
	 * overwritten by the next preemption. */
	if (now - runnable_from >= thr)
		report_runq(ctx, tid, runnable_from, now - runnable_from, o, slept);
	if (!o->pending_ns && !o->pending_rq_ns)
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
		switch_in(ctx, next, now);
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
	if (!o || (!o->pending_ns && !o->pending_rq_ns))
		return 0;
	if (o->pending_ns) {
		struct span s = {EV_BLOCKED, tid, o->pending_start, o->pending_ns, o->state, o->call};
		emit_copy(&s, 0);
	}
	if (o->pending_rq_ns) {
		struct span s = {EV_RUNQ, tid, o->pending_rq_start, o->pending_rq_ns, o->state};
		struct holder h = o->pending_holder;
		emit_copy(&s, &h);
	}
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
	if (config(CFG_TASK_TLS, 0))
		note_poll_task(tid, tls_task_id());
	if (copy_mode()) {
		struct span s = {EV_SAMPLE, tid, now, 0, 0};
		emit_copy(&s, 0);
		return 0;
	}
	struct event *e = bpf_ringbuf_reserve(&EVENTS, sizeof(*e), 0);
	if (!e) {
		count(CNT_LOST, 1);
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

/* Exact polls: a worker enters a task's poll. */
SEC("uprobe")
int hud_poll_enter(void *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	if (!bpf_map_lookup_elem(&WORKERS, &tid))
		return 0;
	/* A poll still open is replaced: its return went unseen (a panic
	 * unwound it, or its program was skipped), or this poll runs inside
	 * it (a LocalSet's tasks), which leaves the outer one untimed. */
	__u64 sp = *(__u64 *)((char *)ctx + PT_RSP);
	struct off_total *t = off_total_of(tid);
	if (!t)
		return 0;
	struct poll_open p = {};
	p.fn_ip = *(__u64 *)((char *)ctx + PT_RIP);
	p.ret_slot = sp;
	if (bpf_probe_read_user(&p.ret_addr, 8, (void *)sp))
		p.ret_addr = 0;
	p.off_ns = t->ns;
	p.parent = task_id_of(tid);
	p.seen_switches = t->outs + t->ins;
	p.kernel_switches = kernel_switches();
	/* Last, so that a preemption inside this program shows in the
	 * kernel's count rather than in the poll's length unseen. */
	p.start_ns = bpf_ktime_get_ns();
	bpf_map_update_elem(&POLLS, &tid, &p, BPF_ANY);
	return 0;
}

/* Exact polls: the poll returns; its time on CPU is its wall time less
 * the worker's time off CPU since its entry. */
SEC("uretprobe")
int hud_poll_exit(void *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct poll_open *p = bpf_map_lookup_elem(&POLLS, &tid);
	if (!p)
		return 0;
	/* The return of the poll that entry saw pops its return address: any
	 * other return (an inner poll's, or one whose entry went unseen) does
	 * not time it. */
	__u64 sp = *(__u64 *)((char *)ctx + PT_RSP);
	if (sp != p->ret_slot + 8) {
		bpf_map_delete_elem(&POLLS, &tid);
		return 0;
	}
	/* First, so that a preemption inside this program shows in the
	 * kernel's count rather than in the poll's length unseen. */
	__u64 now = bpf_ktime_get_ns();
	__u64 switches = kernel_switches() - p->kernel_switches;
	struct off_total *t = bpf_map_lookup_elem(&OFFNS, &tid);
	if (!t) {
		bpf_map_delete_elem(&POLLS, &tid);
		return 0;
	}
	__u64 wall = now - p->start_ns;
	__u64 off = t->ns - p->off_ns;
	__u64 seen = t->outs + t->ins - p->seen_switches;
	__u64 on = wall > off ? wall - off : 0;
	__u64 start = p->start_ns;
	__u64 fn_ip = p->fn_ip;
	__u64 task_id = p->task_id;
	bpf_map_delete_elem(&POLLS, &tid);
	if (on < threshold_ns())
		return 0;
	/* Each context switch is a switch-out and a switch-in. */
	if (seen != 2 * switches) {
		count(CNT_POLLS_UNTIMED, 1);
		return 0;
	}
	struct event *e = bpf_ringbuf_reserve(&EVENTS, sizeof(*e), 0);
	if (!e) {
		count(CNT_LOST, 1);
		return 0;
	}
	/* state: the poll's wall time; ip: which instance of raw::poll. */
	fill(e, EV_POLL, tid, start, on, wall);
	e->ip = fn_ip;
	e->task_id = task_id;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* Task ids: Tokio sets a thread's current task (its first argument, an
 * Option<task::Id>: 0 is None) as a poll begins and ends. */
SEC("uprobe")
int hud_task_id(void *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	if (!bpf_map_lookup_elem(&WORKERS, &tid))
		return 0;
	__u64 id = *(__u64 *)((char *)ctx + PT_RDI);
	bpf_map_update_elem(&TASKS, &tid, &id, BPF_ANY);
	note_poll_task(tid, id);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

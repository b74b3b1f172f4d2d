/* EpollStorm without runq: one producer makes FDS eventfds ready at once;
 * CONSUMERS processes each wait on all of them in an epoll instance of
 * their own (registered in consumer order, as runq does) and race to
 * drain them; the producer waits until all are drained, then repeats.
 * No telemetry, no cgroups, no affinity. Prints, per consumer, the fds
 * it drained and its off-CPU share of the run, then the spread of those
 * shares (max - min, percentage points): what runq's
 * max_offcpu_spread_pct measures for EpollStorm's consumers.
 * Usage: epoll_herd SECONDS CONSUMERS [FDS] */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONSUMERS 1024

struct shared {
	_Atomic unsigned drained;
	_Atomic int stop;
	unsigned long got[MAX_CONSUMERS];
	double offcpu[MAX_CONSUMERS];
};

static double clock_s(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void consume(struct shared *sh, int ep, int *fds, int idx)
{
	struct epoll_event evs[64];
	double start = clock_s(CLOCK_MONOTONIC);
	while (!atomic_load(&sh->stop)) {
		int n = epoll_wait(ep, evs, 64, 10);
		unsigned got = 0;
		for (int i = 0; i < n; i++) {
			uint64_t v;
			got += read(fds[evs[i].data.u32], &v, sizeof v) == 8;
		}
		if (got) {
			sh->got[idx] += got;
			atomic_fetch_add(&sh->drained, got);
		}
	}
	double wall = clock_s(CLOCK_MONOTONIC) - start;
	double cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	sh->offcpu[idx] = 100.0 * (wall - cpu) / wall;
}

static void produce(struct shared *sh, int *fds, int nfds, double until)
{
	uint64_t one = 1;
	while (clock_s(CLOCK_MONOTONIC) < until) {
		atomic_store(&sh->drained, 0);
		for (int i = 0; i < nfds; i++)
			if (write(fds[i], &one, sizeof one) != sizeof one)
				exit(1);
		while (atomic_load(&sh->drained) < (unsigned)nfds &&
		       clock_s(CLOCK_MONOTONIC) < until)
			;
	}
	atomic_store(&sh->stop, 1);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: epoll_herd SECONDS CONSUMERS [FDS]\n");
		return 2;
	}
	double secs = atof(argv[1]);
	int consumers = atoi(argv[2]), nfds = argc > 3 ? atoi(argv[3]) : 16;
	if (secs <= 0 || consumers < 1 || consumers > MAX_CONSUMERS || nfds < 1 || nfds > 1024) {
		fprintf(stderr, "epoll_herd: SECONDS > 0, 1 <= CONSUMERS <= %d, 1 <= FDS <= 1024\n",
			MAX_CONSUMERS);
		return 2;
	}
	struct shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int *fds = calloc(nfds, sizeof *fds);
	for (int i = 0; i < nfds; i++)
		fds[i] = eventfd(0, EFD_NONBLOCK);
	for (int c = 0; c < consumers; c++) {
		int ep = epoll_create1(0);
		for (int i = 0; i < nfds; i++) {
			struct epoll_event ev = { .events = EPOLLIN, .data.u32 = i };
			epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev);
		}
		if (fork() == 0) {
			consume(sh, ep, fds, c);
			_exit(0);
		}
		close(ep);
	}
	produce(sh, fds, nfds, clock_s(CLOCK_MONOTONIC) + secs);
	while (wait(NULL) > 0)
		;
	double lo = 100, hi = 0;
	for (int c = 0; c < consumers; c++) {
		printf("consumer %d: drained %lu, off-cpu %.1f%%\n", c, sh->got[c], sh->offcpu[c]);
		lo = sh->offcpu[c] < lo ? sh->offcpu[c] : lo;
		hi = sh->offcpu[c] > hi ? sh->offcpu[c] : hi;
	}
	printf("off-cpu spread: %.1f points\n", hi - lo);
	return 0;
}

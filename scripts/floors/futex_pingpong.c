/* The bare floor of a futex ping-pong: two processes take turns on one
 * shared word (FUTEX_WAIT with a 100 ms timeout / FUTEX_WAKE), the same
 * system calls as runq's FutexPingPong, with no telemetry. Prints round
 * trips per second.
 * Usage: futex_pingpong SECONDS */
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void turns(_Atomic unsigned *word, unsigned side, _Atomic int *stop,
		  unsigned long *count)
{
	while (!atomic_load(stop)) {
		unsigned turn;
		while ((turn = atomic_load(word)) != side) {
			if (atomic_load(stop))
				return;
			struct timespec t = { 0, 100000000 };
			syscall(SYS_futex, word, FUTEX_WAIT, turn, &t, NULL, 0);
		}
		atomic_store(word, 1 - side);
		syscall(SYS_futex, word, FUTEX_WAKE, 1, NULL, NULL, 0);
		(*count)++;
	}
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 3.0;
	struct shared { _Atomic unsigned word; _Atomic int stop; } *s =
		mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (s == MAP_FAILED)
		return 1;
	pid_t child = fork();
	unsigned long count = 0;
	if (child == 0) {
		turns(&s->word, 1, &s->stop, &count);
		_exit(0);
	}
	double t0 = now();
	while (now() - t0 < secs) {
		/* The parent plays side 0 in bursts, checking the time. */
		for (int i = 0; i < 1000 && !atomic_load(&s->stop); i++) {
			unsigned turn;
			while ((turn = atomic_load(&s->word)) != 0) {
				struct timespec t = { 0, 100000000 };
				syscall(SYS_futex, &s->word, FUTEX_WAIT, turn, &t, NULL, 0);
			}
			atomic_store(&s->word, 1);
			syscall(SYS_futex, &s->word, FUTEX_WAKE, 1, NULL, NULL, 0);
			count++;
		}
	}
	double elapsed = now() - t0;
	atomic_store(&s->stop, 1);
	atomic_store(&s->word, 1);
	syscall(SYS_futex, &s->word, FUTEX_WAKE, 1, NULL, NULL, 0);
	waitpid(child, NULL, 0);
	printf("%.0f\n", count / elapsed);
	return 0;
}

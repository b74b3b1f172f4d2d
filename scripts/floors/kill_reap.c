/* The floor of stopping a crowd: fork N spinning children, let them run
 * for SECONDS, then SIGKILL them all and reap them all, and print how long
 * the kill-and-reap took. What `runq run` does after a Ctrl-C, with no
 * reports, no telemetry and no cgroups. Run the parent at a real-time
 * priority (chrt -f 10) to match runq's boosted parent.
 * Usage: kill_reap N SECONDS */
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc != 3 || atoi(argv[1]) < 1 || atof(argv[2]) < 0) {
		fprintf(stderr, "usage: kill_reap N SECONDS\n");
		return 2;
	}
	int n = atoi(argv[1]);
	pid_t *pids = calloc(n, sizeof *pids);
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			/* A spinner at the parent's real-time priority would
			 * own the CPUs: the children run as SCHED_OTHER. */
			struct sched_param other = { 0 };
			volatile unsigned long x = 0;
			sched_setscheduler(0, SCHED_OTHER, &other);
			for (;;)
				x++;
		}
	}
	usleep((useconds_t)(atof(argv[2]) * 1e6));
	double t0 = now();
	for (int i = 0; i < n; i++)
		kill(pids[i], SIGKILL);
	double t1 = now();
	for (int i = 0; i < n; i++)
		waitpid(pids[i], NULL, 0);
	double t2 = now();
	printf("%d children: kill %.3f s, reap %.3f s, total %.3f s\n", n, t1 - t0, t2 - t1, t2 - t0);
	return 0;
}

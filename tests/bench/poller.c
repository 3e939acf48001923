/* cgprocfs-bench-poller: a monitor's reads, for bench-node.py. Reads each
 * file given (open, read to EOF, close) once every PERIOD_MS, as a
 * monitor polling once a second does, with no process made per read; the
 * first round after a delay drawn from SEED within one period, so that
 * many pollers do not read in step. On SIGTERM, prints "reads N failed F"
 * and exits 0.
 *
 *   cgprocfs-bench-poller PERIOD_MS SEED FILE...
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

/* One read of path to its end: 0, or -1 if it failed. */
static int read_whole(const char *path)
{
	static char buf[64 * 1024];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	close(fd);
	return n < 0 ? -1 : 0;
}

static void add_ns(struct timespec *t, long long ns)
{
	ns += t->tv_nsec;
	t->tv_sec += (time_t)(ns / 1000000000LL);
	t->tv_nsec = (long)(ns % 1000000000LL);
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s PERIOD_MS SEED FILE...\n", argv[0]);
		return 2;
	}
	const long long period_ns = atoll(argv[1]) * 1000000LL;
	srand((unsigned)atoi(argv[2]));
	struct sigaction sa = { .sa_handler = on_term };
	sigaction(SIGTERM, &sa, NULL);
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	add_ns(&next, period_ns > 0 ? (long long)rand() % period_ns : 0);
	unsigned long long reads = 0, failed = 0;
	while (!stop) {
		if (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) != 0)
			continue; /* a signal: look at stop */
		for (int i = 3; i < argc && !stop; i++) {
			failed += read_whole(argv[i]) < 0;
			reads++;
		}
		add_ns(&next, period_ns);
	}
	printf("reads %llu failed %llu\n", reads, failed);
	return 0;
}

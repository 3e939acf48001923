/* cgprocfs-hostile: what a misbehaving container does to the view, for
 * the benchmark and the tests that check the others do not suffer.
 *
 *   cgprocfs-hostile files N PATH   open PATH N times and hold the fds
 *   cgprocfs-hostile dirs N DIR     open DIR as a directory N times, hold them
 *   cgprocfs-hostile threads N PATH N threads open + read + close PATH in a loop
 *   cgprocfs-hostile smaps PROC     read PROC/<pid>/smaps_rollup of every pid
 *                                   listed in PROC, over and over
 *
 * Each prints "ready N" once it holds (or runs) what it was asked (N: the
 * fds it holds, or the threads started), then runs until killed. An open
 * refused is counted, not fatal: being refused is what a bound does. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char buf[1 << 16];

static void read_once(const char *path, char *into, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	while (read(fd, into, size) > 0)
		;
	close(fd);
}

static void *reader(void *path)
{
	static __thread char mine[1 << 14];
	for (;;)
		read_once(path, mine, sizeof(mine));
	return NULL;
}

static _Noreturn void wait_forever(void)
{
	for (;;)
		pause();
}

static _Noreturn void hold(long n, const char *path, int flags)
{
	long held = 0, refused = 0;
	for (long i = 0; i < n; i++) {
		if (open(path, flags | O_RDONLY | O_CLOEXEC) >= 0)
			held++;
		else
			refused++;
	}
	printf("ready %ld (refused %ld)\n", held, refused);
	fflush(stdout);
	wait_forever();
}

static _Noreturn void threads(long n, char *path)
{
	long started = 0;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (long i = 0; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, &attr, reader, path) == 0)
			started++;
	}
	printf("ready %ld\n", started);
	fflush(stdout);
	wait_forever();
}

static int smaps(const char *proc)
{
	char path[512];
	for (int first = 1;; first = 0) {
		DIR *d = opendir(proc);
		if (!d) {
			fprintf(stderr, "cgprocfs-hostile: %s: %s\n", proc, strerror(errno));
			return 1;
		}
		long n = 0;
		struct dirent *de;
		while ((de = readdir(d))) {
			if (de->d_name[0] < '1' || de->d_name[0] > '9')
				continue;
			snprintf(path, sizeof(path), "%s/%s/smaps_rollup", proc, de->d_name);
			read_once(path, buf, sizeof(buf));
			n++;
		}
		closedir(d);
		if (first) {
			printf("ready %ld\n", n);
			fflush(stdout);
		}
	}
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "files") == 0)
		hold(atol(argv[2]), argv[3], 0);
	if (argc == 4 && strcmp(argv[1], "dirs") == 0)
		hold(atol(argv[2]), argv[3], O_DIRECTORY);
	if (argc == 4 && strcmp(argv[1], "threads") == 0)
		threads(atol(argv[2]), argv[3]);
	if (argc == 3 && strcmp(argv[1], "smaps") == 0)
		return smaps(argv[2]);
	fprintf(stderr, "usage: cgprocfs-hostile files|dirs|threads N PATH, or smaps PROC\n");
	return 2;
}

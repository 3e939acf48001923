/* Watching processes whose /proc/<pid> entry the kernel keeps cached, so
 * the entry can be dropped the moment the process exits. One pidfd per
 * process, one epoll set, one thread (owned by daemon/) in pidwatch_run. */
#pragma once

#include <sys/types.h>

struct pidwatch;

typedef void (*pidwatch_exit_fn)(void *data, pid_t pid);

/* on_exit runs on the watching thread, once per watched process that exits. 0 or -errno. */
int pidwatch_new(pidwatch_exit_fn on_exit, void *data, struct pidwatch **ret);
void pidwatch_free(struct pidwatch *w);

/* Take over pidfd, a pidfd of pid. If pid is already watched, the older
 * pidfd is kept unless its process has exited (pid recycled). */
void pidwatch_adopt(struct pidwatch *w, pid_t pid, int pidfd);

/* Serve until pidwatch_stop: 0, or -errno if watching failed. */
int pidwatch_run(struct pidwatch *w);
void pidwatch_stop(struct pidwatch *w);

/* Watching the processes whose proc/<pid> entries the kernel caches, so
 * the entry can be dropped the moment the process exits. One pidfd per
 * process and view session (the owner), one epoll set for all, one thread
 * (owned by daemon/) in pidwatch_run. */
#pragma once

#include <sys/types.h>

struct pidwatch;

/* Called from pidwatch_run, and only there, when the process an owner
 * cached exited or could not be watched. */
typedef void (*pidwatch_exit_fn)(void *owner, pid_t pid);

/* 0 or -errno. */
int pidwatch_new(pidwatch_exit_fn on_exit, struct pidwatch **ret);
void pidwatch_free(struct pidwatch *w);

/* Take over pidfd, a pidfd of the process owner calls pid. If owner
 * already watches pid, the older pidfd is kept unless its process has
 * exited (pid recycled). If pidfd cannot be watched, pidwatch_run soon
 * calls on_exit for it, as for an exit. Never waits for on_exit. Not for
 * an owner once pidwatch_forget_owner was called for it. */
void pidwatch_adopt(struct pidwatch *w, void *owner, pid_t pid, int pidfd);

/* Stop watching for owner: once this returns, on_exit is not called,
 * nor running, for it (it waits for a running one: the dispatch lock). */
void pidwatch_forget_owner(struct pidwatch *w, void *owner);

/* Call fn for every watch, with the watch's lock held: fn must not call
 * into w. The pidfd stays w's. */
void pidwatch_foreach(struct pidwatch *w, void (*fn)(void *owner, pid_t pid, int pidfd, void *data),
		      void *data);

/* Serve until pidwatch_stop: 0, or -errno if watching failed. */
int pidwatch_run(struct pidwatch *w);
void pidwatch_stop(struct pidwatch *w);

/* What the keeper process holds (keeper.c), and what it does once no
 * daemon came for it within --keeper-wait (keeper-calls.c). */
#pragma once

#include <glib.h>
#include <sys/types.h>

/* One session it holds. */
struct kept {
	int fuse_fd;
	int ns_fd;      /* -1 for the host view */
	unsigned minor; /* the FUSE protocol minor version the kernel spoke to it */
};

void kept_free(gpointer p);

/* Everything the keeper holds. */
struct held {
	GHashTable *sessions; /* id (the host's 0) -> struct kept */
	int listener;         /* the control socket's listening socket, or -1 */
	int seccomp_listeners[2]; /* the seccomp listeners', or -1 */
	GArray *notify;       /* int: containers' seccomp notification fds (LXC monitors' connections too) */
	int inflight;         /* the daemon's requests in hand (inflight.h), or -1 */
	const char *path;     /* where new daemons find it, once published */
	int listen_fd;        /* listening there; -1 before "publish" */
	ino_t ino;            /* of its socket at path */
};

/* No daemon came within --keeper-wait, or the daemon stopped without
 * keeping its views (why, said in one line): the views end (their fds closed:
 * ENOTCONN), as does everything else held, and the keeper is found no
 * more; but it answers each notification of the containers' seccomp fds
 * with SECCOMP_USER_NOTIF_FLAG_CONTINUE (the kernel's own answer) until
 * every process of their filters is gone: closed, they would make each
 * notified call fail with ENOSYS (sched_getaffinity: Python raises, Go and
 * musl count 1 CPU). LXC monitors' connections are closed (LXC answers
 * itself). Returns 1 once they are gone. */
int keeper_let_calls_through(struct held *h, const char *why);

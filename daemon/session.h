/* One FUSE session: a view served on one /dev/fuse connection, the host's
 * or a container's, from its mount (or takeover) to its end. It is the one
 * object a session is: what libfuse needs (its userdata is the embedded
 * ops_state), the view it serves and so its pid namespace, the protocol
 * version the kernel spoke, and how many workers are in it. A handover and
 * the keeper take from it what they send (session_fuse_fd, session_ns_fd,
 * session_proto_minor).
 *
 * The server is every session of one daemon: one pool of workers, bound
 * by the CPUs and not by the sessions, serves them all (see server.c);
 * it counts their requests, and drains them all at a handover. */
#pragma once

#include "notifier.h"
#include "ops.h"

#include <glib.h>

struct server;
struct session;

/* Made once, before any session; notifications are written through
 * notifier (NULL: directly, see notifier.h). Freed after every session
 * has ended. */
struct server *server_new(struct notifier *notifier);
void server_free(struct server *sv); /* stops the workers first (server_pause) */

/* Stop the workers between requests (and refuse sessions that start),
 * so that another daemon holding the same /dev/fuse fds answers the rest
 * and nothing changes here meanwhile: TRUE once no worker is left (waits
 * at most 10 s; every half second that some are still busy, the workers
 * serve for a moment, as the busy one may wait for a request of theirs). */
gboolean server_pause(struct server *sv);
/* Serve again after server_pause (a handover that failed). */
void server_resume(struct server *sv);
/* server_pause for good: once no worker is left, every session ends with
 * -ECANCELED. FALSE if a worker is still answering after 10 s. */
gboolean server_drain(struct server *sv);

/* The memfd of the requests in hand (inflight.h), for the keeper: -1 if
 * none are kept. */
int server_inflight_fd(struct server *sv);
/* fd (taken; -1: none): the requests in hand of the dead daemon whose
 * keeper the sessions are taken from, answered by each one taken up with
 * resend where the kernel cannot resend them. Before any such session
 * starts. */
void server_answer_taken_from(struct server *sv, int fd);

/* cgprocfs_requests_total, by operation, over every session (Prometheus text). */
void server_render_stats(struct server *sv, GString *out);

/* A session serving view, not mounted yet: fuse_options as for
 * fuse_session_new ("-o" and its value; NULL: none). watch: where the
 * session's cached processes are watched, with the session's ops_state as
 * their owner. proc_fd: where callers are looked up. NULL if libfuse
 * refused the options. */
struct session *session_new(struct server *sv, struct view *view, struct pidwatch *watch, int proc_fd,
			    const char *fuse_options);
/* From TRUE to FALSE, this thread's notifications to the kernel are sent
 * in batches (notifier.h): for thousands at once. */
void session_batch_notifications(struct session *s, gboolean on);
/* Mount it at mountpoint: 0 or -1 (libfuse said why). */
int session_mount(struct session *s, const char *mountpoint);
/* Take up fuse_fd (taken on success, left to the caller on failure), the
 * /dev/fuse fd of a mount made elsewhere. proto_minor 0: a new mount, whose INIT is still to come.
 * Otherwise a session that another daemon served until now: the kernel's
 * INIT was answered by that daemon with protocol minor version
 * proto_minor, so one is made up with it; resend: that daemon died, and
 * the kernel is asked to send again the requests it had taken and not
 * answered (once this session serves). 0 or -errno. */
int session_take_up(struct session *s, int fuse_fd, unsigned proto_minor, gboolean resend);
/* Have the kernel send again the requests that a daemon which died (or
 * was stopped) had taken from s and not answered: FALSE if it cannot
 * (before Linux 6.9). */
gboolean session_resend(struct session *s);

/* How a session ended: 0 (its mount went away, or session_exit),
 * -ECANCELED (drained), or -errno. Called once, by a worker or by the
 * thread that ended it, with no lock held; it may free the session. */
typedef void (*session_ended_fn)(void *data, int error);
/* Have the server's workers serve s (its fd made non-blocking) until it
 * ends, then call ended(data, ...), possibly before this returns. 0, or
 * -ECANCELED (draining) or -errno, and then ended is not called. */
int session_start(struct session *s, session_ended_fn ended, void *data);
/* session_start, and wait for the end: 0, -ECANCELED or -errno. Meanwhile
 * the waiting thread, which never acts as a caller, replaces a worker
 * that ended unsound. */
int session_serve(struct session *s);
/* Unmount it, if libfuse mounted it, and end it once the workers in it
 * have answered (even if binds elsewhere keep the connection up). */
void session_exit(struct session *s);
/* Free a session that is not served (any more). Its process watches are
 * forgotten first: no exit callback runs for it afterwards. */
void session_free(struct session *s);

/* Watch for s the processes handed over with session number index (those
 * of h->watches whose session it is; their pidfds are taken), before it
 * serves: if it ends at once, session_free forgets them. */
struct handover;
void session_adopt_watches(struct session *s, struct handover *h, unsigned index);

int session_fuse_fd(const struct session *s);
/* A container's pid namespace, or -1 for the daemon's own. */
int session_ns_fd(const struct session *s);
/* The FUSE protocol minor version the kernel spoke (0 before INIT). */
unsigned session_proto_minor(const struct session *s);
/* The owner of the session's process watches (pidwatch). */
struct ops_state *session_ops(struct session *s);

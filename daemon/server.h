/* The insides of the server and of its sessions, shared by server.c (the
 * pool of workers that serves every session) and session.c (one FUSE
 * session's life) only. */
#pragma once

#include "session.h"
#include "share.h"

#include <fuse_lowlevel.h>

/* Requests taken, by opcode (the last slot: any other). */
#define COUNTED_OPCODES 64

struct server {
	struct notifier *notifier;
	struct inflight *inflight; /* the requests in hand (NULL: not kept) */
	struct inflight *replay;   /* a dead daemon's, answered by sessions taken up from it (NULL: none) */
	struct triggers *triggers; /* every session's PSI triggers, their records in inflight's memfd */
	GMutex lock;         /* guards everything below but requests */
	GCond changed;       /* workers, respawn or a session's end changed */
	int epoll_fd;
	int wake_fd;         /* eventfd, readable once draining */
	GHashTable *by_id;   /* session id -> struct session*: those served */
	guint64 last_id;
	unsigned workers, idle, max_workers;
	guint64 answered;    /* requests answered: the watchdog sees progress */
	guint64 stall_spawns; /* workers the watchdog made */
	guint64 holds;       /* sessions held (RESERVE_WORKERS) */
	guint64 stall_frees; /* held sessions the watchdog freed */
	guint64 low_answers; /* requests answered at BUSY_NICE */
	struct share_totals shares;
	GQueue held;         /* sessions held, first held first */
	int nice;            /* the daemon's, which workers go back to */
	/* A worker ended unsound (see serve_one): a thread that never acts as
	 * a caller makes the next one (session_serve's, or a sound worker). */
	gboolean respawn;
	gboolean draining;
	size_t buffer_size;
	/* Added to atomically by every worker, read without a lock. */
	guint64 requests[COUNTED_OPCODES];
};

/* Freed by the owner of the session (the host's lifecycle, or a
 * container's end callback), once it has ended. */
struct session {
	struct ops_state ops; /* libfuse's userdata */
	struct fuse_session *se;
	struct server *server;
	gboolean resend; /* taken up from a dead daemon: resend on serving */
	guint64 key;     /* inflight_key: whose requests in hand are its */
	/* Under server->lock from session_start on: */
	guint64 id;        /* in server->by_id while served (0: not yet) */
	unsigned busy;     /* workers reading or answering a request of it */
	gboolean armed;    /* its fd is armed in the epoll set */
	gboolean held;     /* in server->held, not armed */
	guint64 answered;  /* its requests answered */
	/* The watchdog's: answered when it last saw s held (stall_seen). */
	guint64 stall_mark;
	gboolean stall_seen;
	/* Held with none of its requests answered for a while: not held
	 * again until one is (a request in hand may wait for the next). */
	gboolean stalled;
	struct share_windows share;
	gboolean stopping; /* no more requests: it ends once busy is 0 */
	gboolean starting; /* server_add to server_started: it cannot end */
	gboolean ended;
	int error;
	session_ended_fn ended_fn;
	void *ended_data;
};

/* libfuse's userdata is the session (io_writev). */
G_STATIC_ASSERT(G_STRUCT_OFFSET(struct session, ops) == 0);

/* session_start's part: serve s on the pool, its fd (non-blocking) in the
 * epoll set; ended(data, error) once it ends, which is not before
 * server_started (s stays the caller's until then). 0, -ECANCELED while
 * the server is paused, or -errno. */
int server_add(struct server *sv, struct session *s, session_ended_fn ended, void *data);
/* The end of session_start after server_add's 0: s may end (and be freed) from here on. */
void server_started(struct server *sv, struct session *s);
/* session_serve's part: be the pool's watchdog until s ends; s's error. */
int server_watch(struct server *sv, struct session *s);
/* session_exit's part: no more requests of s; it ends once no worker is in it. */
void server_end(struct server *sv, struct session *s);

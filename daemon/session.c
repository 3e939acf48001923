/* FUSE sessions and the server of them all. Each session has its own pool
 * of worker threads, grown while all of them are busy, and its own lock;
 * a drain stops every session's workers between requests, so that a
 * handover to another daemon loses no request. */
#include "session.h"

#include "caller.h"
#include "cleanup.h"
#include "control.h"
#include "metrics.h"
#include "view.h"

#include <errno.h>
#include <fuse_lowlevel.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_WORKERS 16
#define DRAIN_WAIT_US (10 * G_USEC_PER_SEC)
/* Requests taken, by opcode (the last slot: any other). */
#define COUNTED_OPCODES 64

struct server {
	GMutex lock;         /* guards sessions and draining */
	GPtrArray *sessions; /* struct session*: those being served */
	gboolean draining;
	/* Added to atomically by every worker, read without a lock. */
	guint64 requests[COUNTED_OPCODES];
};

/* Freed by the owner of the session (the host's lifecycle, or a
 * container's session thread), after session_serve has returned. */
struct session {
	struct ops_state ops; /* libfuse's userdata */
	struct fuse_session *se;
	struct server *server;
	gboolean resend; /* taken up from a dead daemon: resend on serving */
	GMutex lock;       /* guards workers, idle, running, draining, respawn, error */
	GCond changed;     /* workers or running changed */
	unsigned workers, idle;
	GPtrArray *running; /* struct worker*: threads a drain interrupts */
	gboolean draining;
	/* A worker ended unsound (see serve_one): the session's own thread,
	 * which never acts as a caller, makes the next one. */
	gboolean respawn;
	int error;
};

/* A worker thread; freed by itself as it ends. */
struct worker {
	struct session *s;
	pthread_t thread;
	gboolean waiting; /* for a request; under s->lock */
};

static void interrupt(int sig)
{
}

struct server *server_new(void)
{
	struct sigaction sa = { .sa_handler = interrupt }; /* no SA_RESTART: reads end with EINTR */
	struct server *sv = g_new0(struct server, 1);

	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR2, &sa, NULL);
	g_mutex_init(&sv->lock);
	sv->sessions = g_ptr_array_new();
	return sv;
}

void server_free(struct server *sv)
{
	if (!sv)
		return;
	g_ptr_array_unref(sv->sessions);
	g_mutex_clear(&sv->lock);
	g_free(sv);
}

static void count_request(struct server *sv, const struct fuse_buf *buf)
{
	if (buf->mem && !(buf->flags & FUSE_BUF_IS_FD) && buf->size >= sizeof(struct fuse_in_header)) {
		uint32_t op = ((const struct fuse_in_header *)buf->mem)->opcode;
		__atomic_fetch_add(&sv->requests[MIN(op, COUNTED_OPCODES - 1)], 1, __ATOMIC_RELAXED);
	}
}

static void *worker_main(void *data);

/* Under s->lock. */
static void spawn(struct session *s)
{
	pthread_attr_t attr;
	struct worker *w = g_new0(struct worker, 1);

	w->s = s;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&w->thread, &attr, worker_main, w) == 0) {
		s->workers++;
		s->idle++;
		g_ptr_array_add(s->running, w);
	} else {
		g_free(w);
	}
	pthread_attr_destroy(&attr);
}

/* Take one request and answer it: FALSE once the worker should end.
 * Called and returns with s->lock held. */
static gboolean serve_one(struct worker *w, struct fuse_buf *buf)
{
	struct session *s = w->s;

	/* Only a worker waiting here is interrupted by a drain (EINTR, before
	 * it takes a request); one answering a request is not. */
	w->waiting = TRUE;
	g_mutex_unlock(&s->lock);
	int r = fuse_session_receive_buf(s->se, buf);
	g_mutex_lock(&s->lock);
	w->waiting = FALSE;
	if (r == -EINTR)
		return TRUE;
	if (r <= 0) { /* 0: the mount is gone */
		if (r < 0 && s->error == 0)
			s->error = r;
		fuse_session_exit(s->se);
		return FALSE;
	}
	count_request(s->server, buf);
	if (--s->idle == 0 && s->workers < MAX_WORKERS)
		spawn(s);
	g_mutex_unlock(&s->lock);
	fuse_session_process_buf(s->se, buf);
	/* A thread that could not take the daemon's credentials back after
	 * acting as a caller serves no more (the others, and new ones, do). */
	gboolean sound = caller_restored() == 0;
	g_mutex_lock(&s->lock);
	s->idle++;
	return sound;
}

static void *worker_main(void *data)
{
	struct worker *w = data;
	struct session *s = w->s;
	struct fuse_buf buf = { 0 };

	g_mutex_lock(&s->lock);
	while (!s->draining && !fuse_session_exited(s->se)) {
		if (!serve_one(w, &buf)) {
			s->respawn = s->error == 0 && !fuse_session_exited(s->se);
			break;
		}
	}
	free(buf.mem);
	s->workers--;
	s->idle--;
	g_ptr_array_remove_fast(s->running, w);
	g_cond_broadcast(&s->changed);
	g_mutex_unlock(&s->lock);
	g_free(w);
	return NULL;
}

/* Signal s's workers that wait for a request: FALSE once none is left.
 * Under s->lock. */
static gboolean interrupt_waiting(struct session *s)
{
	for (guint i = 0; i < s->running->len; i++) {
		const struct worker *w = g_ptr_array_index(s->running, i);
		if (w->waiting)
			pthread_kill(w->thread, SIGUSR2);
	}
	return s->running->len == 0;
}

gboolean server_drain(struct server *sv)
{
	gint64 deadline = g_get_monotonic_time() + DRAIN_WAIT_US;
	gboolean done = FALSE;

	/* Held throughout: no session starts or ends its registration meanwhile. */
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&sv->lock);
	sv->draining = TRUE;
	/* Every session at once, and again until every worker has seen the
	 * flag: one may be between its check and its read when a signal
	 * comes, and one stuck in a request must not keep the others'
	 * workers serving. */
	for (guint i = 0; i < sv->sessions->len; i++) {
		struct session *s = g_ptr_array_index(sv->sessions, i);
		G_GNUC_UNUSED g_autoptr(GMutexLocker) session_locker = g_mutex_locker_new(&s->lock);
		s->draining = TRUE;
	}
	while (!done && g_get_monotonic_time() < deadline) {
		done = TRUE;
		for (guint i = 0; i < sv->sessions->len; i++) {
			struct session *s = g_ptr_array_index(sv->sessions, i);
			G_GNUC_UNUSED g_autoptr(GMutexLocker) session_locker = g_mutex_locker_new(&s->lock);
			if (!interrupt_waiting(s)) {
				done = FALSE;
				g_cond_wait_until(&s->changed, &s->lock,
						  g_get_monotonic_time() + 10 * G_TIME_SPAN_MILLISECOND);
			}
		}
	}
	return done;
}

void server_render_stats(struct server *sv, GString *out)
{
	static const struct {
		uint32_t opcode;
		const char *name;
	} ops[] = {
		{ FUSE_LOOKUP, "lookup" },   { FUSE_GETATTR, "getattr" },   { FUSE_READLINK, "readlink" },
		{ FUSE_ACCESS, "access" },   { FUSE_OPEN, "open" },         { FUSE_READ, "read" },
		{ FUSE_RELEASE, "release" }, { FUSE_OPENDIR, "opendir" },   { FUSE_READDIR, "readdir" },
		{ FUSE_RELEASEDIR, "releasedir" }, { FUSE_FORGET, "forget" }, { FUSE_BATCH_FORGET, "batch_forget" },
		{ FUSE_STATFS, "statfs" },   { FUSE_INTERRUPT, "interrupt" },
	};
	guint64 counted = 0, all = 0;

	metrics_header(out, "cgprocfs_requests_total", "counter", "FUSE requests taken, by operation, over every view.");
	for (size_t i = 0; i < G_N_ELEMENTS(ops); i++) {
		guint64 n = __atomic_load_n(&sv->requests[ops[i].opcode], __ATOMIC_RELAXED);
		counted += n;
		g_autofree char *label = g_strdup_printf("op=\"%s\"", ops[i].name);
		metrics_sample(out, "cgprocfs_requests_total", label, n);
	}
	for (size_t i = 0; i < COUNTED_OPCODES; i++)
		all += __atomic_load_n(&sv->requests[i], __ATOMIC_RELAXED);
	metrics_sample(out, "cgprocfs_requests_total", "op=\"other\"", all - counted);
}

struct session *session_new(struct server *sv, struct view *view, struct pidwatch *watch, int proc_fd,
			    const char *fuse_options)
{
	char *argv[] = { "cgprocfs", "-o", (char *)fuse_options, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(fuse_options ? 3 : 1, argv);
	struct session *s = g_new0(struct session, 1);

	s->ops = (struct ops_state){ .view = view, .watch = watch, .proc_fd = proc_fd };
	ops_state_init(&s->ops);
	s->se = fuse_session_new(&args, &ops_table, sizeof(ops_table), &s->ops);
	fuse_opt_free_args(&args);
	if (!s->se) {
		ops_state_clear(&s->ops);
		g_free(s);
		return NULL;
	}
	s->ops.session = s->se;
	s->server = sv;
	g_mutex_init(&s->lock);
	g_cond_init(&s->changed);
	s->running = g_ptr_array_new();
	return s;
}

int session_mount(struct session *s, const char *mountpoint)
{
	return fuse_session_mount(s->se, mountpoint) == 0 ? 0 : -1;
}

/* The unique id of the INIT made up by session_take_up. Its answer goes to
 * the kernel, which knows no request of that id (ids are allocated from 1
 * upwards, two at a time) and drops it with ENOENT, which libfuse ignores. */
#define RESUME_UNIQUE (UINT64_C(1) << 62)

int session_take_up(struct session *s, int fuse_fd, unsigned proto_minor, gboolean resend)
{
	char dev[32];
	struct {
		struct fuse_in_header h;
		struct fuse_init_in in;
	} msg = {
		.h = { .len = sizeof(msg), .opcode = FUSE_INIT, .unique = RESUME_UNIQUE },
		/* MAX_PAGES as the kernel offered it (7.28 on): libfuse then
		 * reads requests into buffers as large as the old daemon
		 * told the kernel to fill; smaller ones get EINVAL. */
		.in = { .major = FUSE_KERNEL_VERSION, .minor = proto_minor,
			.flags = proto_minor >= 28 ? FUSE_MAX_PAGES : 0 },
	};
	const struct fuse_buf buf = { .size = sizeof(msg), .mem = &msg };

	/* libfuse takes a /dev/fd/N "mountpoint" as the fd of a mount made elsewhere. */
	snprintf(dev, sizeof(dev), "/dev/fd/%d", fuse_fd);
	if (fuse_session_mount(s->se, dev) != 0)
		return -EINVAL;
	if (proto_minor > 0)
		fuse_session_process_buf(s->se, &buf);
	s->resend = resend;
	return 0;
}

/* FUSE 7.40 (Linux 6.9); older headers lack it. */
#define NOTIFY_RESEND 7

/* Have the kernel send again the requests a dead daemon had taken. */
static void resend_requests(struct session *s)
{
	const struct fuse_out_header h = { .len = sizeof(h), .error = NOTIFY_RESEND, .unique = 0 };
	if (write(fuse_session_fd(s->se), &h, sizeof(h)) != (ssize_t)sizeof(h))
		g_warning("the kernel cannot resend the requests the dead daemon had taken (%s): "
			  "those wait until their callers are killed", g_strerror(errno));
}

int session_serve(struct session *s)
{
	struct server *sv = s->server;

	/* Even if it is not served here: whoever serves it next needs them. */
	if (s->resend)
		resend_requests(s);
	g_mutex_lock(&sv->lock);
	gboolean drained = sv->draining;
	if (!drained)
		g_ptr_array_add(sv->sessions, s);
	g_mutex_unlock(&sv->lock);
	if (drained)
		return -ECANCELED;

	g_mutex_lock(&s->lock);
	spawn(s);
	for (;;) {
		if (s->respawn && !s->draining && !fuse_session_exited(s->se))
			spawn(s);
		s->respawn = FALSE;
		if (s->workers == 0)
			break;
		g_cond_wait(&s->changed, &s->lock);
	}
	int r = s->draining && s->error == 0 && !fuse_session_exited(s->se) ? -ECANCELED : s->error;
	g_mutex_unlock(&s->lock);

	g_mutex_lock(&sv->lock);
	g_ptr_array_remove_fast(sv->sessions, s);
	g_mutex_unlock(&sv->lock);
	return r;
}

void session_exit(struct session *s)
{
	fuse_session_exit(s->se);
	fuse_session_unmount(s->se);
}

void session_free(struct session *s)
{
	if (!s)
		return;
	pidwatch_forget_owner(s->ops.watch, &s->ops);
	fuse_session_destroy(s->se);
	ops_state_clear(&s->ops);
	g_ptr_array_unref(s->running);
	g_cond_clear(&s->changed);
	g_mutex_clear(&s->lock);
	g_free(s);
}

void session_adopt_watches(struct session *s, struct handover *h, unsigned index)
{
	for (guint i = 0; h && i < h->watches->len; i++) {
		struct handover_watch *w = &g_array_index(h->watches, struct handover_watch, i);
		if (w->session == index && w->pidfd >= 0)
			pidwatch_adopt(s->ops.watch, &s->ops, w->pid, steal_fd(&w->pidfd));
	}
}

int session_fuse_fd(const struct session *s)
{
	return fuse_session_fd(s->se);
}

int session_ns_fd(const struct session *s)
{
	return view_pid_ns_fd(s->ops.view);
}

unsigned session_proto_minor(const struct session *s)
{
	return s->ops.proto_minor;
}

struct ops_state *session_ops(struct session *s)
{
	return &s->ops;
}

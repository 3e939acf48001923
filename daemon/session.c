/* Serving FUSE sessions: a pool of worker threads per session, grown while
 * all of its workers are busy, that can all be stopped between requests
 * (serve_drain: a handover to another daemon loses no request). */
#include "daemon.h"
#include "metrics.h"

#include <errno.h>
#include <fuse_lowlevel.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_WORKERS 16
#define DRAIN_WAIT_US (10 * G_USEC_PER_SEC)

struct serving {
	struct fuse_session *se;
	unsigned workers, idle;
	int error;
};

struct worker {
	struct serving *sv;
	pthread_t thread;
	gboolean waiting; /* for a request */
};

static GMutex lock; /* guards everything below and every struct serving */
static GCond changed;
static gboolean draining;
static GHashTable *running; /* struct worker*: threads to interrupt on drain */

/* Requests taken, by opcode (the last slot: any other); under lock. */
#define COUNTED_OPCODES 64
static guint64 requests[COUNTED_OPCODES];

static void *worker_main(void *data);

/* Under lock. */
static void spawn(struct serving *sv)
{
	pthread_attr_t attr;
	struct worker *w = g_new0(struct worker, 1);

	w->sv = sv;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&w->thread, &attr, worker_main, w) == 0) {
		sv->workers++;
		sv->idle++;
		g_hash_table_add(running, w);
	} else {
		g_free(w);
	}
	pthread_attr_destroy(&attr);
}

static void *worker_main(void *data)
{
	struct worker *w = data;
	struct serving *sv = w->sv;
	struct fuse_buf buf = { 0 };

	g_mutex_lock(&lock);
	for (;;) {
		if (draining || fuse_session_exited(sv->se))
			break;
		/* Only a worker waiting here is interrupted by a drain (EINTR,
		 * before it takes a request); one answering a request is not. */
		w->waiting = TRUE;
		g_mutex_unlock(&lock);
		int r = fuse_session_receive_buf(sv->se, &buf);
		g_mutex_lock(&lock);
		w->waiting = FALSE;
		if (r == -EINTR)
			continue;
		if (r <= 0) { /* 0: the mount is gone */
			if (r < 0 && sv->error == 0)
				sv->error = r;
			fuse_session_exit(sv->se);
			break;
		}
		if (buf.mem && !(buf.flags & FUSE_BUF_IS_FD) && buf.size >= sizeof(struct fuse_in_header)) {
			uint32_t op = ((const struct fuse_in_header *)buf.mem)->opcode;
			requests[MIN(op, COUNTED_OPCODES - 1)]++;
		}
		if (--sv->idle == 0 && sv->workers < MAX_WORKERS)
			spawn(sv);
		g_mutex_unlock(&lock);
		fuse_session_process_buf(sv->se, &buf);
		g_mutex_lock(&lock);
		sv->idle++;
	}
	free(buf.mem);
	sv->workers--;
	sv->idle--;
	g_hash_table_remove(running, w);
	g_cond_broadcast(&changed);
	g_mutex_unlock(&lock);
	g_free(w);
	return NULL;
}

static void interrupt(int sig)
{
}

void serve_init(void)
{
	struct sigaction sa = { .sa_handler = interrupt }; /* no SA_RESTART: reads end with EINTR */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR2, &sa, NULL);
	running = g_hash_table_new(g_direct_hash, g_direct_equal);
}

int session_serve(struct fuse_session *se)
{
	struct serving sv = { .se = se };

	g_mutex_lock(&lock);
	if (!draining)
		spawn(&sv);
	while (sv.workers > 0)
		g_cond_wait(&changed, &lock);
	int r = draining && sv.error == 0 && !fuse_session_exited(se) ? -ECANCELED : sv.error;
	g_mutex_unlock(&lock);
	return r;
}

gboolean serve_drain(void)
{
	gint64 deadline = g_get_monotonic_time() + DRAIN_WAIT_US;
	GHashTableIter it;
	gpointer w;

	g_mutex_lock(&lock);
	draining = TRUE;
	/* Signal until every worker has seen the flag: one may be between its
	 * check and its read when the first signal comes. */
	while (g_hash_table_size(running) > 0 && g_get_monotonic_time() < deadline) {
		g_hash_table_iter_init(&it, running);
		while (g_hash_table_iter_next(&it, &w, NULL))
			if (((struct worker *)w)->waiting)
				pthread_kill(((struct worker *)w)->thread, SIGUSR2);
		g_cond_wait_until(&changed, &lock, g_get_monotonic_time() + 10 * G_TIME_SPAN_MILLISECOND);
	}
	gboolean done = g_hash_table_size(running) == 0;
	g_mutex_unlock(&lock);
	return done;
}

/* The unique id of the INIT made up by session_resume. Its answer goes to
 * the kernel, which knows no request of that id (ids are allocated from 1
 * upwards, two at a time) and drops it with ENOENT, which libfuse ignores. */
#define RESUME_UNIQUE (UINT64_C(1) << 62)

void session_resume(struct fuse_session *se, unsigned proto_minor)
{
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
	fuse_session_process_buf(se, &buf);
}

void serve_render_stats(GString *out)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&lock);
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
		guint64 n = requests[ops[i].opcode];
		counted += n;
		g_autofree char *label = g_strdup_printf("op=\"%s\"", ops[i].name);
		metrics_sample(out, "cgprocfs_requests_total", label, n);
	}
	for (size_t i = 0; i < COUNTED_OPCODES; i++)
		all += requests[i];
	metrics_sample(out, "cgprocfs_requests_total", "op=\"other\"", all - counted);
}

/* FUSE 7.40 (Linux 6.9); older headers lack it. */
#define NOTIFY_RESEND 7

void session_resend(struct fuse_session *se)
{
	const struct fuse_out_header h = { .len = sizeof(h), .error = NOTIFY_RESEND, .unique = 0 };
	if (write(fuse_session_fd(se), &h, sizeof(h)) != (ssize_t)sizeof(h))
		g_warning("the kernel cannot resend the requests the dead daemon had taken (%s): "
			  "those wait until their callers are killed", g_strerror(errno));
}

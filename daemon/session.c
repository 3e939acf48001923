/* FUSE sessions and the server of them all. One pool of worker threads
 * serves every session: they wait in one epoll set over the sessions'
 * /dev/fuse fds (non-blocking), each armed for one reader at a time
 * (EPOLLONESHOT). A worker takes one request, arms the session again for
 * the next worker, and answers. Ready sessions thus take turns, one
 * request each. While other sessions were served lately, a session with a
 * worker busy is held (not armed) while only the reserve is idle, or while
 * it takes more than its share of the daemon's time (share.h); a worker
 * answering a session that has another worker busy, or more than its
 * share, lowers its priority meanwhile. The pool grows while no more than
 * the reserve is idle, up to a bound set by the CPUs, never with the
 * number of sessions; past it only when no worker has answered for a
 * while (a request can wait for another one of its session: see
 * session_serve). A pause stops
 * the workers between requests, so that a handover to another daemon
 * loses no request. */
#include "session.h"

#include "caller.h"
#include "cleanup.h"
#include "control.h"
#include "metrics.h"
#include "share.h"
#include "view.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* Workers kept however idle, and the most a pool may have per CPU. */
#define MIN_WORKERS 2
#define WORKERS_PER_CPU 2
#define MAX_WORKERS 64
/* Every worker busy and none answering for this long: one more, up to
 * STALL_WORKERS_MAX. */
#define STALL_US (50 * G_TIME_SPAN_MILLISECOND)
#define STALL_WORKERS_MAX 256
#define DRAIN_WAIT_US (10 * G_USEC_PER_SEC)
/* Workers a session that has one busy already leaves idle for the other
 * sessions served lately: its next request waits meanwhile (it is held),
 * as it does while it takes more than its share (share.h). */
#define RESERVE_WORKERS 1
/* Added to the daemon's nice value while a worker answers a session that
 * has another worker busy, or takes more than its share (share.h). */
#define BUSY_NICE 10
/* Requests taken, by opcode (the last slot: any other). */
#define COUNTED_OPCODES 64
/* The largest request buffer libfuse may ask for (its FUSE_MAX_MAX_PAGES
 * pages and a header page), so that one buffer serves every session. */
#define REQUEST_BUFFER_PAGES (256 + 1)

struct server {
	struct notifier *notifier;
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
	gboolean ended;
	int error;
	session_ended_fn ended_fn;
	void *ended_data;
};

/* libfuse's userdata is the session (io_writev). */
G_STATIC_ASSERT(G_STRUCT_OFFSET(struct session, ops) == 0);

static unsigned pool_bound(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	return CLAMP((unsigned)MAX(cpus, 1) * WORKERS_PER_CPU, MIN_WORKERS * 2, MAX_WORKERS);
}

struct server *server_new(struct notifier *notifier)
{
	struct server *sv = g_new0(struct server, 1);

	sv->notifier = notifier;
	g_mutex_init(&sv->lock);
	g_cond_init(&sv->changed);
	sv->by_id = g_hash_table_new(g_int64_hash, g_int64_equal);
	sv->max_workers = pool_bound();
	sv->buffer_size = (size_t)REQUEST_BUFFER_PAGES * (size_t)sysconf(_SC_PAGESIZE);
	errno = 0;
	sv->nice = getpriority(PRIO_PROCESS, 0);
	if (errno != 0)
		sv->nice = 0;
	sv->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	sv->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 0 };
	if (sv->epoll_fd < 0 || sv->wake_fd < 0 || epoll_ctl(sv->epoll_fd, EPOLL_CTL_ADD, sv->wake_fd, &ev) < 0)
		g_error("cannot make the workers' epoll set: %s", g_strerror(errno));
	return sv;
}

void server_free(struct server *sv)
{
	if (!sv)
		return;
	/* Idle workers wake for any event of the set (a session's fd going
	 * away at exit): they leave first. One still answering after the
	 * drain's wait keeps the server, freed with the process. */
	if (!server_pause(sv)) {
		g_warning("a worker is still answering: its server is left to the process's end");
		return;
	}
	close(sv->epoll_fd);
	close(sv->wake_fd);
	g_queue_clear(&sv->held);
	g_hash_table_unref(sv->by_id);
	g_cond_clear(&sv->changed);
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
static void release_held(struct server *sv);

/* Under sv->lock, from a thread that is not acting as a caller (a new
 * thread starts with its maker's credentials). */
static void spawn(struct server *sv)
{
	pthread_attr_t attr;
	pthread_t thread;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&thread, &attr, worker_main, sv) == 0) {
		sv->workers++;
		sv->idle++;
	}
	pthread_attr_destroy(&attr);
	release_held(sv);
}

/* Whether s, served by a worker already, must let its next request wait
 * for the other sessions served lately: while only the reserve is idle,
 * or while it takes more than its share. */
static gboolean must_wait(const struct server *sv, const struct session *s)
{
	if (s->busy == 0 || s->stalled)
		return FALSE;
	gint64 now = g_get_monotonic_time();
	return share_sessions(&sv->shares, now) > 1 &&
	       (sv->idle <= RESERVE_WORKERS || share_over(&sv->shares, &s->share, now));
}

/* Let one more worker take a request of s, unless it is armed already,
 * held, or ends; hold it if it must wait. Under sv->lock. */
static void arm(struct server *sv, struct session *s)
{
	if (s->armed || s->held || s->stopping || sv->draining)
		return;
	if (must_wait(sv, s)) {
		s->held = TRUE;
		s->stall_seen = FALSE;
		sv->holds++;
		g_queue_push_tail(&sv->held, s);
		return;
	}
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT, .data.u64 = s->id };
	if (epoll_ctl(sv->epoll_fd, EPOLL_CTL_MOD, fuse_session_fd(s->se), &ev) == 0)
		s->armed = TRUE;
	else
		g_warning("cannot wait for the requests of a view: %s", g_strerror(errno));
}

/* Arm the held sessions that need not wait any more (each looked at
 * once: arm holds again those that do). Under sv->lock. */
static void release_held(struct server *sv)
{
	for (guint n = sv->held.length; n > 0; n--) {
		struct session *s = g_queue_pop_head(&sv->held);
		s->held = FALSE;
		arm(sv, s);
	}
}

/* End s once no worker is in it: it leaves the epoll set, and its owner
 * is told. Under sv->lock, which is let go for the owner's callback (s
 * may be freed by it). */
static void end_if_idle(struct server *sv, struct session *s)
{
	if (!s->stopping || s->busy > 0 || s->ended)
		return;
	s->ended = TRUE;
	if (s->held)
		g_queue_remove(&sv->held, s);
	g_hash_table_remove(sv->by_id, &s->id);
	epoll_ctl(sv->epoll_fd, EPOLL_CTL_DEL, fuse_session_fd(s->se), NULL);
	session_ended_fn fn = s->ended_fn;
	void *data = s->ended_data;
	int error = s->error;
	g_cond_broadcast(&sv->changed);
	g_mutex_unlock(&sv->lock);
	fn(data, error);
	g_mutex_lock(&sv->lock);
}

/* Answer the request in buf, at a lower priority if s asks more than one
 * at a time or takes more than its share: the daemon's time is no
 * cgroup's, so this is how its callers wait for the others'. FALSE if the
 * worker could not take the daemon's credentials back. Called and returns
 * with sv->lock held, let go meanwhile. */
static gboolean answer(struct server *sv, struct session *s, struct fuse_buf *buf)
{
	/* The cost is the time taken, CPU or not: a thread CPU clock would
	 * cost two system calls a request. */
	gint64 start = g_get_monotonic_time();
	gboolean low = s->busy > 1 || share_over(&sv->shares, &s->share, start);
	sv->low_answers += low;
	g_mutex_unlock(&sv->lock);
	if (low)
		setpriority(PRIO_PROCESS, (id_t)gettid(), sv->nice + BUSY_NICE);
	fuse_session_process_buf(s->se, buf);
	if (low)
		setpriority(PRIO_PROCESS, (id_t)gettid(), sv->nice);
	gboolean sound = caller_restored() == 0;
	g_mutex_lock(&sv->lock);
	gint64 end = g_get_monotonic_time();
	share_charge(&sv->shares, &s->share, end, end - start);
	sv->answered++;
	s->answered++;
	s->stalled = FALSE;
	return sound;
}

/* Take one request of s and answer it: FALSE once this worker must end
 * (it could not take the daemon's credentials back after acting as a
 * caller). Called and returns with sv->lock held. */
static gboolean serve_one(struct server *sv, struct session *s, struct fuse_buf *buf)
{
	gboolean sound = TRUE;

	s->armed = FALSE;
	if (must_wait(sv, s)) { /* the others' reserve: s waits */
		arm(sv, s);
		return TRUE;
	}
	s->busy++;
	if (--sv->idle <= RESERVE_WORKERS && sv->workers < sv->max_workers)
		spawn(sv);
	g_mutex_unlock(&sv->lock);
	buf->flags = 0;
	buf->size = sv->buffer_size;
	int r = fuse_session_receive_buf(s->se, buf);
	g_mutex_lock(&sv->lock);
	if (r > 0) {
		count_request(sv, buf);
		arm(sv, s);
		sound = answer(sv, s, buf);
	} else if (r != -EAGAIN && r != -EINTR) { /* 0: the mount is gone */
		if (r < 0 && s->error == 0)
			s->error = r;
		s->stopping = TRUE;
	}
	s->busy--;
	sv->idle++;
	arm(sv, s);
	release_held(sv);
	end_if_idle(sv, s);
	return sound;
}

static void *worker_main(void *data)
{
	struct server *sv = data;
	/* libfuse reads into it as much as the session asks (never more than
	 * this), and allocates nothing when it is set. */
	struct fuse_buf buf = { .mem = g_malloc(sv->buffer_size) };
	gboolean sound = TRUE;

	g_mutex_lock(&sv->lock);
	/* Past the bound (made by the watchdog), a worker leaves once another
	 * one is idle too. */
	while (sound && !sv->draining && !(sv->workers > sv->max_workers && sv->idle > 1)) {
		struct epoll_event ev;
		g_mutex_unlock(&sv->lock);
		int n = epoll_wait(sv->epoll_fd, &ev, 1, -1);
		g_mutex_lock(&sv->lock);
		if (!sv->draining && (sv->respawn || sv->workers < MIN_WORKERS)) {
			sv->respawn = FALSE;
			spawn(sv);
		}
		/* A session may have ended since its event came: look it up. */
		struct session *s = n == 1 && ev.data.u64 ? g_hash_table_lookup(sv->by_id, &ev.data.u64) : NULL;
		if (s && !sv->draining)
			sound = serve_one(sv, s, &buf);
	}
	g_free(buf.mem);
	sv->workers--;
	sv->idle--;
	sv->respawn = sv->respawn || !sound;
	g_cond_broadcast(&sv->changed);
	g_mutex_unlock(&sv->lock);
	return NULL;
}

/* Every session the drain left (no worker is left, so none is busy) ends
 * as drained. Under sv->lock. */
static void end_drained(struct server *sv)
{
	GList *left = g_hash_table_get_values(sv->by_id);
	for (GList *l = left; l; l = l->next) {
		struct session *s = l->data;
		s->stopping = TRUE;
		s->error = -ECANCELED;
		end_if_idle(sv, s);
	}
	g_list_free(left);
}

gboolean server_pause(struct server *sv)
{
	gint64 deadline = g_get_monotonic_time() + DRAIN_WAIT_US;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&sv->lock);

	sv->draining = TRUE;
	/* Not read until server_resume: every epoll_wait returns meanwhile. A
	 * worker answering a request finishes it first. */
	if (eventfd_write(sv->wake_fd, 1) < 0)
		g_warning("cannot wake the workers: %s", g_strerror(errno));
	while (sv->workers > 0)
		if (!g_cond_wait_until(&sv->changed, &sv->lock, deadline))
			break;
	return sv->workers == 0;
}

void server_resume(struct server *sv)
{
	eventfd_t n;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&sv->lock);

	sv->draining = FALSE;
	(void)eventfd_read(sv->wake_fd, &n);
	g_queue_clear(&sv->held);
	GList *all = g_hash_table_get_values(sv->by_id);
	for (GList *l = all; l; l = l->next) {
		struct session *s = l->data;
		/* Its event may have been taken and dropped by a worker that
		 * was leaving: arm it again. */
		s->armed = FALSE;
		s->held = FALSE;
		arm(sv, s);
	}
	g_list_free(all);
	while (sv->workers < MIN_WORKERS)
		spawn(sv);
}

gboolean server_drain(struct server *sv)
{
	if (!server_pause(sv))
		return FALSE;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&sv->lock);
	end_drained(sv);
	return TRUE;
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
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&sv->lock);
	metrics_u64(out, "cgprocfs_workers", "gauge", "Worker threads, for every view.", sv->workers);
	metrics_u64(out, "cgprocfs_worker_stalls_total", "counter",
		    "Workers made past the bound because every worker waited and none answered.", sv->stall_spawns);
	metrics_u64(out, "cgprocfs_sessions_held_total", "counter",
		    "Times a view that had a worker busy waited for another, the rest being kept for other views.",
		    sv->holds);
	metrics_u64(out, "cgprocfs_held_stalls_total", "counter",
		    "Times a held view had no request answered for a while and was let go.", sv->stall_frees);
	metrics_u64(out, "cgprocfs_low_priority_requests_total", "counter",
		    "Requests answered at a lower priority: their view had another worker busy, or more than its share.",
		    sv->low_answers);
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
	return s;
}

static ssize_t io_read(int fd, void *buf, size_t len, void *userdata)
{
	return read(fd, buf, len);
}

/* Answers go straight to the kernel, notifications (unique 0) through
 * the notifier. userdata: the session's ops_state, its first member. */
static ssize_t io_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	const struct session *s = userdata;
	const struct fuse_out_header *h = iov[0].iov_base;
	if (count > 0 && iov[0].iov_len >= sizeof(*h) && h->unique == 0)
		return notifier_writev(s->server->notifier, fd, iov, count);
	return writev(fd, iov, count);
}

void session_batch_notifications(struct session *s, gboolean on)
{
	if (on)
		notifier_batch_begin();
	else
		notifier_batch_end(s->server->notifier);
}

/* Once libfuse has the session's fd: write through io_writev. */
static int use_own_io(struct session *s)
{
	static const struct fuse_custom_io io = { .read = io_read, .writev = io_writev };
	return fuse_session_custom_io(s->se, &io, fuse_session_fd(s->se));
}

int session_mount(struct session *s, const char *mountpoint)
{
	if (fuse_session_mount(s->se, mountpoint) != 0)
		return -1;
	if (use_own_io(s) < 0) {
		fuse_session_unmount(s->se);
		return -1;
	}
	return 0;
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
	if (fuse_session_mount(s->se, dev) != 0 || use_own_io(s) < 0)
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

int session_start(struct session *s, session_ended_fn ended, void *data)
{
	struct server *sv = s->server;
	int fd = fuse_session_fd(s->se);

	/* Even if it is not served here: whoever serves it next needs them. */
	if (s->resend)
		resend_requests(s);
	/* Workers only read what epoll said is there, but a request can go
	 * (its caller interrupted) before it is read. */
	int flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return -errno;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&sv->lock);
	if (sv->draining)
		return -ECANCELED;
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT };
	s->id = ev.data.u64 = ++sv->last_id;
	if (epoll_ctl(sv->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return -errno;
	s->armed = TRUE;
	s->ended_fn = ended;
	s->ended_data = data;
	g_hash_table_insert(sv->by_id, &s->id, s);
	while (sv->workers < MIN_WORKERS)
		spawn(sv);
	return 0;
}

/* The held sessions that have had no request answered since the last
 * look (the watchdog's, every STALL_US) are armed, and held no more until
 * one is: a request in hand may wait for the one held. TRUE if any was.
 * Under sv->lock. */
static gboolean free_stalled(struct server *sv)
{
	gboolean freed = FALSE;
	for (guint n = sv->held.length; n > 0; n--) {
		struct session *s = g_queue_pop_head(&sv->held);
		if (s->stall_seen && s->stall_mark == s->answered) {
			s->held = FALSE;
			s->stalled = freed = TRUE;
			sv->stall_frees++;
			arm(sv, s);
			continue;
		}
		s->stall_seen = TRUE;
		s->stall_mark = s->answered;
		g_queue_push_tail(&sv->held, s);
	}
	return freed;
}

/* session_serve's end callback. */
static void served(void *data, int error)
{
}

int session_serve(struct session *s)
{
	struct server *sv = s->server;
	int r = session_start(s, served, NULL);
	if (r < 0)
		return r;
	/* This thread never acts as a caller: it replaces a worker that
	 * ended unsound while none of the others is free to. And it is the
	 * watchdog: a request may wait for another of its session to be
	 * answered (an OPEN that tells the kernel of new pages waits for the
	 * READ that holds one): a session held while it has none answered
	 * for a while is held no more until it has, and when every worker is
	 * busy and none has answered (or such a session was let go), one
	 * more is made, past the bound. */
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&sv->lock);
	guint64 answered = sv->answered;
	while (!s->ended) {
		if (sv->respawn && !sv->draining) {
			sv->respawn = FALSE;
			spawn(sv);
		}
		if (!g_cond_wait_until(&sv->changed, &sv->lock, g_get_monotonic_time() + STALL_US)) {
			gboolean freed = free_stalled(sv);
			if (sv->idle == 0 && (freed || sv->answered == answered) && !sv->draining &&
			    sv->workers < STALL_WORKERS_MAX) {
				sv->stall_spawns++;
				spawn(sv);
			}
			answered = sv->answered;
		}
	}
	return s->error;
}

void session_exit(struct session *s)
{
	struct server *sv = s->server;

	fuse_session_exit(s->se);
	fuse_session_unmount(s->se);
	/* Binds elsewhere may keep the connection up: end it here. */
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&sv->lock);
	if (s->id && !s->ended) {
		s->stopping = TRUE;
		end_if_idle(sv, s);
	}
}

void session_free(struct session *s)
{
	if (!s)
		return;
	pidwatch_forget_owner(s->ops.watch, &s->ops);
	fuse_session_destroy(s->se);
	ops_state_clear(&s->ops);
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

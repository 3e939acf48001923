/* The server of every FUSE session of a daemon. One pool of worker threads
 * serves them all: they wait in one epoll set over the sessions'
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
 * server_watch). A pause stops the workers between requests, so that a
 * handover to another daemon loses no request. */
#include "server.h"

#include "caller.h"
#include "inflight.h"
#include "metrics.h"
#include "pidns.h"

#include <errno.h>
#include <linux/fuse.h>
#include <pthread.h>
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
/* A pause waits this long for the workers at a time, then lets them serve
 * for PAUSE_BREATHER_US before it tries again. */
#define PAUSE_SLICE_US (G_USEC_PER_SEC / 2)
#define PAUSE_BREATHER_US (20 * G_TIME_SPAN_MILLISECOND)
/* Workers a session that has one busy already leaves idle for the other
 * sessions served lately: its next request waits meanwhile (it is held),
 * as it does while it takes more than its share (share.h). */
#define RESERVE_WORKERS 1
/* Added to the daemon's nice value while a worker answers a session that
 * has another worker busy, or takes more than its share (share.h). */
#define BUSY_NICE 10
/* The largest request buffer libfuse may ask for (its FUSE_MAX_MAX_PAGES
 * pages and a header page), so that one buffer serves every session. */
#define REQUEST_BUFFER_PAGES (256 + 1)

static unsigned pool_bound(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	return CLAMP((unsigned)MAX(cpus, 1) * WORKERS_PER_CPU, MIN_WORKERS * 2, MAX_WORKERS);
}

struct server *server_new(struct notifier *notifier)
{
	struct server *sv = g_new0(struct server, 1);

	sv->notifier = notifier;
	sv->inflight = inflight_new();
	unsigned n;
	struct trigger_record *records = inflight_triggers(sv->inflight, &n);
	sv->triggers = triggers_new(records, n, pidns_own());
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
	triggers_free(sv->triggers);
	inflight_free(sv->inflight);
	inflight_free(sv->replay);
	g_queue_clear(&sv->held);
	g_hash_table_unref(sv->by_id);
	g_cond_clear(&sv->changed);
	g_mutex_clear(&sv->lock);
	g_free(sv);
}

int server_inflight_fd(struct server *sv)
{
	return inflight_fd(sv->inflight);
}

void server_answer_taken_from(struct server *sv, int fd)
{
	inflight_free(sv->replay);
	sv->replay = fd >= 0 ? inflight_adopt(fd) : NULL;
	unsigned n;
	const struct trigger_record *kept = inflight_triggers(sv->replay, &n);
	triggers_inherit(sv->triggers, kept, n);
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
	if (!s->stopping || s->busy > 0 || s->starting || s->ended)
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

/* Stop the workers between requests: TRUE once none is left, FALSE at
 * deadline (monotonic). */
static gboolean pause_until(struct server *sv, gint64 deadline)
{
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

gboolean server_pause(struct server *sv)
{
	gint64 deadline = g_get_monotonic_time() + DRAIN_WAIT_US;

	for (;;) {
		if (pause_until(sv, MIN(deadline, g_get_monotonic_time() + PAUSE_SLICE_US)))
			return TRUE;
		if (g_get_monotonic_time() >= deadline)
			return FALSE;
		/* A worker left most likely waits for a request only the others
		 * would answer (its OPEN stores pages in the kernel's cache, and
		 * a READ of them holds them): let them, then try again. */
		server_resume(sv);
		g_usleep(PAUSE_BREATHER_US);
	}
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
	/* No breather: the sessions may be another daemon's by now. */
	if (!pause_until(sv, g_get_monotonic_time() + DRAIN_WAIT_US))
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

int server_add(struct server *sv, struct session *s, session_ended_fn ended, void *data)
{
	int fd = fuse_session_fd(s->se);
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&sv->lock);
	if (sv->draining)
		return -ECANCELED;
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT };
	s->id = ev.data.u64 = ++sv->last_id;
	if (epoll_ctl(sv->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return -errno;
	s->armed = TRUE;
	s->starting = TRUE;
	s->ended_fn = ended;
	s->ended_data = data;
	g_hash_table_insert(sv->by_id, &s->id, s);
	while (sv->workers < MIN_WORKERS)
		spawn(sv);
	return 0;
}

void server_started(struct server *sv, struct session *s)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&sv->lock);
	s->starting = FALSE;
	end_if_idle(sv, s);
}

int server_watch(struct server *sv, struct session *s)
{
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

void server_end(struct server *sv, struct session *s)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&sv->lock);
	if (s->id && !s->ended) {
		s->stopping = TRUE;
		end_if_idle(sv, s);
	}
}

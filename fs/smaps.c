#include "smaps.h"

#include "metrics.h"

#include "cleanup.h"
#include "pidns.h"
#include "procfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

/* Where the processes of a pid namespace are read and found. Shared by the
 * table and by every read, walk or probe under way (reference-counted), so
 * that a namespace removed meanwhile keeps its fds until the last of them
 * is done; the fds of another namespace are the where's own (duplicated),
 * closed with the last reference; the daemon's own procfs is borrowed. */
struct where {
	gatomicrefcount ref;
	int proc_fd;      /* a procfs of it */
	int ns_fd;        /* the namespace itself; -1 for the daemon's own
	                   * (whose procfs is borrowed) */
};

static struct where *where_new(int proc_fd, int ns_fd)
{
	struct where *w = g_new0(struct where, 1);
	g_atomic_ref_count_init(&w->ref);
	w->proc_fd = proc_fd;
	w->ns_fd = ns_fd;
	return w;
}

static void where_unref(struct where *w)
{
	if (!w || !g_atomic_ref_count_dec(&w->ref))
		return;
	if (w->ns_fd >= 0) {
		close(w->proc_fd);
		close(w->ns_fd);
	}
	g_free(w);
}
typedef struct where where;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(where, where_unref)

/* Shared by the request threads (smaps_read) and the refresher thread
 * (smaps_refresh_step, through the memo's walk and probe); freed by
 * smaps_free, by its owner (daemon/), once both have stopped. */
struct smaps {
	struct smaps_config cfg;
	struct memo *memo;       /* ours: freed by smaps_free */
	struct where *own;       /* the daemon's own namespace */
	GRWLock lock;            /* guards namespaces */
	GHashTable *namespaces;  /* ns -> struct where*, other than the daemon's */
};

/* A reference to where the processes of ns are, or NULL for an unknown
 * namespace. */
static struct where *where_get(struct smaps *s, uint64_t ns)
{
	if (ns == s->cfg.ns) {
		g_atomic_ref_count_inc(&s->own->ref);
		return s->own;
	}
	g_rw_lock_reader_lock(&s->lock);
	struct where *w = g_hash_table_lookup(s->namespaces, &ns);
	if (w)
		g_atomic_ref_count_inc(&w->ref);
	g_rw_lock_reader_unlock(&s->lock);
	return w;
}

#define PIDFS_MAGIC 0x50494446

/* A pidfd of pid, and its inode where pidfds have one each (pidfs).
 * Without pidfds (another namespace's before Linux 6.9), -1 and 0:
 * processes are then told apart by start time alone. */
static int open_process(const struct where *w, pid_t pid, int *ret_pidfd, uint64_t *ret_ino)
{
	struct statfs sfs;
	struct stat st;

	/* A thread that is not its group's leader (ENOENT, or EINVAL before
	 * Linux 6.9): PIDFD_THREAD (O_EXCL, 6.9), or no identity beyond the
	 * start time before that. */
	int r = pidns_pidfd_open(w->ns_fd, pid, 0);
	if (r == -ENOENT || r == -EINVAL)
		r = pidns_pidfd_open(w->ns_fd, pid, O_EXCL);
	if (r == -EINVAL || r == -EOPNOTSUPP) {
		*ret_pidfd = -1;
		*ret_ino = 0;
		return 0;
	}
	if (r < 0)
		return r == -ESRCH ? -ENOENT : r;
	*ret_ino = fstatfs(r, &sfs) == 0 && sfs.f_type == PIDFS_MAGIC && fstat(r, &st) == 0 ? st.st_ino : 0;
	*ret_pidfd = r;
	return 0;
}

/* The process behind key, if pid still stands for it; with its pidfd,
 * which tells whether it was the one all along (see holds_key), and where
 * it is read (a reference, the caller's to drop). */
static int key_process(struct smaps *s, const struct memo_key *key, struct pid_stat *ret,
		       int *ret_pidfd, struct where **ret_where)
{
	uint64_t ino;
	g_autoptr(where) w = where_get(s, key->ns);
	if (!w)
		return -ENOENT; /* the namespace is gone */
	int r = open_process(w, key->pid, ret_pidfd, &ino);
	if (r < 0)
		return r;
	r = procfile_pid_stat(w->proc_fd, key->pid, ret);
	if (r == 0 && (ret->start_time != key->start_time || ino != key->pidfd_ino))
		r = -ENOENT;
	if (r < 0) {
		if (*ret_pidfd >= 0)
			close(*ret_pidfd);
		return r;
	}
	*ret_where = g_steal_pointer(&w);
	return 0;
}

/* Still the process of key: it has not exited since its pidfd was opened,
 * so its pid has named it all along. Closes the pidfd. */
static gboolean holds_key(int pidfd)
{
	gboolean alive = !pidns_pidfd_exited(pidfd);
	if (pidfd >= 0)
		close(pidfd);
	return alive;
}

/* The walk: the kernel's text, read with the daemon's rights (callers are
 * checked separately, on every read). */
static int walk(void *data, const struct memo_key *key, GBytes **ret_text)
{
	struct smaps *s = data;
	struct pid_stat st;
	char path[48];
	g_autoptr(GBytes) text = NULL;
	g_autoptr(where) w = NULL;
	int pidfd;

	int r = key_process(s, key, &st, &pidfd, &w);
	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "%d/smaps_rollup", (int)key->pid);
	r = procfile_read_at(w->proc_fd, path, &text);
	/* If the process exited meanwhile, the pid may name another by now. */
	if (!holds_key(pidfd))
		return -ENOENT;
	if (r < 0)
		return r;
	*ret_text = g_steal_pointer(&text);
	return 0;
}

static int probe(void *data, const struct memo_key *key, struct memo_signals *ret)
{
	struct smaps *s = data;
	struct pid_stat st;
	g_autoptr(where) w = NULL;
	int pidfd;
	int r = key_process(s, key, &st, &pidfd, &w);
	if (r < 0)
		return r;
	if (!holds_key(pidfd))
		return -ENOENT;
	*ret = (struct memo_signals){
		.minflt = st.minflt, .majflt = st.majflt, .rss = st.rss, .vsize = st.vsize,
		.image = { st.start_code, st.end_code, st.start_stack },
	};
	return 0;
}

static gint64 now(void *data)
{
	return g_get_monotonic_time();
}

static gint64 thread_cpu(void *data)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (gint64)ts.tv_sec * G_USEC_PER_SEC + ts.tv_nsec / 1000;
}

static void wake(void *data)
{
	struct smaps *s = data;
	if (s->cfg.wake_refresher)
		s->cfg.wake_refresher(s->cfg.wake_data);
}

struct smaps *smaps_new(const struct smaps_config *cfg)
{
	struct smaps *s = g_new0(struct smaps, 1);
	const struct memo_ops ops = { walk, probe, now, thread_cpu, wake, s };
	s->cfg = *cfg;
	s->memo = memo_new(&cfg->memo, &ops);
	g_rw_lock_init(&s->lock);
	s->own = where_new(cfg->proc_fd, -1);
	s->namespaces = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, (GDestroyNotify)where_unref);
	return s;
}

void smaps_add_namespace(struct smaps *s, uint64_t ns, int proc_fd, int ns_fd)
{
	int own_proc = fcntl(proc_fd, F_DUPFD_CLOEXEC, 3);
	int own_ns = fcntl(ns_fd, F_DUPFD_CLOEXEC, 3);
	if (own_proc < 0 || own_ns < 0) {
		g_debug("cannot keep the fds of pid namespace %" G_GUINT64_FORMAT ": its smaps_rollup is ENOENT", ns);
		if (own_proc >= 0)
			close(own_proc);
		if (own_ns >= 0)
			close(own_ns);
		return;
	}
	g_rw_lock_writer_lock(&s->lock);
	g_hash_table_insert(s->namespaces, g_memdup2(&ns, sizeof(ns)), where_new(own_proc, own_ns));
	g_rw_lock_writer_unlock(&s->lock);
}

void smaps_remove_namespace(struct smaps *s, uint64_t ns)
{
	g_rw_lock_writer_lock(&s->lock);
	g_hash_table_remove(s->namespaces, &ns);
	g_rw_lock_writer_unlock(&s->lock);
}

void smaps_free(struct smaps *s)
{
	if (!s)
		return;
	memo_free(s->memo);
	g_hash_table_unref(s->namespaces);
	where_unref(s->own);
	g_rw_lock_clear(&s->lock);
	g_free(s);
}

/* A walk outlasted its readers' wait: said at most once a minute. */
static void tell_slow(pid_t pid)
{
	static gint told_minute = -1;
	gint minute = (gint)(g_get_monotonic_time() / (60 * G_USEC_PER_SEC));
	gint last = g_atomic_int_get(&told_minute);
	if (last != minute && g_atomic_int_compare_and_exchange(&told_minute, last, minute))
		g_warning("walking the memory of pid %d takes over 2 s (it holds its memory map: a fault on a FUSE "
			  "file whose server does not answer?): reads of its smaps_rollup get EAGAIN until the walk ends",
			  (int)pid);
}

int smaps_read(struct smaps *s, const struct caller *c, uint64_t ns, pid_t pid, uint64_t start_time,
	       GBytes **ret_content)
{
	char path[48];
	_cleanup_close_ int fd = -1;
	g_autoptr(where) w = where_get(s, ns);

	if (!w)
		return -ENOENT;
	/* The kernel checks access when the file is opened; opening costs no
	 * walk, so the caller's right is asked of the kernel every time. */
	_cleanup_close_ int pidfd = -1;
	uint64_t ino;
	int r = open_process(w, pid, &pidfd, &ino);
	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "%d/smaps_rollup", (int)pid);
	r = caller_openat(c, pid, w->proc_fd, path, O_RDONLY, &fd);
	if (r < 0)
		return r;
	/* The check was made on the process of the pidfd if it is still alive. */
	if (pidns_pidfd_exited(pidfd))
		return -ENOENT;
	const struct memo_key key = { ns, pid, start_time, ino };
	r = memo_get(s->memo, &key, ret_content);
	if (r == -EAGAIN)
		tell_slow(pid);
	return r;
}

gboolean smaps_refresh_step(struct smaps *s, gint64 *ret_wait_us)
{
	return memo_refresh_step(s->memo, ret_wait_us);
}

GString *smaps_render_stats(struct smaps *s)
{
	struct memo_stats st;
	GString *out = g_string_new(NULL);
	const struct {
		const char *name, *type, *help;
	} rows[] = {
		{ "hits_total", "counter", "Reads served from a fresh memo entry." },
		{ "misses_total", "counter", "Reads that found no entry and walked the process." },
		{ "stale_serves_total", "counter", "Reads served from an entry older than the maximum age." },
		{ "walks_total", "counter", "Walks of a process (reads of the kernel's smaps_rollup)." },
		{ "walks_skipped_total", "counter", "Refreshes skipped because the process had not changed." },
		{ "exec_rewalks_total", "counter", "Texts walked again because the process exec'd during or since." },
		{ "evictions_total", "counter", "Entries dropped: dead process, unread, or table full." },
		{ "budget_overruns_total", "counter", "Times the CPU budget let an entry get older than the maximum age." },
		{ "slow_walks_total", "counter", "Reads answered EAGAIN because a walk outlasted 2 s." },
		{ "entries", "gauge", "Entries in the memo." },
	};
	memo_get_stats(s->memo, &st);
	guint64 values[] = { st.hits, st.misses, st.stale_serves, st.walks, st.walks_skipped,
			     st.exec_rewalks, st.evictions, st.budget_overruns, st.slow_walks, st.entries };
	for (size_t i = 0; i < G_N_ELEMENTS(rows); i++) {
		g_autofree char *name = g_strconcat("cgprocfs_smaps_", rows[i].name, NULL);
		metrics_u64(out, name, rows[i].type, rows[i].help, values[i]);
	}
	metrics_seconds(out, "cgprocfs_smaps_walk_cpu_seconds_total", "CPU time spent walking processes.",
			(double)st.walk_cpu_us / G_USEC_PER_SEC);
	return out;
}

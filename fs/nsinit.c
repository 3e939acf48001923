#include "nsinit.h"

#include "dirwalk.h"
#include "pidns.h"
#include "procfile.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct nsinit {
	pid_t pid;           /* in the daemon's namespace */
	uint64_t start_time; /* clock ticks after boot */
};

/* Namespaces kept at most; past that the table starts over. */
#define NSINITS_MAX 4096

struct nsinits {
	int proc_fd;
	uint64_t own_ns;
	GMutex lock;       /* guards by_ns */
	GHashTable *by_ns; /* namespace inode -> struct nsinit */
};

struct nsinits *nsinits_new(int proc_fd)
{
	struct nsinits *n = g_new0(struct nsinits, 1);
	n->proc_fd = proc_fd;
	n->own_ns = pidns_of(proc_fd, getpid());
	g_mutex_init(&n->lock);
	n->by_ns = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
	return n;
}

void nsinits_free(struct nsinits *n)
{
	if (!n)
		return;
	g_hash_table_unref(n->by_ns);
	g_mutex_clear(&n->lock);
	g_free(n);
}

/* Is pid the init of a namespace below the daemon's: its NSpid numbers
 * (one per level) more than one, the last 1? */
static gboolean is_ns_init(int proc_fd, pid_t pid)
{
	guint levels;
	pid_t inner;
	return procfile_nspid(proc_fd, pid, &levels, &inner) == 0 && levels > 1 && inner == 1;
}

struct search {
	int proc_fd;
	uint64_t ns;
	struct nsinit found;
};

static void look_at(const struct dirent *de, void *data)
{
	struct search *s = data;
	guint64 pid;
	struct pid_stat st;
	if (s->found.pid || !g_ascii_string_to_unsigned(de->d_name, 10, 1, G_MAXINT32, &pid, NULL) ||
	    pidns_of(s->proc_fd, (pid_t)pid) != s->ns || !is_ns_init(s->proc_fd, (pid_t)pid) ||
	    procfile_pid_stat(s->proc_fd, (pid_t)pid, &st) < 0)
		return;
	s->found = (struct nsinit){ (pid_t)pid, st.start_time };
}

/* Is the init kept for ns still that process? */
static gboolean still_init(struct nsinits *n, uint64_t ns, const struct nsinit *i)
{
	struct pid_stat st;
	return procfile_pid_stat(n->proc_fd, i->pid, &st) == 0 && st.start_time == i->start_time &&
	       pidns_of(n->proc_fd, i->pid) == ns;
}

gboolean nsinits_of(struct nsinits *n, pid_t tid, uint64_t *ret_ns, uint64_t *ret_start)
{
	uint64_t ns = pidns_of(n->proc_fd, tid);
	if (!ns || ns == n->own_ns)
		return FALSE;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&n->lock);
	struct nsinit *kept = g_hash_table_lookup(n->by_ns, &ns);
	if (!kept || !still_init(n, ns, kept)) {
		/* The namespace's processes are among the daemon's: its init
		 * is the one numbered 1 there. */
		struct search s = { n->proc_fd, ns, { 0, 0 } };
		if (dirwalk(n->proc_fd, ".", look_at, &s) < 0 || !s.found.pid)
			return FALSE;
		if (g_hash_table_size(n->by_ns) >= NSINITS_MAX)
			g_hash_table_remove_all(n->by_ns);
		kept = g_memdup2(&s.found, sizeof(s.found));
		g_hash_table_replace(n->by_ns, g_memdup2(&ns, sizeof(ns)), kept);
	}
	*ret_ns = ns;
	*ret_start = kept->start_time;
	return TRUE;
}

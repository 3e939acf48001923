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
/* Parents looked at for a namespace's init before its processes are. */
#define NSINIT_HOPS_MAX 64

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
static gboolean still_init(int proc_fd, uint64_t ns, const struct nsinit *i)
{
	struct pid_stat st;
	return procfile_pid_stat(proc_fd, i->pid, &st) == 0 && st.start_time == i->start_time &&
	       pidns_of(proc_fd, i->pid) == ns;
}

/* pid's parent (PPid in its status), or 0. */
static pid_t parent_of(int proc_fd, pid_t pid)
{
	char path[32];
	g_autofree char *text = NULL;
	snprintf(path, sizeof(path), "%d/status", (int)pid);
	if (procfile_read_text_at(proc_fd, path, &text) < 0)
		return 0;
	const char *at = strstr(text, "\nPPid:");
	int ppid = 0;
	if (!at || sscanf(at + strlen("\nPPid:"), "%d", &ppid) != 1 || ppid < 0)
		return 0;
	return (pid_t)ppid;
}

/* ns's init, found from tid (of ns) up its parents while they are of ns:
 * a process forked in the namespace descends from its init (or from one
 * that an orphan is given to). At most NSINIT_HOPS_MAX steps. */
static gboolean init_above(int proc_fd, uint64_t ns, pid_t tid, struct nsinit *ret)
{
	pid_t pid = tid;
	for (int hops = 0; pid > 0 && hops < NSINIT_HOPS_MAX; hops++) {
		struct pid_stat st;
		if (pidns_of(proc_fd, pid) != ns)
			return FALSE;
		if (is_ns_init(proc_fd, pid) && procfile_pid_stat(proc_fd, pid, &st) == 0 &&
		    pidns_of(proc_fd, pid) == ns) {
			*ret = (struct nsinit){ pid, st.start_time };
			return TRUE;
		}
		pid = parent_of(proc_fd, pid);
	}
	return FALSE;
}

gboolean nsinits_of(struct nsinits *n, pid_t tid, uint64_t *ret_ns, uint64_t *ret_start)
{
	uint64_t ns = pidns_of(n->proc_fd, tid);
	if (!ns || ns == n->own_ns)
		return FALSE;
	struct nsinit kept = { 0, 0 };
	g_mutex_lock(&n->lock);
	const struct nsinit *known = g_hash_table_lookup(n->by_ns, &ns);
	if (known)
		kept = *known;
	g_mutex_unlock(&n->lock);
	/* The checks and the search run under no lock: a tenant sizes the
	 * search (its processes are among the daemon's), and makes as many
	 * namespaces as it likes. */
	if (!kept.pid || !still_init(n->proc_fd, ns, &kept)) {
		/* The namespace's processes are among the daemon's: its init
		 * is the one numbered 1 there, most often an ancestor of tid
		 * (not of one that joined the namespace with setns). */
		struct search s = { n->proc_fd, ns, { 0, 0 } };
		if (!init_above(n->proc_fd, ns, tid, &s.found) &&
		    (dirwalk(n->proc_fd, ".", look_at, &s) < 0 || !s.found.pid))
			return FALSE;
		kept = s.found;
		G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&n->lock);
		if (g_hash_table_size(n->by_ns) >= NSINITS_MAX)
			g_hash_table_remove_all(n->by_ns);
		g_hash_table_replace(n->by_ns, g_memdup2(&ns, sizeof(ns)), g_memdup2(&kept, sizeof(kept)));
	}
	*ret_ns = ns;
	*ret_start = kept.start_time;
	return TRUE;
}

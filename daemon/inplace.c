/* Whether a caller's view is in place, kept per mount namespace (inplace.h). */
#include "inplace.h"

#include "mountinfo.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* How long a finding serves a namespace: as long as an answer serves its
 * callers (sysinfo.c's ANSWER_MAX_AGE_US). */
#define FOUND_MAX_AGE_US G_USEC_PER_SEC
/* Namespaces kept at most: past it the table starts over. */
#define FOUND_MAX 4096

struct found {
	gint64 at_us; /* monotonic */
	gboolean memory, cpu; /* in place */
};

struct inplace {
	int proc_fd;
	GMutex lock;       /* guards found */
	GHashTable *found; /* mount namespace inode -> struct found */
};

struct inplace *inplace_new(int proc_fd)
{
	struct inplace *p = g_new0(struct inplace, 1);
	p->proc_fd = proc_fd;
	g_mutex_init(&p->lock);
	p->found = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
	return p;
}

void inplace_free(struct inplace *p)
{
	if (!p)
		return;
	g_hash_table_unref(p->found);
	g_mutex_clear(&p->lock);
	g_free(p);
}

static gboolean is_view(const char *fstype)
{
	return fstype && strcmp(fstype, "fuse.cgprocfs") == 0;
}

/* Read now, from tid's mount table (nothing in place if it cannot be read). */
static struct found read_in_place(struct inplace *p, pid_t tid, gint64 now)
{
	static const char *const paths[] = { "/proc/meminfo", "/proc", "/sys/devices/system/cpu" };
	g_autofree char *meminfo = NULL, *proc = NULL, *cpu = NULL;
	char *types[G_N_ELEMENTS(paths)];
	if (mountinfo_tops_of(p->proc_fd, tid, paths, G_N_ELEMENTS(paths), types) < 0)
		return (struct found){ .at_us = now };
	meminfo = types[0];
	proc = types[1];
	cpu = types[2];
	return (struct found){ .at_us = now, .memory = is_view(meminfo ? meminfo : proc), .cpu = is_view(cpu) };
}

static gboolean in_place(const struct found *f, enum inplace_what what)
{
	switch (what) {
	case INPLACE_MEMORY:
		return f->memory;
	case INPLACE_CPU:
		return f->cpu;
	}
	return FALSE;
}

gboolean inplace_view(struct inplace *p, pid_t tid, enum inplace_what what)
{
	char path[32];
	struct stat st;
	snprintf(path, sizeof(path), "%d/ns/mnt", (int)tid);
	if (fstatat(p->proc_fd, path, &st, 0) < 0)
		return FALSE;
	gint64 ns = (gint64)st.st_ino, now = g_get_monotonic_time();
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&p->lock);
	const struct found *known = g_hash_table_lookup(p->found, &ns);
	if (known && now - known->at_us < FOUND_MAX_AGE_US)
		return in_place(known, what);
	/* Read under the lock: the listener is its one user. */
	struct found *f = g_new(struct found, 1);
	*f = read_in_place(p, tid, now);
	if (!known && g_hash_table_size(p->found) >= FOUND_MAX)
		g_hash_table_remove_all(p->found);
	g_hash_table_replace(p->found, g_memdup2(&ns, sizeof(ns)), f);
	return in_place(f, what);
}

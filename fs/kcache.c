#include "kcache.h"

#include <errno.h>

void kcache_init(struct ops_state *s)
{
	g_mutex_init(&s->cache_lock);
	s->told = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
	s->told_of = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, (GDestroyNotify)g_array_unref);
	s->row_class = g_hash_table_new(g_direct_hash, g_direct_equal);
}

void kcache_clear(struct ops_state *s)
{
	g_clear_pointer(&s->told, g_hash_table_unref);
	g_clear_pointer(&s->told_of, g_hash_table_unref);
	g_clear_pointer(&s->row_class, g_hash_table_unref);
	g_mutex_clear(&s->cache_lock);
}

/* A row whose callers looked up more than one class. */
#define CLASS_MIXED GUINT_TO_POINTER(1)

/* How long the kernel may keep a class row's name while every caller has
 * its class: longer than the attributes' timeout, for a monitor polling
 * every 1-15 s would otherwise look each name up again at every read. A
 * caller whose class changed meanwhile opens the kept inode and is
 * refused (ESTALE: fs/files.c), and the kernel walks the name again. */
#define CLASS_ENTRY_TIMEOUT 60.0

double kcache_entry_timeout(struct ops_state *s, uint64_t ino, double timeout)
{
	/* The host's view serves callers of every cgroup: a name kept for
	 * one would be used unasked by another's bind mount or stat. */
	if (view_pid_ns_fd(s->view) < 0)
		return 0;
	gpointer row = GUINT_TO_POINTER(view_class_row(ino));
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&s->cache_lock);
	gpointer seen = g_hash_table_lookup(s->row_class, row);
	if (!seen)
		g_hash_table_insert(s->row_class, row, (gpointer)(uintptr_t)ino);
	if (!seen || seen == (gpointer)(uintptr_t)ino)
		return MAX(timeout, CLASS_ENTRY_TIMEOUT);
	g_hash_table_insert(s->row_class, row, CLASS_MIXED);
	return 0;
}

gboolean kcache_class_mixed(struct ops_state *s, uint64_t ino, pid_t tid)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&s->cache_lock);
	g_hash_table_insert(s->row_class, GUINT_TO_POINTER(view_class_row(ino)), CLASS_MIXED);
	gboolean bound = s->refused_ino == ino && s->refused_tid == tid;
	s->refused_ino = ino;
	s->refused_tid = tid;
	if (!bound || s->bind_said)
		return FALSE;
	s->bind_said = TRUE;
	return TRUE;
}

static gint64 version_of(const struct stat *attr)
{
	return (gint64)attr->st_mtim.tv_sec * 1000000000 + attr->st_mtim.tv_nsec;
}

/* What the kernel was last told of a served file: its text's version and
 * size (by attributes, or a store). Every regular file's attributes are
 * noted (a smaps_rollup's size 0 undoes its open's store). A process's
 * files are let go of when it exits (kcache_forget_process), so that a
 * node's churn does not fill the table; past TOLD_MAX inodes it starts
 * over. */
#define TOLD_MAX 65536
struct told {
	gint64 version;
	gint64 size;
};

/* ino, new in told, among its process's. Under cache_lock. */
static void note_process_locked(struct ops_state *s, uint64_t ino)
{
	pid_t pid = view_ino_process(ino);
	if (!pid)
		return;
	GArray *inos = g_hash_table_lookup(s->told_of, GINT_TO_POINTER(pid));
	if (!inos) {
		inos = g_array_sized_new(FALSE, FALSE, sizeof(uint64_t), 1);
		g_hash_table_insert(s->told_of, GINT_TO_POINTER(pid), inos);
	}
	g_array_append_val(inos, ino);
}

void kcache_forget_process(struct ops_state *s, pid_t pid)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&s->cache_lock);
	GArray *inos = g_hash_table_lookup(s->told_of, GINT_TO_POINTER(pid));
	for (guint i = 0; inos && i < inos->len; i++)
		g_hash_table_remove(s->told, &g_array_index(inos, uint64_t, i));
	g_hash_table_remove(s->told_of, GINT_TO_POINTER(pid));
}

guint kcache_told_count(struct ops_state *s)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&s->cache_lock);
	return g_hash_table_size(s->told);
}

/* kcache_told, under cache_lock. */
static gboolean told_locked(struct ops_state *s, uint64_t ino, gint64 version, gint64 size)
{
	struct told *had = g_hash_table_lookup(s->told, &ino);
	gboolean changed = !had || had->version != version;
	if (!had && g_hash_table_size(s->told) >= TOLD_MAX) {
		g_hash_table_remove_all(s->told); /* forgetting costs a store each */
		g_hash_table_remove_all(s->told_of);
	}
	if (!had) {
		had = g_new0(struct told, 1);
		g_hash_table_insert(s->told, g_memdup2(&ino, sizeof(ino)), had);
		note_process_locked(s, ino);
	}
	*had = (struct told){ version, size };
	return changed;
}

gboolean kcache_told(struct ops_state *s, uint64_t ino, gint64 version, gint64 size)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&s->cache_lock);
	return told_locked(s, ino, version, size);
}

void kcache_told_attr(struct ops_state *s, uint64_t ino, struct stat *attr)
{
	if (!S_ISREG(attr->st_mode))
		return;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&s->cache_lock);
	const struct told *had = g_hash_table_lookup(s->told, &ino);
	if (had && had->version == 0 && had->size > attr->st_size) /* a store's */
		attr->st_size = had->size;
	else
		told_locked(s, ino, version_of(attr), attr->st_size);
}

gboolean kcache_told_shorter(struct ops_state *s, uint64_t ino, gint64 size)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&s->cache_lock);
	const struct told *had = g_hash_table_lookup(s->told, &ino);
	return !had || had->size < size;
}

void kcache_store(struct ops_state *s, uint64_t ino, GBytes *content)
{
	gsize len;
	const void *data = g_bytes_get_data(content, &len);
	struct fuse_bufvec buf = FUSE_BUFVEC_INIT(len);
	buf.buf[0].mem = (void *)data;
	int r = fuse_lowlevel_notify_inval_inode(s->session, ino, 0, 0);
	if (r == 0 || r == -ENOENT)
		r = fuse_lowlevel_notify_store(s->session, ino, 0, &buf, 0);
	if (r < 0 && r != -ENOENT)
		g_debug("cannot refresh the kernel's copy of inode %" G_GUINT64_FORMAT ": %s", (guint64)ino,
			g_strerror(-r));
}


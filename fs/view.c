/* The public entry points of the view and their dispatch on the node kind
 * an inode number carries. What each kind does is in its family's file:
 * files.c (the static table and served files), view-proc.c (proc/ and the
 * pid directories), view-sys.c (sys/devices/system/cpu); the families
 * depend on files.c's table, never on each other. */
#include "view-internal.h"

#include "dirwalk.h"
#include "names.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* The directories of the static table (files.c): its rows, and in proc/
 * the real procfs's other entries (view-proc.c). Here, where both
 * families meet, so that neither depends on the other's. */
static int static_dir_lookup(struct view *v, const struct caller *c, uint64_t parent, const char *name,
			     struct view_entry *ret)
{
	enum row r = files_find_row(v, (enum row)ino_id(parent), name);
	if (r != ROW_NONE)
		return files_row_ino_for(v, c, r, &ret->ino);
	if (ino_id(parent) == ROW_PROC)
		return proc_lookup_top(v, c, name, ret);
	return -ENOENT;
}

static int static_dir_readdir(struct view *v, const struct caller *c, uint64_t ino, GArray *entries)
{
	int r = files_list_rows(v, c, entries, (enum row)ino_id(ino));
	if (r < 0)
		return r;
	return ino_id(ino) == ROW_PROC ? proc_list_top(v, c, entries) : 0;
}

static const struct kind_ops static_dir_ops = {
	.type = S_IFDIR,
	.valid = files_row_valid,
	.attr = files_dir_attr,
	.lookup = static_dir_lookup,
	.readdir = static_dir_readdir,
};

/* One row per kind, in the order of enum node_kind. */
static const struct kind_ops *const kind_ops[] = {
	[NODE_STATIC_DIR] = &static_dir_ops,
	[NODE_REAL_DIR] = &files_real_dir_ops,
	[NODE_HOST_FILE] = &files_served_ops,
	[NODE_TOP_LINK] = &proc_top_link_ops,
	[NODE_PID_DIR] = &proc_pid_dir_ops,
	[NODE_PID_LINK] = &proc_pid_link_ops,
	[NODE_PID_MAGIC] = &proc_pid_magic_ops,
	[NODE_PID_FILE] = &proc_pid_file_ops,
	[NODE_SYS_MIRROR] = &sys_mirror_ops,
	[NODE_SYS_VCPU] = &sys_vcpu_ops,
};
G_STATIC_ASSERT(G_N_ELEMENTS(kind_ops) == NODE_KIND_COUNT);

static gboolean row_complete(const struct kind_ops *ops)
{
	gboolean dir = ops->type == S_IFDIR || ops->type == 0;
	gboolean link = ops->type == S_IFLNK || ops->type == 0;
	gboolean file = ops->type == S_IFREG || ops->type == 0;

	return ops->valid && ops->attr && (!dir || (ops->lookup && ops->readdir)) &&
	       (!link || ops->readlink) && (!file || ops->open);
}

int view_kind_incomplete(void)
{
	for (int k = 0; k < NODE_KIND_COUNT; k++)
		if (!kind_ops[k] || !row_complete(kind_ops[k]))
			return k;
	return -1;
}

/* The operations of a number this view could have handed out, or NULL. */
static const struct kind_ops *ops_of(const struct view *v, uint64_t ino)
{
	unsigned kind = ino_kind(ino);
	if (kind >= NODE_KIND_COUNT || !kind_ops[kind]->valid(v, ino))
		return NULL;
	return kind_ops[kind];
}

int view_pid_ns_fd(const struct view *v)
{
	return v->cfg.pid_ns_fd;
}

int view_cpu_map(struct view *v, pid_t tid, struct cpu_map **ret)
{
	return cpuview_map_fresh(v->cfg.cpuview, tid, ret);
}

pid_t view_ino_process(uint64_t ino)
{
	switch (ino_kind(ino)) {
	case NODE_PID_DIR:
	case NODE_PID_LINK:
	case NODE_PID_MAGIC:
	case NODE_PID_FILE:
		return ino_pid(ino);
	default:
		return 0;
	}
}

uint64_t view_proc_ino(void)
{
	return files_row_ino(ROW_PROC);
}

struct intern_walk {
	int dirfd;
	const char *dir;
	const char *prefix;
	int depth;
};

static void intern_entry(const struct dirent *de, void *data)
{
	const struct intern_walk *w = data;
	pid_t pid;
	if (proc_parse_pid(de->d_name, &pid))
		return; /* not a name */
	g_autofree char *path = *w->prefix ? g_strconcat(w->prefix, "/", de->d_name, NULL) : g_strdup(de->d_name);
	names_intern(path);
	if (w->depth > 1 && de->d_type == DT_DIR) {
		g_autofree char *sub = g_strconcat(w->dir, "/", de->d_name, NULL);
		struct intern_walk below = { w->dirfd, sub, path, w->depth - 1 };
		dirwalk_sorted(w->dirfd, sub, intern_entry, &below);
	}
}

/* Intern dir/<entries> (sorted, depth levels down) as paths under prefix;
 * what is not a name (a pid) is skipped. */
static void intern_tree(int dirfd, const char *dir, const char *prefix, int depth)
{
	struct intern_walk w = { dirfd, dir, prefix, depth };
	dirwalk_sorted(dirfd, dir, intern_entry, &w);
}

/* The names inodes carry, interned once, sorted: a daemon taking over
 * from another knows the numbers of the inodes the kernel cached before
 * it sees their names, and two names of one hash get the same numbers in
 * both. The top of the procfs, the CPU directory, and a CPU's own. */
static void intern_known_names(const struct view_config *cfg)
{
	static gsize done;
	if (!g_once_init_enter(&done))
		return;
	intern_tree(cfg->proc_fd, ".", "", 1);
	intern_tree(cfg->sys_cpu_fd, ".", "", 4);
	intern_tree(cfg->sys_cpu_fd, "cpu0", "", 3);
	g_once_init_leave(&done, 1);
}

/* tidcache's ref and unref of values that are no references (caller_ns). */
static gpointer same_pointer(gpointer p)
{
	return p;
}

static void no_unref(gpointer p)
{
}

int view_new(const struct view_config *cfg, struct view **ret_view)
{
	g_autofree struct view *v = g_new0(struct view, 1);

	v->cfg = *cfg;
	clock_gettime(CLOCK_REALTIME, &v->born);
	intern_known_names(cfg);
	v->pid_entry_index = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	v->pid_entry_names = g_ptr_array_new_with_free_func(g_free);
	g_ptr_array_add(v->pid_entry_names, NULL);
	int r = proc_index_pid_entries(v);
	if (r < 0) {
		g_hash_table_unref(v->pid_entry_index);
		g_ptr_array_unref(v->pid_entry_names);
		return r;
	}
	v->served = served_new();
	tidcache_init(&v->caller_ns, same_pointer, no_unref);
	*ret_view = g_steal_pointer(&v);
	return 0;
}

void view_free(struct view *v)
{
	if (!v)
		return;
	g_hash_table_unref(v->pid_entry_index);
	g_ptr_array_unref(v->pid_entry_names);
	served_free(v->served);
	tidcache_clear(&v->caller_ns);
	g_free(v);
}

void view_attr_fill(const struct view *v, struct stat *st, uint64_t ino, mode_t mode, off_t size)
{
	*st = (struct stat){
		.st_ino = ino,
		.st_mode = mode,
		.st_nlink = S_ISDIR(mode) ? 2 : 1,
		.st_size = size,
		.st_blksize = 4096,
		.st_atim = v->born,
		.st_mtim = v->born,
		.st_ctim = v->born,
	};
}

int view_served_file_attr(struct view *v, const struct caller *c, uint64_t ino, struct stat *ret,
			  double *ret_timeout)
{
	*ret_timeout = TIMEOUT_STABLE;
	view_attr_fill(v, ret, ino, S_IFREG | view_file_mode(v, ino), 0);
	return 0;
}

const char *view_pressure_name(uint64_t ino)
{
	if (ino_kind(ino) != NODE_HOST_FILE)
		return NULL;
	switch (ino_served_row(ino) & ~ROW_NS_FLAG) {
	case ROW_PRESSURE_CPU:
		return "cpu";
	case ROW_PRESSURE_MEMORY:
		return "memory";
	case ROW_PRESSURE_IO:
		return "io";
	case ROW_PRESSURE_IRQ:
		return "irq";
	default:
		return NULL;
	}
}

mode_t view_file_mode(const struct view *v, uint64_t ino)
{
	const char *pressure = view_pressure_name(ino);
	return pressure ? iogroups_pressure_mode(v->cfg.iogroups, pressure) : 0444;
}

int view_trigger(struct view *v, const struct caller *c, uint64_t ino, const char *text, int *ret_fd)
{
	const char *pressure = view_pressure_name(ino);
	return pressure ? iogroups_trigger(v->cfg.iogroups, c, pressure, text, ret_fd) : -EINVAL;
}

void view_dirent_add(GArray *entries, const char *name, uint64_t ino, mode_t type)
{
	struct view_dirent e = { g_strdup(name), ino, type };
	g_array_append_val(entries, e);
}

int view_lookup(struct view *v, const struct caller *c, uint64_t parent, const char *name,
		struct view_entry *ret)
{
	struct view_entry e = { .pidfd = -1 };
	const struct kind_ops *ops = ops_of(v, parent);

	if (!ops)
		return -ESTALE;
	if (strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return -EINVAL;
	if (!ops->lookup)
		return -ENOTDIR;
	int r = ops->lookup(v, c, parent, name, &e);
	if (r < 0)
		return r;
	if (e.ino != 0 && !kind_ops[ino_kind(e.ino)]->attr_from_lookup) {
		r = kind_ops[ino_kind(e.ino)]->attr(v, c, e.ino, &e.attr, &e.attr_timeout);
		if (r < 0)
			return r;
		e.entry_timeout = e.attr_timeout;
	}
	*ret = e;
	return 0;
}

int view_getattr(struct view *v, const struct caller *c, uint64_t ino, struct stat *ret_attr,
		 double *ret_timeout)
{
	const struct kind_ops *ops = ops_of(v, ino);

	if (!ops)
		return -ESTALE;
	if (ops->current) {
		int r = ops->current(v, ino);
		if (r < 0)
			return r;
	}
	return ops->attr(v, c, ino, ret_attr, ret_timeout);
}

int view_readlink(struct view *v, const struct caller *c, uint64_t ino, char **ret_target)
{
	const struct kind_ops *ops = ops_of(v, ino);

	if (!ops)
		return -ESTALE;
	return ops->readlink ? ops->readlink(v, c, ino, ret_target) : -EINVAL;
}

static void dirent_clear(gpointer p)
{
	g_free(((struct view_dirent *)p)->name);
}

int view_readdir(struct view *v, const struct caller *c, uint64_t ino, GArray **ret_entries)
{
	g_autoptr(GArray) entries = g_array_new(FALSE, FALSE, sizeof(struct view_dirent));
	const struct kind_ops *ops = ops_of(v, ino);

	g_array_set_clear_func(entries, dirent_clear);
	if (!ops)
		return -ESTALE;
	if (!ops->readdir)
		return -ENOTDIR;
	view_dirent_add(entries, ".", ino, S_IFDIR);
	view_dirent_add(entries, "..", ino, S_IFDIR);
	int r = ops->readdir(v, c, ino, entries);
	if (r < 0)
		return r;
	*ret_entries = g_steal_pointer(&entries);
	return 0;
}

/* Writes are refused (EACCES), as the kernel refuses them on read-only
 * proc and sysfs files, but to pressure files (PSI triggers), where the
 * kernel's own file decides; directories and links are not opened here. */
int view_open(struct view *v, const struct caller *c, uint64_t ino, int flags, GBytes **ret_content,
	      int64_t *ret_version)
{
	const struct kind_ops *ops = ops_of(v, ino);

	if (!ops)
		return -ESTALE;
	if (!ops->open)
		return ops->type == S_IFDIR ? -EISDIR : -ELOOP;
	const char *pressure = view_pressure_name(ino);
	if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC)) {
		int r = pressure ? iogroups_may_trigger(v->cfg.iogroups, c, pressure) : -EACCES;
		if (r < 0)
			return r;
	}
	*ret_version = 0;
	return ops->open(v, c, ino, ret_content, ret_version);
}

unsigned view_class_row(uint64_t ino)
{
	return ino_kind(ino) == NODE_HOST_FILE ? (unsigned)files_class_row(ino) : 0;
}

int view_own_class_ino(struct view *v, const struct caller *c, uint64_t ino, uint64_t *ret)
{
	unsigned r = view_class_row(ino);
	if (r)
		return files_row_ino_for(v, c, (enum row)r, ret);
	*ret = ino;
	return 0;
}

int view_class_text(struct view *v, const struct caller *c, uint64_t ino, GBytes **ret, int64_t *ret_version)
{
	return view_class_row(ino) ? files_class_text(v, c, ino, ret, ret_version) : -ENOENT;
}

int view_read_shared(struct view *v, uint64_t ino, GBytes **ret)
{
	int64_t version;
	return served_peek(v->served, ino, ret, &version);
}

int view_proc_text(struct view *v, const struct caller *c, const char *name, GBytes **ret)
{
	struct view_entry e;
	int64_t version;
	int r = view_lookup(v, c, view_proc_ino(), name, &e);
	if (r == 0 && e.pidfd >= 0)
		close(e.pidfd);
	if (r == 0 && e.ino == 0)
		r = -ENOENT;
	if (r == 0)
		r = view_open(v, c, e.ino, O_RDONLY, ret, &version);
	if (r == -ELOOP) /* delegated: the host's own file */
		r = procfile_read_at(v->cfg.proc_fd, name, ret);
	return r;
}

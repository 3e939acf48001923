/* The static part of the view: its directories and the files the daemon
 * serves from renderers. Adding a daemon-served file is one row here and one
 * renderer. */
#include "view-internal.h"

#include "delegate.h"
#include "smaps.h"

#include <errno.h>
#include <string.h>

/* Renders the file called name for the caller. */
typedef int (*render_fn)(struct view *v, const struct caller *c, const char *name, GBytes **ret);

static int render_cpuinfo(struct view *v, const struct caller *c, const char *name, GBytes **ret);
static int render_stat(struct view *v, const struct caller *c, const char *name, GBytes **ret);
static int render_cpu_set(struct view *v, const struct caller *c, const char *name, GBytes **ret);
static int render_stats(struct view *v, const struct caller *c, const char *name, GBytes **ret);
static int render_control(struct view *v, const struct caller *c, const char *name, GBytes **ret);

static const struct row_def {
	const char *name;
	enum row parent;
	enum node_kind kind;
	gboolean hidden; /* can be looked up, is not listed */
	render_fn render;
} rows[ROW_COUNT] = {
	[ROW_ROOT] = { "", ROW_NONE, NODE_STATIC_DIR, FALSE, NULL },
	[ROW_PROC] = { "proc", ROW_ROOT, NODE_STATIC_DIR, FALSE, NULL },
	[ROW_PROC_REAL] = { DELEGATE_REAL_NAME, ROW_PROC, NODE_REAL_DIR, TRUE, NULL },
	[ROW_PROC_CPUINFO] = { "cpuinfo", ROW_PROC, NODE_HOST_FILE, FALSE, render_cpuinfo },
	[ROW_PROC_STAT] = { "stat", ROW_PROC, NODE_HOST_FILE, FALSE, render_stat },
	[ROW_SYS] = { "sys", ROW_ROOT, NODE_STATIC_DIR, FALSE, NULL },
	[ROW_SYS_DEVICES] = { "devices", ROW_SYS, NODE_STATIC_DIR, FALSE, NULL },
	[ROW_SYS_SYSTEM] = { "system", ROW_SYS_DEVICES, NODE_STATIC_DIR, FALSE, NULL },
	[ROW_SYS_CPU] = { "cpu", ROW_SYS_SYSTEM, NODE_SYS_MIRROR, FALSE, NULL },
	[ROW_CPU_ONLINE] = { "online", ROW_SYS_CPU, NODE_HOST_FILE, FALSE, render_cpu_set },
	[ROW_CPU_POSSIBLE] = { "possible", ROW_SYS_CPU, NODE_HOST_FILE, FALSE, render_cpu_set },
	[ROW_CPU_PRESENT] = { "present", ROW_SYS_CPU, NODE_HOST_FILE, FALSE, render_cpu_set },
	[ROW_CPU_OFFLINE] = { "offline", ROW_SYS_CPU, NODE_HOST_FILE, FALSE, render_cpu_set },
	[ROW_META] = { ".cgprocfs", ROW_ROOT, NODE_STATIC_DIR, FALSE, NULL },
	[ROW_META_STATS] = { "stats", ROW_META, NODE_HOST_FILE, FALSE, render_stats },
	[ROW_META_CONTROL] = { "control", ROW_META, NODE_HOST_FILE, FALSE, render_control },
};
/* A row number fits where the named layout carries one. */
G_STATIC_ASSERT(ROW_COUNT <= (1u << INO_ID_BITS));

uint64_t files_row_ino(enum row r)
{
	/* The mirror's root is the mirror node of path ".". The root row
	 * is 1 in a kind-0 node, so the root is inode 1 as FUSE wants. */
	return rows[r].kind == NODE_SYS_MIRROR ? ino_named_make(NODE_SYS_MIRROR, 0, 0)
					       : ino_named_make(rows[r].kind, r, 0);
}

enum row files_find_row(enum row parent, const char *name)
{
	for (enum row r = ROW_ROOT; r < ROW_COUNT; r++)
		if (rows[r].parent == parent && strcmp(rows[r].name, name) == 0)
			return r;
	return ROW_NONE;
}

void files_list_rows(GArray *entries, enum row parent)
{
	for (enum row r = ROW_ROOT; r < ROW_COUNT; r++)
		if (rows[r].parent == parent && !rows[r].hidden)
			view_dirent_add(entries, rows[r].name, files_row_ino(r),
					rows[r].kind == NODE_HOST_FILE ? S_IFREG : S_IFDIR);
}

/* Rows are of the named layout, class 0 (no file has other classes yet). */
static gboolean row_valid(const struct view *v, uint64_t ino)
{
	uint64_t r = ino_id(ino);
	return ino_class(ino) == 0 && r > ROW_NONE && r < ROW_COUNT && rows[r].kind == ino_kind(ino);
}

static int dir_attr(struct view *v, const struct caller *c, uint64_t ino, struct stat *ret, double *ret_timeout)
{
	*ret_timeout = TIMEOUT_STABLE;
	view_attr_fill(v, ret, ino, S_IFDIR | 0555, 0);
	return 0;
}

static int static_dir_lookup(struct view *v, const struct caller *c, uint64_t parent, const char *name,
			     struct view_entry *ret)
{
	enum row r = files_find_row((enum row)ino_id(parent), name);
	if (r != ROW_NONE) {
		ret->ino = files_row_ino(r);
		return 0;
	}
	if (ino_id(parent) == ROW_PROC)
		return proc_lookup_top(v, c, name, ret);
	return -ENOENT;
}

static int static_dir_readdir(struct view *v, const struct caller *c, uint64_t ino, GArray *entries)
{
	files_list_rows(entries, (enum row)ino_id(ino));
	return ino_id(ino) == ROW_PROC ? proc_list_top(v, c, entries) : 0;
}

const struct kind_ops files_static_dir_ops = {
	.name = "static directory",
	.type = S_IFDIR,
	.valid = row_valid,
	.attr = dir_attr,
	.lookup = static_dir_lookup,
	.readdir = static_dir_readdir,
};

static int real_dir_lookup(struct view *v, const struct caller *c, uint64_t parent, const char *name,
			   struct view_entry *ret)
{
	return -ENOENT; /* the real procfs is mounted over it */
}

static int real_dir_readdir(struct view *v, const struct caller *c, uint64_t ino, GArray *entries)
{
	return 0;
}

const struct kind_ops files_real_dir_ops = {
	.name = "real procfs mount point",
	.type = S_IFDIR,
	.valid = row_valid,
	.attr = dir_attr,
	.lookup = real_dir_lookup,
	.readdir = real_dir_readdir,
};

static int served_open(struct view *v, const struct caller *c, uint64_t ino, GBytes **ret)
{
	const struct row_def *row = &rows[ino_id(ino)];
	return row->render(v, c, row->name, ret);
}

const struct kind_ops files_served_ops = {
	.name = "served file",
	.type = S_IFREG,
	.valid = row_valid,
	.attr = view_served_file_attr,
	.open = served_open,
};

int files_rewrite_for(const struct cpu_map *map, GBytes *host_bytes, rewrite_fn rewrite, GBytes **ret)
{
	char *host = g_strndup(g_bytes_get_data(host_bytes, NULL), g_bytes_get_size(host_bytes));
	GString *out = NULL;
	int r = rewrite(host, map, &out);
	if (r < 0) {
		g_debug("host text not understood (%s): serving it unchanged", g_strerror(-r));
		*ret = g_bytes_new_take(host, strlen(host));
		return 0;
	}
	g_free(host);
	*ret = g_string_free_to_bytes(out);
	return 0;
}

/* Read dirfd/path and rewrite it for the caller's CPUs. */
static int render_rewritten(struct view *v, const struct caller *c, int dirfd, const char *path,
			    rewrite_fn rewrite, GBytes **ret)
{
	g_autoptr(GBytes) host = NULL;
	int r = procfile_read_at(dirfd, path, &host);
	if (r < 0)
		return r;
	g_autoptr(cpu_map) map = cpuview_map_for(v->cfg.cpuview, c->tid);
	return files_rewrite_for(map, host, rewrite, ret);
}

static int render_cpuinfo(struct view *v, const struct caller *c, const char *name, GBytes **ret)
{
	return render_rewritten(v, c, v->cfg.proc_fd, name, cpuview_render_cpuinfo, ret);
}

static int render_stat(struct view *v, const struct caller *c, const char *name, GBytes **ret)
{
	return render_rewritten(v, c, v->cfg.proc_fd, name, cpuview_render_stat, ret);
}

/* online, possible, present: the caller's CPUs are 0..N-1; offline (possible
 * but not online, which the view makes the same): none. */
static int render_cpu_set(struct view *v, const struct caller *c, const char *name, GBytes **ret)
{
	g_autoptr(cpu_map) map = cpuview_map_for(v->cfg.cpuview, c->tid);
	if (map->is_host)
		return procfile_read_at(v->cfg.sys_cpu_fd, name, ret);
	*ret = strcmp(name, "offline") == 0 ? g_bytes_new_static("\n", 1)
					    : g_string_free_to_bytes(cpuview_render_range(map));
	return 0;
}

static int render_stats(struct view *v, const struct caller *c, const char *name, GBytes **ret)
{
	GString *out = smaps_render_stats(v->cfg.smaps);
	if (v->cfg.more_stats)
		v->cfg.more_stats(out, v->cfg.more_stats_data);
	*ret = g_string_free_to_bytes(out);
	return 0;
}

static int render_control(struct view *v, const struct caller *c, const char *name, GBytes **ret)
{
	if (!v->cfg.control_socket)
		return -ENOENT;
	*ret = g_bytes_new_take(g_strconcat(v->cfg.control_socket, "\n", NULL), strlen(v->cfg.control_socket) + 1);
	return 0;
}

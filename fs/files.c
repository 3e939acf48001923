/* The static part of the view: its directories and the files the daemon
 * serves from renderers. Adding a daemon-served file is one row here and one
 * renderer. */
#include "view-internal.h"

#include "delegate.h"
#include "memgroups.h"
#include "metrics.h"
#include "pidns.h"
#include "smaps.h"
#include "cputime.h"

#include <errno.h>
#include <string.h>

/* What decides the text of a row served per class. */
enum class_source {
	CLASS_NONE,   /* served alike to all */
	CLASS_CPU,    /* the CPUs the caller sees: a struct cpu_map */
	CLASS_MEMORY, /* the caller's memory cgroup (fs/memgroups): a string */
	CLASS_UPTIME,  /* the caller's pid namespace and CPU time (fs/cputime): a struct cputime_key */
	CLASS_CPUTIME, /* its CPUs and CPU time (fs/cputime): a struct cputime_key */
	CLASS_LOADAVG, /* its cgroup's threads (fs/cputime): a struct cputime_key */
	CLASS_DISKS,   /* its I/O cgroup (fs/iogroups): a string */
	CLASS_PRESSURE, /* its v2 cgroup (fs/iogroups): a string */
};

/* Renders the file called name for what decides its text (of the row's
 * class source; NULL for a row that is the same for every caller). */
typedef int (*render_fn)(struct view *v, gconstpointer decides, const char *name, GBytes **ret);

static int render_cpuinfo(struct view *v, gconstpointer map, const char *name, GBytes **ret);
static int render_stat(struct view *v, gconstpointer key, const char *name, GBytes **ret);
static int render_memory(struct view *v, gconstpointer group, const char *name, GBytes **ret);
static int render_uptime(struct view *v, gconstpointer key, const char *name, GBytes **ret);
static int render_loadavg(struct view *v, gconstpointer key, const char *name, GBytes **ret);
static int render_diskstats(struct view *v, gconstpointer group, const char *name, GBytes **ret);
static int render_pressure(struct view *v, gconstpointer group, const char *name, GBytes **ret);
static int render_stats(struct view *v, gconstpointer none, const char *name, GBytes **ret);
static int render_control(struct view *v, gconstpointer none, const char *name, GBytes **ret);

/* How a served file reaches its readers. */
enum served_mode {
	SERVED_PER_OPEN,  /* rendered for each open, read without the page cache */
	/* One inode per CPU class (fs/ino.h), so that the page cache of an
	 * inode, which sendfile and splice read through, only ever holds its
	 * class's text, and its size is exact: */
	SERVED_FRESH_PER_CLASS,  /* a text for each open and each read pass from
	                          * offset 0, at most FRESH_AGES old (counters
	                          * that move) */
	SERVED_EXACT_PER_CLASS,  /* the same, rendered at each (exact counts) */
	SERVED_SHARED_PER_CLASS, /* one text per class, kept by the page cache,
	                          * at most SHARED_MAX_AGE_US old (fs/served.h) */
};

static const struct row_def {
	const char *name;
	enum row parent;
	enum node_kind kind;
	gboolean hidden; /* can be looked up, is not listed */
	render_fn render;
	enum served_mode mode;
	enum class_source source; /* of a row served per class */
} rows[ROW_COUNT] = {
	[ROW_ROOT] = { "", ROW_NONE, NODE_STATIC_DIR, FALSE, NULL, SERVED_PER_OPEN, CLASS_NONE },
	[ROW_PROC] = { "proc", ROW_ROOT, NODE_STATIC_DIR, FALSE, NULL, SERVED_PER_OPEN, CLASS_NONE },
	[ROW_PROC_REAL] = { DELEGATE_REAL_NAME, ROW_PROC, NODE_REAL_DIR, TRUE, NULL, SERVED_PER_OPEN, CLASS_NONE },
	[ROW_PROC_CPUINFO] = { "cpuinfo", ROW_PROC, NODE_HOST_FILE, FALSE, render_cpuinfo, SERVED_SHARED_PER_CLASS, CLASS_CPU },
	[ROW_PROC_STAT] = { "stat", ROW_PROC, NODE_HOST_FILE, FALSE, render_stat, SERVED_FRESH_PER_CLASS, CLASS_CPUTIME },
	[ROW_SYS] = { "sys", ROW_ROOT, NODE_STATIC_DIR, FALSE, NULL, SERVED_PER_OPEN, CLASS_NONE },
	[ROW_SYS_DEVICES] = { "devices", ROW_SYS, NODE_STATIC_DIR, FALSE, NULL, SERVED_PER_OPEN, CLASS_NONE },
	[ROW_SYS_SYSTEM] = { "system", ROW_SYS_DEVICES, NODE_STATIC_DIR, FALSE, NULL, SERVED_PER_OPEN, CLASS_NONE },
	[ROW_SYS_CPU] = { "cpu", ROW_SYS_SYSTEM, NODE_SYS_MIRROR, FALSE, NULL, SERVED_PER_OPEN, CLASS_NONE },
	[ROW_CPU_ONLINE] = { "online", ROW_SYS_CPU, NODE_HOST_FILE, FALSE, sys_render_cpu_set, SERVED_SHARED_PER_CLASS, CLASS_CPU },
	[ROW_CPU_POSSIBLE] = { "possible", ROW_SYS_CPU, NODE_HOST_FILE, FALSE, sys_render_cpu_set, SERVED_SHARED_PER_CLASS, CLASS_CPU },
	[ROW_CPU_PRESENT] = { "present", ROW_SYS_CPU, NODE_HOST_FILE, FALSE, sys_render_cpu_set, SERVED_SHARED_PER_CLASS, CLASS_CPU },
	[ROW_CPU_OFFLINE] = { "offline", ROW_SYS_CPU, NODE_HOST_FILE, FALSE, sys_render_cpu_set, SERVED_SHARED_PER_CLASS, CLASS_CPU },
	/* Read by free, top and psutil for levels, not rates: kept up to a
	 * second like cpuinfo. vmstat's counters give rates (vmstat 1). */
	[ROW_PROC_MEMINFO] = { "meminfo", ROW_PROC, NODE_HOST_FILE, FALSE, render_memory, SERVED_SHARED_PER_CLASS,
			       CLASS_MEMORY },
	[ROW_PROC_SWAPS] = { "swaps", ROW_PROC, NODE_HOST_FILE, FALSE, render_memory, SERVED_SHARED_PER_CLASS,
			     CLASS_MEMORY },
	[ROW_PROC_VMSTAT] = { "vmstat", ROW_PROC, NODE_HOST_FILE, FALSE, render_memory, SERVED_FRESH_PER_CLASS,
			      CLASS_MEMORY },
	[ROW_PROC_UPTIME] = { "uptime", ROW_PROC, NODE_HOST_FILE, FALSE, render_uptime, SERVED_FRESH_PER_CLASS,
			      CLASS_UPTIME },
	[ROW_PROC_LOADAVG] = { "loadavg", ROW_PROC, NODE_HOST_FILE, FALSE, render_loadavg, SERVED_FRESH_PER_CLASS,
			       CLASS_LOADAVG },
	[ROW_PROC_DISKSTATS] = { "diskstats", ROW_PROC, NODE_HOST_FILE, FALSE, render_diskstats, SERVED_EXACT_PER_CLASS,
				 CLASS_DISKS },
	/* Served where the host has pressure files, each file where the host
	 * has it. */
	[ROW_PROC_PRESSURE] = { "pressure", ROW_PROC, NODE_STATIC_DIR, FALSE, NULL, SERVED_PER_OPEN, CLASS_PRESSURE },
	[ROW_PRESSURE_CPU] = { "cpu", ROW_PROC_PRESSURE, NODE_HOST_FILE, FALSE, render_pressure, SERVED_FRESH_PER_CLASS,
			       CLASS_PRESSURE },
	[ROW_PRESSURE_MEMORY] = { "memory", ROW_PROC_PRESSURE, NODE_HOST_FILE, FALSE, render_pressure,
				  SERVED_FRESH_PER_CLASS, CLASS_PRESSURE },
	[ROW_PRESSURE_IO] = { "io", ROW_PROC_PRESSURE, NODE_HOST_FILE, FALSE, render_pressure, SERVED_FRESH_PER_CLASS,
			      CLASS_PRESSURE },
	[ROW_PRESSURE_IRQ] = { "irq", ROW_PROC_PRESSURE, NODE_HOST_FILE, FALSE, render_pressure, SERVED_FRESH_PER_CLASS,
			       CLASS_PRESSURE },
	[ROW_META] = { ".cgprocfs", ROW_ROOT, NODE_STATIC_DIR, FALSE, NULL, SERVED_PER_OPEN, CLASS_NONE },
	/* The daemon's own files: exact at every read, never cached. */
	[ROW_META_STATS] = { "stats", ROW_META, NODE_HOST_FILE, FALSE, render_stats, SERVED_PER_OPEN, CLASS_NONE },
	[ROW_META_CONTROL] = { "control", ROW_META, NODE_HOST_FILE, FALSE, render_control, SERVED_PER_OPEN, CLASS_NONE },
};
/* How old a shared text may be when it is served: a reader never gets a
 * text older than this (cpuinfo's MHz, meminfo's levels). */
#define SHARED_MAX_AGE_US G_USEC_PER_SEC
static const struct served_ages SHARED_AGES = { SHARED_MAX_AGE_US, SHARED_MAX_AGE_US };
/* A class's counters (stat, uptime, loadavg, vmstat, pressure) are read
 * once a tick, by the first open of the class in it, not at each open: a
 * tick is their unit (USER_HZ, uptime's hundredths), and a text that old
 * cannot be told from a fresh one. The host's file as it is, at each open;
 * diskstats' too, whose counts are exact: a reader that wrote sees it. */
static const struct served_ages FRESH_AGES = { G_USEC_PER_SEC / 100, 0 };
static const struct served_ages EXACT_AGES = { 0, 0 };
/* How old a per-class inode's text may be at an open, by its row's mode. */
static const struct served_ages *const OPEN_AGES[] = { [SERVED_FRESH_PER_CLASS] = &FRESH_AGES,
						       [SERVED_EXACT_PER_CLASS] = &EXACT_AGES,
						       [SERVED_SHARED_PER_CLASS] = &SHARED_AGES };
/* Attributes: the size of the last text, whatever its age. */
static const struct served_ages ANY_AGE = { G_MAXINT64, G_MAXINT64 };
/* How long the kernel may keep a shared text's attributes (size, version)
 * without asking; reads of a file held open past it ask again, and get
 * the new version's text. */
#define SHARED_ATTR_TIMEOUT 1.0
G_STATIC_ASSERT(ROW_COUNT <= INO_ROW_MAX + 1);
/* In the host's view, a caller of another pid namespace gets inodes of its
 * own for the rows served per class: the row flagged, the namespace (its
 * inode) as the class, the text rendered for each open for the caller.
 * Such a caller is a container that binds single files of the host's view
 * (docker -v, as LXCFS is used): its runtime makes the binds before it
 * sets the container's limits, and a bind keeps the inode its maker looked
 * up, which a class inode of the limits then in force would be. */
G_STATIC_ASSERT(ROW_COUNT <= ROW_NS_FLAG && ROW_NS_FLAG <= INO_ROW_MAX);
/* A row number fits where the named layout carries one. */
G_STATIC_ASSERT(ROW_COUNT <= (1u << INO_ID_BITS));

uint64_t files_row_ino(enum row r)
{
	/* The mirror's root is the mirror node of path ".". The root row
	 * is 1 in a kind-0 node, so the root is inode 1 as FUSE wants. */
	if (rows[r].kind == NODE_HOST_FILE)
		return ino_served_make(NODE_HOST_FILE, r, 0);
	return rows[r].kind == NODE_SYS_MIRROR ? ino_named_make(NODE_SYS_MIRROR, 0)
					       : ino_named_make(rows[r].kind, r);
}

/* Where what decides a row's text is found, for a class source other than
 * the CPU view's, and the class function of that row's texts. */
struct finder {
	struct deciders *deciders;
	deciders_class_fn class_of;
};

/* FALSE for the CPU view's rows, and where the row's view is off (the row
 * is then the host's, delegated). */
static gboolean row_finder(const struct view *v, const struct row_def *row, struct finder *ret)
{
	struct memgroups *m = v->cfg.memgroups;
	struct cputimes *t = v->cfg.cputimes;
	struct iogroups *g = v->cfg.iogroups;
	switch (row->source) {
	case CLASS_MEMORY:
		*ret = (struct finder){ m ? memgroups_deciders(m) : NULL, memgroups_class };
		break;
	case CLASS_UPTIME:
		*ret = (struct finder){ t ? cputimes_deciders(t) : NULL, cputime_uptime_class };
		break;
	case CLASS_CPUTIME:
		*ret = (struct finder){ t ? cputimes_deciders(t) : NULL, cputime_stat_class };
		break;
	case CLASS_LOADAVG:
		*ret = (struct finder){ t && cputimes_serves_loadavg(t) ? cputimes_deciders(t) : NULL,
					cputime_loadavg_class };
		break;
	case CLASS_DISKS:
		*ret = (struct finder){ g ? iogroups_disk_deciders(g) : NULL, iogroups_disk_class };
		break;
	case CLASS_PRESSURE: /* the directory: where any file is */
		*ret = (struct finder){ g && iogroups_has_pressure(g, row->kind == NODE_STATIC_DIR ? NULL : row->name)
						? iogroups_pressure_deciders(g)
						: NULL,
					iogroups_pressure_class };
		break;
	case CLASS_NONE:
	case CLASS_CPU:
		*ret = (struct finder){ NULL, NULL };
		break;
	}
	return ret->deciders != NULL;
}

/* The rows of the memory, CPU time and I/O views exist only where they
 * are on. */
static gboolean row_served(const struct view *v, enum row r)
{
	struct finder f;
	return rows[r].source == CLASS_NONE || rows[r].source == CLASS_CPU || row_finder(v, &rows[r], &f);
}

enum row files_find_row(const struct view *v, enum row parent, const char *name)
{
	for (enum row r = ROW_ROOT; r < ROW_COUNT; r++)
		if (rows[r].parent == parent && strcmp(rows[r].name, name) == 0 && row_served(v, r))
			return r;
	return ROW_NONE;
}

/* What decides the text of a row served per class, for one class. */
struct decider {
	const struct row_def *row;
	struct finder finder; /* deciders NULL: the CPU view's */
	uint64_t class_id;
	gpointer what; /* a reference: of the row's class source's type */
};

static void decider_clear(struct decider *d)
{
	if (d->what && d->finder.deciders)
		d->finder.deciders->cache.unref(d->what);
	else if (d->what)
		cpu_map_unref(d->what);
	d->what = NULL;
}
typedef struct decider decider;
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(decider, decider_clear)

/* The caller's. fresh: found now, not as this thread kept it. -EIO
 * where the caller's class cannot be decided (its scope not found: never
 * the host's); ret is then empty. */
static int decider_of_caller(struct view *v, const struct caller *c, const struct row_def *row, gboolean fresh,
			     struct decider *ret)
{
	*ret = (struct decider){ row, { NULL, NULL }, 0, NULL };
	if (row_finder(v, row, &ret->finder)) {
		int r = deciders_of(ret->finder.deciders, c->tid, fresh, &ret->what);
		ret->class_id = r == 0 ? ret->finder.class_of(ret->what) : 0;
		return r;
	}
	struct cpu_map *map = NULL;
	int r = fresh ? cpuview_map_fresh(v->cfg.cpuview, c->tid, &map) : cpuview_map_for(v->cfg.cpuview, c->tid, &map);
	ret->class_id = r == 0 ? cpu_map_class(map) : 0;
	ret->what = map;
	return r;
}

/* Of class_id, as an earlier caller of it had it; FALSE if none did. */
static gboolean decider_of_class(struct view *v, const struct row_def *row, uint64_t class_id,
				 struct decider *ret)
{
	*ret = (struct decider){ row, { NULL, NULL }, class_id, NULL };
	ret->what = row_finder(v, row, &ret->finder) ? deciders_of_class(ret->finder.deciders, class_id)
						     : (gpointer)cpuview_map_of_class(v->cfg.cpuview, class_id);
	return ret->what != NULL;
}

/* A caller moved: no thread answers from what it kept of this row's kind. */
static void decider_forget(struct view *v, const struct decider *d)
{
	if (d->finder.deciders)
		deciders_forget(d->finder.deciders);
	else
		cpuview_forget_cached(v->cfg.cpuview);
}

/* The row of a served inode, and whether it is a namespace's (ROW_NS_FLAG). */
static unsigned served_row(uint64_t ino)
{
	return ino_served_row(ino) & ~ROW_NS_FLAG;
}

static gboolean served_for_ns(uint64_t ino)
{
	return (ino_served_row(ino) & ROW_NS_FLAG) != 0;
}

/* The caller's pid namespace where it is not the view's, in the host's
 * view; else 0. */
static uint64_t foreign_ns(struct view *v, const struct caller *c)
{
	if (view_pid_ns_fd(v) >= 0)
		return 0;
	/* Kept a while, as the other findings of a caller (a thread's pid
	 * namespace is its for life). */
	uint64_t ns = GPOINTER_TO_SIZE(tidcache_get(&v->caller_ns, c->tid));
	if (!ns) {
		ns = pidns_of(v->cfg.proc_fd, c->tid);
		if (ns)
			tidcache_put(&v->caller_ns, c->tid, GSIZE_TO_POINTER(ns));
	}
	return ns == v->cfg.pid_ns ? 0 : ns & INO_SERVED_CLASS_MASK;
}

int files_row_ino_for(struct view *v, const struct caller *c, enum row r, uint64_t *ret)
{
	uint64_t ns = rows[r].mode == SERVED_PER_OPEN ? 0 : foreign_ns(v, c);
	if (rows[r].mode == SERVED_PER_OPEN || ns) {
		*ret = ns ? ino_served_make(NODE_HOST_FILE, r | ROW_NS_FLAG, ns) : files_row_ino(r);
		return 0;
	}
	/* The inode of the caller's class. */
	g_auto(decider) d = { 0 };
	int err = decider_of_caller(v, c, &rows[r], FALSE, &d);
	if (err == 0)
		*ret = ino_served_make(NODE_HOST_FILE, r, d.class_id);
	return err;
}

int files_list_rows(struct view *v, const struct caller *c, GArray *entries, enum row parent)
{
	for (enum row r = ROW_ROOT; r < ROW_COUNT; r++) {
		uint64_t ino;
		if (rows[r].parent != parent || rows[r].hidden || !row_served(v, r))
			continue;
		int err = files_row_ino_for(v, c, r, &ino);
		if (err < 0)
			return err;
		view_dirent_add(entries, rows[r].name, ino, rows[r].kind == NODE_HOST_FILE ? S_IFREG : S_IFDIR);
	}
	return 0;
}

gboolean files_row_valid(const struct view *v, uint64_t ino)
{
	uint64_t r = ino_id(ino);
	return r > ROW_NONE && r < ROW_COUNT && rows[r].kind == ino_kind(ino);
}

int files_dir_attr(struct view *v, const struct caller *c, uint64_t ino, struct stat *ret, double *ret_timeout)
{
	*ret_timeout = TIMEOUT_STABLE;
	view_attr_fill(v, ret, ino, S_IFDIR | 0555, 0);
	return 0;
}

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
	.type = S_IFDIR,
	.valid = files_row_valid,
	.attr = files_dir_attr,
	.lookup = real_dir_lookup,
	.readdir = real_dir_readdir,
};

/* Served files are of the served layout: class 0 for a row served per
 * open alike for all, any class for a row served per class. */
static gboolean served_valid(const struct view *v, uint64_t ino)
{
	unsigned r = served_row(ino);
	gboolean per_class = rows[r].mode != SERVED_PER_OPEN;
	return r > ROW_NONE && r < ROW_COUNT && rows[r].kind == NODE_HOST_FILE &&
	       (served_for_ns(ino) ? per_class && ino_served_class(ino) != 0 && (!v || view_pid_ns_fd(v) < 0)
				   : ino_served_class(ino) == 0 || per_class) &&
	       (!v || row_served(v, r));
}

/* A namespace's inode is no class's: its text is each open's. */
enum row files_class_row(uint64_t ino)
{
	unsigned r = served_row(ino);
	if (!served_valid(NULL, ino) || served_for_ns(ino) || rows[r].mode == SERVED_PER_OPEN ||
	    ino_served_class(ino) == 0)
		return ROW_NONE;
	return (enum row)r;
}

struct class_render {
	struct view *v;
	const struct decider *d;
};

static int render_for_class(void *data, GBytes **ret)
{
	const struct class_render *cr = data;
	return cr->d->row->render(cr->v, cr->d->what, cr->d->row->name, ret);
}

/* The text of a per-class inode for d (of its class), as old as ages
 * allow. */
static int shared_text(struct view *v, uint64_t ino, const struct decider *d, struct served_ages ages,
		       GBytes **ret, int64_t *ret_version)
{
	struct class_render cr = { v, d };
	return served_get(v->served, ino, ages, render_for_class, &cr, ret, ret_version);
}

/* What decides the text of ino's class: known from an earlier caller of
 * it, or the caller's if it is of that class; -ESTALE if neither (a daemon
 * that took over, asked about a class none of its callers had yet). */
static int class_decider(struct view *v, const struct caller *c, uint64_t ino, struct decider *ret)
{
	const struct row_def *row = &rows[served_row(ino)];
	if (decider_of_class(v, row, ino_served_class(ino), ret))
		return 0;
	int r = decider_of_caller(v, c, row, FALSE, ret);
	if (r < 0 || ret->class_id == ino_served_class(ino))
		return r;
	decider_clear(ret);
	return -ESTALE;
}

/* The text of a per-class inode, its class's whoever asks, as old as ages
 * allow: class_decider's -ESTALE where that class is unknown. */
static int class_text(struct view *v, const struct caller *c, uint64_t ino, struct served_ages ages,
		      GBytes **ret, int64_t *ret_version)
{
	g_auto(decider) d = { 0 };
	int r = class_decider(v, c, ino, &d);
	return r < 0 ? r : shared_text(v, ino, &d, ages, ret, ret_version);
}

/* The text of a namespace's inode for the caller: its class inode's, as
 * old as ages allow. */
static int text_for_ns(struct view *v, const struct caller *c, uint64_t ino, struct served_ages ages,
		       GBytes **ret, int64_t *ret_version)
{
	unsigned r = served_row(ino);
	g_auto(decider) d = { 0 };
	int err = decider_of_caller(v, c, &rows[r], FALSE, &d);
	return err < 0 ? err
		       : shared_text(v, ino_served_make(NODE_HOST_FILE, r, d.class_id), &d, ages, ret, ret_version);
}

/* A per-class inode's size is its text's; its mtime, the text's version.
 * A namespace's inode, the caller's text's. A file rendered per open
 * gives its last open's text (rendered once, if none has been yet). */
static int served_attr(struct view *v, const struct caller *c, uint64_t ino, struct stat *ret,
		       double *ret_timeout)
{
	g_autoptr(GBytes) text = NULL;
	int64_t version;
	struct served_ages ages = rows[served_row(ino)].mode == SERVED_SHARED_PER_CLASS ? SHARED_AGES : ANY_AGE;
	int r;

	if (served_for_ns(ino)) {
		r = text_for_ns(v, c, ino, ages, &text, &version);
	} else if (files_class_row(ino) == ROW_NONE) {
		return view_served_file_attr(v, c, ino, ret, ret_timeout);
	} else {
		r = class_text(v, c, ino, ages, &text, &version);
	}
	if (r < 0)
		return r;
	view_attr_fill(v, ret, ino, S_IFREG | view_file_mode(v, ino), (off_t)g_bytes_get_size(text));
	ret->st_mtim = (struct timespec){ version / 1000000000, version % 1000000000 };
	ret->st_ctim = ret->st_mtim;
	/* A namespace's inode has each caller's attributes (and the kernel
	 * keeps no name of it: see foreign_ns). */
	*ret_timeout = served_for_ns(ino) ? 0 : SHARED_ATTR_TIMEOUT;
	return 0;
}

int files_class_text(struct view *v, const struct caller *c, uint64_t ino, GBytes **ret, int64_t *ret_version)
{
	if (rows[served_row(ino)].mode != SERVED_SHARED_PER_CLASS)
		return -ENOENT;
	return class_text(v, c, ino, SHARED_AGES, ret, ret_version);
}

static int served_open(struct view *v, const struct caller *c, uint64_t ino, GBytes **ret,
		       int64_t *ret_version)
{
	const struct row_def *row = &rows[served_row(ino)];
	g_auto(decider) d = { 0 };
	if (served_for_ns(ino)) {
		/* Each open's text, the caller's, rendered now (its binds are read
		 * first right after its runtime set its limits): past the page cache. */
		int r = text_for_ns(v, c, ino, EXACT_AGES, ret, ret_version);
		*ret_version = VIEW_FRESH;
		return r;
	}
	if (files_class_row(ino) == ROW_NONE) /* SERVED_HOST is no error */
		return MIN(row->render(v, NULL, row->name, ret), 0);
	/* Never another class's text: the dentry was cached for another
	 * caller. -ESTALE has the kernel look the name up again. */
	int r = decider_of_caller(v, c, row, FALSE, &d);
	if (r == 0 && d.class_id != ino_served_class(ino)) {
		/* Moved since this thread last looked? Ask again, now. */
		decider_clear(&d);
		r = decider_of_caller(v, c, row, TRUE, &d);
	}
	if (r < 0)
		return r;
	if (d.class_id != ino_served_class(ino)) {
		/* The lookup that gave ino may have answered from another
		 * thread's finding of before a move (this one's may have been
		 * fresh already): the next one must not. Rare: only here. */
		decider_forget(v, &d);
		return -ESTALE;
	}
	r = shared_text(v, ino, &d, *OPEN_AGES[row->mode], ret, ret_version);
	if (row->mode != SERVED_SHARED_PER_CLASS)
		*ret_version = VIEW_FRESH; /* this pass's; kept for the inode's attributes */
	return r;
}

const struct kind_ops files_served_ops = {
	.type = S_IFREG,
	.valid = served_valid,
	.attr = served_attr,
	.open = served_open,
};

/* Read dirfd/path and rewrite it for the CPUs of map. */
static int render_rewritten(int dirfd, const char *path, const struct cpu_map *map, rewrite_fn rewrite,
			    GBytes **ret)
{
	g_autoptr(GBytes) host = NULL;
	int r = procfile_read_at(dirfd, path, &host);
	if (r < 0)
		return r;
	return files_rewrite_for(map, host, rewrite, ret);
}

static int render_cpuinfo(struct view *v, gconstpointer map, const char *name, GBytes **ret)
{
	return render_rewritten(v->cfg.proc_fd, name, map, cpuview_render_cpuinfo, ret);
}

static int render_stat(struct view *v, gconstpointer key, const char *name, GBytes **ret)
{
	return cputimes_render_stat(v->cfg.cputimes, key, ret);
}

/* meminfo, swaps, vmstat: the caller's memory cgroup's. */
static int render_memory(struct view *v, gconstpointer group, const char *name, GBytes **ret)
{
	return memgroups_render(v->cfg.memgroups, group, name, ret);
}

static int render_uptime(struct view *v, gconstpointer key, const char *name, GBytes **ret)
{
	return cputimes_render_uptime(v->cfg.cputimes, key, ret);
}

static int render_loadavg(struct view *v, gconstpointer key, const char *name, GBytes **ret)
{
	return cputimes_render_loadavg(v->cfg.cputimes, key, ret);
}

static int render_diskstats(struct view *v, gconstpointer group, const char *name, GBytes **ret)
{
	return iogroups_render_diskstats(v->cfg.iogroups, group, ret);
}

static int render_pressure(struct view *v, gconstpointer group, const char *name, GBytes **ret)
{
	return iogroups_render_pressure(v->cfg.iogroups, group, name, ret);
}

static int render_stats(struct view *v, gconstpointer none, const char *name, GBytes **ret)
{
	GString *out = smaps_render_stats(v->cfg.smaps);
	guint64 renders, reuses;
	served_counts(v->served, &renders, &reuses);
	metrics_u64(out, "cgprocfs_served_renders_total", "counter",
		    "Texts of served files rendered (their cgroup and host files read), in this view.", renders);
	metrics_u64(out, "cgprocfs_served_reuses_total", "counter",
		    "Opens and attributes given a text rendered before and young enough, in this view.", reuses);
	if (v->cfg.more_stats)
		v->cfg.more_stats(out, v->cfg.more_stats_data);
	*ret = g_string_free_to_bytes(out);
	return 0;
}

static int render_control(struct view *v, gconstpointer none, const char *name, GBytes **ret)
{
	if (!v->cfg.control_socket)
		return -ENOENT;
	*ret = g_bytes_new_take(g_strconcat(v->cfg.control_socket, "\n", NULL), strlen(v->cfg.control_socket) + 1);
	return 0;
}

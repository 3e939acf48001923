/* What the files of fs/view share: the node kinds, the view itself, and one
 * table row of operations per kind. Not for use outside fs/view*.c, files.c
 * and their unit tests. */
#pragma once

#include "ino.h"
#include "procfile.h"
#include "served.h"
#include "tidcache.h"
#include "view.h"

#include <glib.h>
#include <time.h>

/* How long the kernel may keep what does not change for a node's lifetime. */
#define TIMEOUT_STABLE 86400.0
/* A pid directory's attributes are never cached: stat(/proc/<pid>) is how
 * psutil and others ask whether a process still exists, right after reaping
 * it (before the exit watch can drop the entry), and ps reads the owner from
 * it. Paths through the directory do not need its attributes. */
#define TIMEOUT_PID_ATTR 0.0

/* The kind is the top field of every inode number (fs/ino.h). Each has one
 * row of operations in view.c; adding a kind is one row there. */
enum node_kind {
	NODE_STATIC_DIR, /* a directory of the static table (files.c) */
	NODE_REAL_DIR,   /* proc/.real, where the real procfs is mounted */
	NODE_HOST_FILE,  /* a file of the static table served by a renderer */
	NODE_TOP_LINK,   /* proc/<name> -> .real/<name> */
	NODE_PID_DIR,    /* proc/<pid> */
	NODE_PID_LINK,   /* proc/<pid>/<entry> -> ../.real/<pid>/<entry> */
	NODE_PID_MAGIC,  /* proc/<pid>/{exe,cwd,root}: the real link's text */
	NODE_PID_FILE,   /* proc/<pid>/smaps_rollup: served by the daemon */
	NODE_SYS_MIRROR, /* sys/devices/system/cpu/<path>: the host's, read-only */
	NODE_SYS_VCPU,   /* sys/devices/system/cpu/cpu<N>[/<path>]: the caller's CPU N */
	NODE_KIND_COUNT
};
G_STATIC_ASSERT(NODE_KIND_COUNT <= INO_KIND_MAX + 1);

/* Read by every worker of every session serving it, without a lock (all
 * of it is fixed by view_new but magic_generation); freed by its owner
 * (daemon/) with view_free once no session serves it. */
struct view {
	struct view_config cfg;
	struct timespec born; /* times of the nodes that have no times of their own */
	/* The names in a /proc/<pid> directory, fixed by the kernel build and
	 * read once from the procfs at start (from pid 1's directory); frozen
	 * after view_new, so read without a lock. name -> index, index ->
	 * name; index 0 is unused. */
	GHashTable *pid_entry_index;
	GPtrArray *pid_entry_names;
	gint magic_generation; /* atomic */
	struct served *served; /* texts of the files shared per content class */
	/* Each caller thread's pid namespace, in the host's view (its inode,
	 * as a pointer): files.c's foreign_ns. */
	struct tidcache caller_ns;
};

/* The operations of a node kind. A slot the kind's type does not need is
 * NULL: the dispatch in view.c then answers as the kernel would for such a
 * node (ENOTDIR, EINVAL, EISDIR or ELOOP). */
struct kind_ops {
	mode_t type;      /* S_IFDIR, S_IFLNK, S_IFREG; 0: any (as the host's node) */
	/* Attributes come with the lookup (only then, for this kind). */
	gboolean attr_from_lookup;
	/* Is ino one this view could have handed out? Needed by every kind. */
	gboolean (*valid)(const struct view *v, uint64_t ino);
	/* 0 if what the node stands for is still there, checked before its
	 * attributes are given (not on lookup). NULL: nothing to check. */
	int (*current)(struct view *v, uint64_t ino);
	/* Attributes of a node already known to exist, and how long they
	 * hold. Needed by every kind. */
	int (*attr)(struct view *v, const struct caller *c, uint64_t ino, struct stat *ret,
		    double *ret_timeout);
	/* Directories: fills ret->ino (0 for a name the kernel may remember
	 * as missing), with ret->attr if attr_from_lookup. */
	int (*lookup)(struct view *v, const struct caller *c, uint64_t parent, const char *name,
		      struct view_entry *ret);
	/* Directories: appends to entries, after "." and "..". */
	int (*readdir)(struct view *v, const struct caller *c, uint64_t ino, GArray *entries);
	int (*readlink)(struct view *v, const struct caller *c, uint64_t ino, char **ret_target);
	/* Files, once the view knows the open is a read. *ret_version is 0
	 * (the content is this open's alone) unless the content is shared by
	 * every caller of the inode: then its version (fs/served.h). */
	int (*open)(struct view *v, const struct caller *c, uint64_t ino, GBytes **ret_content,
		    int64_t *ret_version);
};

/* The kind whose row lacks a slot its type needs, or -1: every row is
 * complete (unit-tested). */
int view_kind_incomplete(void);

/* view.c: what every family uses. */
void view_attr_fill(const struct view *v, struct stat *st, uint64_t ino, mode_t mode, off_t size);
/* A served file's permissions: 0444, or the host's file's for a pressure
 * file (writable where the kernel's takes triggers from anyone). */
mode_t view_file_mode(const struct view *v, uint64_t ino);
/* A file the daemon serves for each open: read-only, no size (served
 * through direct_io). */
int view_served_file_attr(struct view *v, const struct caller *c, uint64_t ino, struct stat *ret,
			  double *ret_timeout);
void view_dirent_add(GArray *entries, const char *name, uint64_t ino, mode_t type);

/* files.c: the static table (directories and daemon-served files). */
enum row {
	ROW_NONE,
	ROW_ROOT,
	ROW_PROC,
	ROW_PROC_REAL,
	ROW_PROC_CPUINFO,
	ROW_PROC_STAT,
	ROW_SYS,
	ROW_SYS_DEVICES,
	ROW_SYS_SYSTEM,
	ROW_SYS_CPU,
	ROW_CPU_ONLINE,
	ROW_CPU_POSSIBLE,
	ROW_CPU_PRESENT,
	ROW_CPU_OFFLINE,
	ROW_META,
	ROW_META_STATS,
	ROW_META_CONTROL,
	/* Rows only ever go at the end: their numbers are in inode numbers
	 * that a daemon taking over must read as the one before meant them. */
	ROW_PROC_MEMINFO,
	ROW_PROC_SWAPS,
	ROW_PROC_VMSTAT,
	ROW_PROC_UPTIME,
	ROW_PROC_LOADAVG,
	ROW_PROC_DISKSTATS,
	ROW_PROC_PRESSURE,
	ROW_PRESSURE_CPU,
	ROW_PRESSURE_MEMORY,
	ROW_PRESSURE_IO,
	ROW_PRESSURE_IRQ,
	ROW_COUNT
};
/* In a served inode's row number: the row's text for a pid namespace
 * (files.c). */
#define ROW_NS_FLAG 0x80u
extern const struct kind_ops files_real_dir_ops, files_served_ops;
/* Whether ino is a row of the table, of the kind that row is. */
gboolean files_row_valid(const struct view *v, uint64_t ino);
/* A table directory's attributes. */
int files_dir_attr(struct view *v, const struct caller *c, uint64_t ino, struct stat *ret, double *ret_timeout);
uint64_t files_row_ino(enum row r);
/* The inode of row r for the caller: of its content class for a served
 * file whose text depends on it. 0, or -EIO where that class cannot be
 * decided (the caller's scope not found). */
int files_row_ino_for(struct view *v, const struct caller *c, enum row r, uint64_t *ret);
/* The row named name under parent, if v serves it; or ROW_NONE. */
enum row files_find_row(const struct view *v, enum row parent, const char *name);
/* The rows under parent but hidden ones, as the caller sees them: 0, or
 * files_row_ino_for's -EIO. */
int files_list_rows(struct view *v, const struct caller *c, GArray *entries, enum row parent);
/* The row of a served file whose text depends on the caller's content
 * class, or ROW_NONE. */
enum row files_class_row(uint64_t ino);
/* view_class_text, for a file of such a row. */
int files_class_text(struct view *v, const struct caller *c, uint64_t ino, GBytes **ret, int64_t *ret_version);
/* Host text, rewritten for the caller's CPUs; the host text itself when it
 * is not of the expected shape: never a blank file. */
typedef int (*rewrite_fn)(const char *host, const struct cpu_map *m, GString **ret);
int files_rewrite_for(const struct cpu_map *map, GBytes *host, rewrite_fn rewrite, GBytes **ret);
/* online, offline, possible, present of sys/devices/system/cpu for the
 * CPUs of cpus (a struct cpu_map): a row's renderer (view-sys.c). */
int sys_render_cpu_set(struct view *v, gconstpointer cpus, const char *name, GBytes **ret);

/* view-proc.c: proc/ and the pid directories. */
extern const struct kind_ops proc_top_link_ops, proc_pid_dir_ops, proc_pid_link_ops,
	proc_pid_magic_ops, proc_pid_file_ops;
/* "<pid>" as procfs names pid directories. */
gboolean proc_parse_pid(const char *name, pid_t *ret);
/* The names of a pid directory, indexed into v (view_new). 0 or -errno. */
int proc_index_pid_entries(struct view *v);
/* An entry of proc/ that no row names; proc/ as the caller may list it. */
int proc_lookup_top(struct view *v, const struct caller *c, const char *name, struct view_entry *ret);
int proc_list_top(struct view *v, const struct caller *c, GArray *entries);

/* view-sys.c: sys/devices/system/cpu. */
extern const struct kind_ops sys_mirror_ops, sys_vcpu_ops;

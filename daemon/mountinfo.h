/* Reading a mount table: the daemon's, or a process's. */
#pragma once

#include "view.h"

#include <glib.h>
#include <sys/types.h>

struct mount_entry {
	char *mountpoint;
	char *root;          /* the directory of the filesystem mounted there */
	char *fstype;        /* "proc", "fuse.cgprocfs", ... */
	char *super_options; /* e.g. "rw,hidepid=invisible" */
};

/* Every mount of a mountinfo text, in its order (bottom first). */
GPtrArray *mountinfo_parse(const char *text);
/* The same of /proc/self/mountinfo. */
GPtrArray *mountinfo_read(void);
/* The same of pid's (proc_fd/<pid>/mountinfo), or NULL if it cannot be read. */
GPtrArray *mountinfo_of(int proc_fd, pid_t pid);
/* The topmost of mounts at path (as mountinfo names it), or NULL. */
const struct mount_entry *mountinfo_top(GPtrArray *mounts, const char *path);

/* The filesystem types of the topmost mounts at paths[0 .. n-1] (none with
 * a character mountinfo escapes) in ret[i] (NULL: nothing mounted there;
 * g_free them), found in one pass that keeps nothing of the other lines:
 * a caller's table may hold 100,000 mounts. Of a mountinfo text: */
void mountinfo_tops_in(const char *text, const char *const *paths, guint n, char **ret);
/* Of pid's (proc_fd/<pid>/mountinfo), read a line at a time: 0 or -errno. */
int mountinfo_tops_of(int proc_fd, pid_t pid, const char *const *paths, guint n, char **ret);

/* The topmost mount at path (canonical). FALSE if none. */
gboolean mountinfo_find(const char *path, struct mount_entry *ret);
void mountinfo_entry_clear(struct mount_entry *e);

/* Of a procfs's super options, those that restrict what a reader sees
 * (hidepid, gid, subset), comma-separated, or NULL if none. */
char *mountinfo_proc_restrictions(const char *super_options);
/* How such options hide processes from some readers. */
enum view_hidepid mountinfo_hides_processes(const char *restrictions);
/* A container's own procfs in mounts (its init's table): the topmost
 * whole procfs at /proc, or at a path ending in /proc (its root's, before
 * pivot_root) or in /proc/.real (where the OCI hook moved it); NULL if
 * none. */
const struct mount_entry *mountinfo_container_proc(GPtrArray *mounts);

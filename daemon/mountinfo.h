/* Reading the daemon's mount table. */
#pragma once

#include <glib.h>

struct mount_entry {
	char *mountpoint;
	char *root;          /* the directory of the filesystem mounted there */
	char *fstype;        /* "proc", "fuse.cgprocfs", ... */
	char *super_options; /* e.g. "rw,hidepid=invisible" */
};

/* Every mount, in the order of /proc/self/mountinfo (bottom first). */
GPtrArray *mountinfo_read(void);

/* The topmost mount at path (canonical). FALSE if none. */
gboolean mountinfo_find(const char *path, struct mount_entry *ret);
void mountinfo_entry_clear(struct mount_entry *e);

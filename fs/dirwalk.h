/* One walk over a directory's entries, closed when it ends however it ends.
 * Used by fs/view and by daemon/recover. */
#pragma once

#include <dirent.h>
#include <glib.h>

G_DEFINE_AUTOPTR_CLEANUP_FUNC(DIR, closedir)

typedef void (*dirwalk_fn)(const struct dirent *de, void *data);

/* Calls fn for every entry of dirfd/path but "." and "..", in the order the
 * file system gives. 0 or -errno (a process that is gone is -ENOENT, as
 * procfile_errno() says). */
int dirwalk(int dirfd, const char *path, dirwalk_fn fn, void *data);

/* The same, in byte order of the names: the same order in every process. */
int dirwalk_sorted(int dirfd, const char *path, dirwalk_fn fn, void *data);

/* What the kernel keeps of one session's served files, as fs/ops.c tells
 * it: the names it may keep per content class, the version and size of
 * each file's text it was told, and texts stored into its page cache.
 * The state is struct ops_state's cache_lock, told and row_class. */
#pragma once

#include "ops.h"

#include <sys/stat.h>

void kcache_init(struct ops_state *s);
void kcache_clear(struct ops_state *s);

/* Served files shared per content class (view_class_row). The kernel keeps
 * one dentry per name for every caller of a session: in a container's view
 * it may keep a class row's name (for a minute, or timeout if longer)
 * while every caller has looked up the same class; once a second class
 * shows, the row is mixed and every walk asks (0). An open of another
 * class's inode through a kept name gets ESTALE, which has the kernel
 * look the name up again, as the caller: kcache_class_mixed first. */
double kcache_entry_timeout(struct ops_state *s, uint64_t ino, double timeout);
/* The same thread refused the same inode twice in a row: the name it
 * opens is no walk's, which the kernel looked up again as it, but a bind's
 * (or an fd's), made by a caller of another class, which keeps that
 * inode. TRUE the first time of the session, for the daemon to say what
 * works instead. */
gboolean kcache_class_mixed(struct ops_state *s, uint64_t ino, pid_t tid);

/* The kernel was told of version and size of ino's text (by attributes,
 * or a store: version 0). TRUE if it had been told another version. */
gboolean kcache_told(struct ops_state *s, uint64_t ino, gint64 version, gint64 size);

/* Attributes of a regular file about to go to the kernel. A file rendered
 * per open has no size of its own (smaps_rollup: 0; stat: its text of the
 * last second), but the kernel must keep at least the size of the text its
 * last open stored, or a sendfile under way would stop short of it. */
void kcache_told_attr(struct ops_state *s, uint64_t ino, struct stat *attr);

/* Whether the kernel's size of ino, as it was told, is below size: a text
 * rendered for one open, longer than that, must be stored for sendfile to
 * read all of it (a shorter one cuts the size at its first read). */
gboolean kcache_told_shorter(struct ops_state *s, uint64_t ino, gint64 size);
/* pid's process exited: what the kernel was told of its files is let go
 * of (a file of it read again, by another process of that pid, is then
 * new to the kernel). */
void kcache_forget_process(struct ops_state *s, pid_t pid);
/* How many inodes' texts the kernel is known to have been told of. */
guint kcache_told_count(struct ops_state *s);

/* Have the kernel's page cache of ino hold content: its pages dropped and
 * filled anew, its size grown to it (a shorter text shrinks it at the
 * first read of its end). Not from within a READ of ino: the store waits
 * for pages a READ holds. */
void kcache_store(struct ops_state *s, uint64_t ino, GBytes *content);

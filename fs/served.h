/* Texts of served files that every caller of one inode shares (one inode
 * per file and content class, fs/ino.h): the current text of each inode,
 * rendered again when it is older than asked, and its version, which
 * changes only when the text does. The version is what the kernel is told
 * as the file's mtime (in ns), so that its page cache of the inode is
 * dropped exactly when the text changed. */
#pragma once

#include <glib.h>
#include <stdint.h>

struct served;

struct served *served_new(void);
void served_free(struct served *s);

typedef int (*served_render_fn)(void *data, GBytes **ret);

/* The text of ino: the one kept if it is at most max_age_us old, else
 * render(data)'s (kept from now on). *ret_text (a reference) and
 * *ret_version (realtime ns when this text was first served; never 0).
 * 0 or render's -errno (then nothing is kept or returned). */
int served_get(struct served *s, uint64_t ino, gint64 max_age_us, served_render_fn render, void *data,
	       GBytes **ret_text, int64_t *ret_version);
/* The text of ino as kept, whatever its age: 0, or -ENOENT if none is. */
int served_peek(struct served *s, uint64_t ino, GBytes **ret_text, int64_t *ret_version);

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

/* 0, SERVED_HOST (the text is the host's file as it is, no class's own),
 * or -errno. */
typedef int (*served_render_fn)(void *data, GBytes **ret);
#define SERVED_HOST 1

/* How old a kept text may be to be served again: a class's own text, and
 * the host's file as it is (a host caller's, bracketed by reads of the
 * host's file around it: cached, it could be older than the first). */
struct served_ages {
	gint64 own_us;
	gint64 host_us;
};

/* The text of ino: the one kept if it is young enough, else render(data)'s
 * (kept from now on, unless a render that started later was kept
 * meanwhile: then that one, so that no counter goes back). *ret_text (a
 * reference) and *ret_version (realtime ns when this text was first
 * served; never 0). 0 or render's -errno (then nothing is kept or
 * returned). */
int served_get(struct served *s, uint64_t ino, struct served_ages ages, served_render_fn render, void *data,
	       GBytes **ret_text, int64_t *ret_version);
/* Texts rendered, and texts served again without a render, since s was
 * made. */
void served_counts(struct served *s, guint64 *ret_renders, guint64 *ret_reuses);
/* The text of ino as kept, whatever its age: 0, or -ENOENT if none is. */
int served_peek(struct served *s, uint64_t ino, GBytes **ret_text, int64_t *ret_version);

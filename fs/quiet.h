/* The texts of uptime and loadavg (view_quiet) that one session's kernel
 * page cache holds, and when a new text may take their place.
 *
 * Such a text moves every tick, and readers open, read and close it (no
 * known tool keeps it open): kept by the page cache, an open costs one
 * request, not an open and two reads past it. But the page cache of an
 * inode is every reader's of it, and a read that started on one text must
 * not end on another (a longer one would lengthen it). So a new text
 * replaces the kernel's only at a quiet point: when no open file of the
 * inode can be in a pass over it (the reads from some offset to its end).
 * A pass is taken to last at most QUIET_PASS_US. It begins at an open, at
 * a read that asks the daemon (a GETATTR naming its open file: the
 * kernel's attributes had expired), or, unseen, at a read while the
 * kernel's attributes are valid. Where the kernel's text may not change,
 * an open reads its own text past the page cache, as before.
 *
 * Pure bookkeeping: times are the caller's (monotonic µs). */
#pragma once

#include <glib.h>
#include <stdint.h>
#include <sys/stat.h>

/* How long the kernel may keep the attributes of such a file (then a read
 * asks again, and may get a new text), while no file of it is held open
 * longer than a pass; 0 while one is, so that each of its passes asks. */
#define QUIET_ATTR_TIMEOUT 0.05
#define QUIET_PASS_US (200 * G_TIME_SPAN_MILLISECOND)

struct quiet;

struct quiet *quiet_new(void);
void quiet_free(struct quiet *q);

/* What the caller must do for a new text to be the kernel's: nothing
 * (QUIET_KEPT), or store it, over the pages of one of the same size
 * (QUIET_OVER: no reader is in them, the kernel's size is right), or in
 * pages and a size of its own (QUIET_STORE). */
enum quiet_store { QUIET_KEPT, QUIET_OVER, QUIET_STORE };

/* An open of ino whose text is now text (of version): TRUE if it reads
 * through the page cache, which holds that text, or will once the caller
 * stored it as *ret_store says (it is the kernel's from now on); FALSE if
 * it reads past it. Then the open file is told with quiet_contact. */
gboolean quiet_open(struct quiet *q, uint64_t ino, GBytes *text, int64_t version, gint64 now,
		    enum quiet_store *ret_store);

/* A GETATTR of open file fh of ino, whose text is now text (of version):
 * how the caller stores it, if it is the kernel's from now on. fh is in
 * contact from now on. */
enum quiet_store quiet_reread(struct quiet *q, uint64_t ino, uint64_t fh, GBytes *text, int64_t version,
			      gint64 now);

/* A request of open file fh of ino (its OPEN, a READ): it may be in a pass. */
void quiet_contact(struct quiet *q, uint64_t ino, uint64_t fh, gint64 now);
void quiet_closed(struct quiet *q, uint64_t ino, uint64_t fh);

/* The text the kernel holds of ino (a reference; what a READ of its pages
 * gets), or NULL if none was stored. */
GBytes *quiet_text(struct quiet *q, uint64_t ino);

/* Attributes of ino about to go to the kernel (LOOKUP, GETATTR): the size
 * of the text it holds, if any, times that do not change (the page cache
 * is replaced by stores, never dropped for a time), and how long the
 * kernel may keep them. */
void quiet_attr(struct quiet *q, uint64_t ino, struct stat *attr, double *ret_timeout, gint64 now);

/* Files that could not be used, told once each: a garbled or vanished
 * cgroup file is logged on its first use, not on every read. */
#pragma once

#include <glib.h>

/* Called once per file: data, the file, and the errno. */
typedef void (*reports_fn)(void *data, const char *file, int err);

struct reports {
	reports_fn fn; /* NULL: tell nobody */
	void *data;
	GMutex lock;       /* guards told, and calls of fn (one at a time) */
	GHashTable *told;  /* files already told */
};

void reports_init(struct reports *r, reports_fn fn, void *data);
void reports_clear(struct reports *r);
/* Tell of file (err: an errno) if it was not told of before. */
void reports_once(struct reports *r, const char *file, int err);

/* What decides the text of a caller's served files of one kind (its memory
 * cgroup, its pid namespace's epoch ...): found by a function of the
 * caller's thread, kept a second by each worker thread (fs/tidcache.h),
 * and by content class (fs/classes.h) so that any caller may be told of an
 * inode of a class. */
#pragma once

#include "classes.h"
#include "tidcache.h"

#include <stdint.h>

struct deciders {
	struct tidcache cache;
	struct classes *classes;
	gpointer (*find)(void *data, pid_t tid); /* a new object, never NULL */
	uint64_t (*class_of)(gconstpointer obj); /* never 0, the same in every process */
	void *data;
};

void deciders_init(struct deciders *d, gpointer (*find)(void *data, pid_t tid),
		   uint64_t (*class_of)(gconstpointer obj), classes_ref_fn ref, GDestroyNotify unref, void *data);
void deciders_clear(struct deciders *d);

/* tid's (a reference): as this thread kept it, or found now (fresh: found
 * now whatever was kept). */
gpointer deciders_of(struct deciders *d, pid_t tid, gboolean fresh);
/* What a caller of class_id had (a reference), or NULL. */
gpointer deciders_of_class(struct deciders *d, uint64_t class_id);
/* A caller moved: no thread answers from what it kept before. */
void deciders_forget(struct deciders *d);

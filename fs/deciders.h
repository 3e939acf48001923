/* What decides the text of a caller's served files of one kind (its memory
 * cgroup, its pid namespace's epoch ...): found by a function of the
 * caller's thread, kept half a second (fs/tidcache.h),
 * and by content class (fs/classes.h) so that any caller may be told of an
 * inode of a class. One object may decide several files, each with a
 * class function of its own: it is found once and kept under each. */
#pragma once

#include "classes.h"
#include "tidcache.h"

#include <stdint.h>

/* The content class of the text obj decides: never 0, the same in every
 * process, and told apart from the other files' classes (hash a prefix). */
typedef uint64_t (*deciders_class_fn)(gconstpointer obj);

#define DECIDERS_CLASSES_MAX 4

struct deciders {
	struct tidcache cache;
	struct classes *classes; /* under every class function */
	/* 0 and a new object, or -errno (nothing kept: the caller's files
	 * are an error, never another class's) */
	int (*find)(void *data, pid_t tid, gpointer *ret);
	deciders_class_fn class_of[DECIDERS_CLASSES_MAX]; /* NULL-terminated */
	void *data;
};

/* class_of: the class functions of the files obj decides, NULL-terminated. */
void deciders_init(struct deciders *d, int (*find)(void *data, pid_t tid, gpointer *ret), const deciders_class_fn *class_of,
		   classes_ref_fn ref, GDestroyNotify unref, void *data);
void deciders_clear(struct deciders *d);

/* tid's (a reference) in *ret: as this thread kept it, or found now
 * (fresh: found now whatever was kept). 0, or find's -errno (nothing
 * kept). */
int deciders_of(struct deciders *d, pid_t tid, gboolean fresh, gpointer *ret);
/* What a caller of class_id had (a reference), or NULL. */
gpointer deciders_of_class(struct deciders *d, uint64_t class_id);
/* A caller moved: no thread answers from what it kept before. */
void deciders_forget(struct deciders *d);

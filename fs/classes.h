/* Content classes seen by a view (fs/ino.h): what renders each class's
 * files, kept so that any caller may be told of an inode of a class (its
 * size), not only a caller of that class. */
#pragma once

#include <glib.h>
#include <stdint.h>

struct classes;

/* A new reference of obj (e.g. cpu_map_ref). */
typedef gpointer (*classes_ref_fn)(gpointer obj);

/* ref and unref: of the objects kept. */
struct classes *classes_new(classes_ref_fn ref, GDestroyNotify unref);
void classes_free(struct classes *t);

/* Keep obj (a reference of it) as what renders class_id. Past a bound the
 * table starts over: a class is put back when a caller of it comes. */
void classes_put(struct classes *t, uint64_t class_id, gconstpointer obj);
/* A reference of what renders class_id, or NULL. */
gpointer classes_get(struct classes *t, uint64_t class_id);

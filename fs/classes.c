#include "classes.h"

/* Classes kept at most. */
#define CLASSES_MAX 4096

struct classes {
	classes_ref_fn ref;
	GRWLock lock;       /* guards by_id: read by every served lookup, written once per class */
	GHashTable *by_id;  /* class id -> an object (a reference) */
};

struct classes *classes_new(classes_ref_fn ref, GDestroyNotify unref)
{
	struct classes *t = g_new0(struct classes, 1);
	t->ref = ref;
	g_rw_lock_init(&t->lock);
	t->by_id = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, unref);
	return t;
}

void classes_free(struct classes *t)
{
	if (!t)
		return;
	g_hash_table_unref(t->by_id);
	g_rw_lock_clear(&t->lock);
	g_free(t);
}

void classes_put(struct classes *t, uint64_t class_id, gconstpointer obj)
{
	g_rw_lock_reader_lock(&t->lock);
	gboolean known = g_hash_table_contains(t->by_id, &class_id);
	g_rw_lock_reader_unlock(&t->lock);
	if (known)
		return;
	G_GNUC_UNUSED g_autoptr(GRWLockWriterLocker) locker = g_rw_lock_writer_locker_new(&t->lock);
	if (g_hash_table_contains(t->by_id, &class_id))
		return;
	if (g_hash_table_size(t->by_id) >= CLASSES_MAX)
		g_hash_table_remove_all(t->by_id);
	g_hash_table_insert(t->by_id, g_memdup2(&class_id, sizeof(class_id)), t->ref((gpointer)obj));
}

gpointer classes_get(struct classes *t, uint64_t class_id)
{
	G_GNUC_UNUSED g_autoptr(GRWLockReaderLocker) locker = g_rw_lock_reader_locker_new(&t->lock);
	gpointer obj = g_hash_table_lookup(t->by_id, &class_id);
	return obj ? t->ref(obj) : NULL;
}

#include "reports.h"

void reports_init(struct reports *r, reports_fn fn, void *data)
{
	r->fn = fn;
	r->data = data;
	g_mutex_init(&r->lock);
	r->told = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
}

void reports_clear(struct reports *r)
{
	g_clear_pointer(&r->told, g_hash_table_unref);
	g_mutex_clear(&r->lock);
}

void reports_once(struct reports *r, const char *file, int err)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&r->lock);
	if (r->fn && g_hash_table_add(r->told, g_strdup(file)))
		r->fn(r->data, file, err);
}

#include "deciders.h"

#include <string.h>

void deciders_init(struct deciders *d, int (*find)(void *data, pid_t tid, gpointer *ret), const deciders_class_fn *class_of,
		   classes_ref_fn ref, GDestroyNotify unref, void *data)
{
	tidcache_init(&d->cache, ref, unref);
	d->classes = classes_new(ref, unref);
	d->find = find;
	size_t n = 0;
	while (class_of[n])
		n++;
	g_assert(n > 0 && n < DECIDERS_CLASSES_MAX);
	memcpy(d->class_of, class_of, (n + 1) * sizeof(class_of[0]));
	d->data = data;
}

void deciders_clear(struct deciders *d)
{
	if (!d->classes)
		return;
	g_clear_pointer(&d->classes, classes_free);
	tidcache_clear(&d->cache);
}

int deciders_of(struct deciders *d, pid_t tid, gboolean fresh, gpointer *ret)
{
	gpointer obj = fresh ? NULL : tidcache_get(&d->cache, tid);
	if (obj) {
		*ret = obj;
		return 0;
	}
	int r = d->find(d->data, tid, &obj);
	if (r < 0)
		return r;
	tidcache_put(&d->cache, tid, obj);
	for (size_t i = 0; d->class_of[i]; i++)
		classes_put(d->classes, d->class_of[i](obj), obj);
	*ret = obj;
	return 0;
}

gpointer deciders_of_class(struct deciders *d, uint64_t class_id)
{
	return classes_get(d->classes, class_id);
}

void deciders_forget(struct deciders *d)
{
	tidcache_forget(&d->cache);
}

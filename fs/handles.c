#include "handles.h"

#include <errno.h>

struct handle {
	gpointer object;
	uint64_t tenant; /* 0: adopted, no tenant's */
};

void handles_init(struct handles *h, handles_free_fn free_object)
{
	g_mutex_init(&h->lock);
	h->table = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
	h->counts = g_hash_table_new(g_direct_hash, g_direct_equal);
	h->tag = ((uint64_t)g_random_int_range(1, 1 << 23)) << (HANDLES_KIND_SHIFT + 1);
	h->serial = 0;
	h->free_object = free_object;
}

void handles_clear(struct handles *h)
{
	GHashTableIter it;
	gpointer fh, value;

	if (!h->table)
		return;
	g_hash_table_iter_init(&it, h->table);
	while (g_hash_table_iter_next(&it, &fh, &value))
		h->free_object((uint64_t)(uintptr_t)fh, ((struct handle *)value)->object);
	g_clear_pointer(&h->table, g_hash_table_unref);
	g_clear_pointer(&h->counts, g_hash_table_unref);
	g_mutex_clear(&h->lock);
}

#define KEY(n) ((gpointer)(uintptr_t)(n))
G_STATIC_ASSERT(sizeof(gpointer) >= sizeof(uint64_t));

/* How many handles tenant holds. Under h->lock. */
static guint count_of(struct handles *h, uint64_t tenant)
{
	return GPOINTER_TO_UINT(g_hash_table_lookup(h->counts, KEY(tenant)));
}

static void count_add(struct handles *h, uint64_t tenant, int n)
{
	guint now = count_of(h, tenant) + (guint)n;
	if (now)
		g_hash_table_insert(h->counts, KEY(tenant), GUINT_TO_POINTER(now));
	else
		g_hash_table_remove(h->counts, KEY(tenant));
}

static void insert(struct handles *h, uint64_t fh, gpointer object, uint64_t tenant)
{
	struct handle *e = g_new(struct handle, 1);
	*e = (struct handle){ object, tenant };
	g_hash_table_insert(h->table, KEY(fh), e);
	if (tenant)
		count_add(h, tenant, 1);
}

int handles_add(struct handles *h, gpointer object, uint64_t kind, uint64_t tenant, uint64_t *ret_fh)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&h->lock);
	int r = g_hash_table_size(h->table) >= HANDLES_MAX	      ? -ENFILE
		: tenant && count_of(h, tenant) >= HANDLES_TENANT_MAX ? -EMFILE
								       : 0;
	if (r < 0) {
		h->free_object(kind, object);
		return r;
	}
	*ret_fh = h->tag | kind | (++h->serial & ((UINT64_C(1) << HANDLES_KIND_SHIFT) - 1));
	insert(h, *ret_fh, object, tenant);
	return 0;
}

gpointer handles_get(struct handles *h, uint64_t fh)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&h->lock);
	struct handle *e = g_hash_table_lookup(h->table, KEY(fh));
	return e ? e->object : NULL;
}

gpointer handles_adopt(struct handles *h, uint64_t fh, gpointer object)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&h->lock);
	struct handle *e = g_hash_table_lookup(h->table, KEY(fh));
	if (e) {
		h->free_object(fh, object);
		return e->object;
	}
	insert(h, fh, object, 0);
	return object;
}

void handles_remove(struct handles *h, uint64_t fh)
{
	struct handle e = { NULL, 0 };
	g_mutex_lock(&h->lock);
	struct handle *found = g_hash_table_lookup(h->table, KEY(fh));
	if (found) {
		e = *found;
		g_hash_table_remove(h->table, KEY(fh));
		if (e.tenant)
			count_add(h, e.tenant, -1);
	}
	g_mutex_unlock(&h->lock);
	if (e.object)
		h->free_object(fh, e.object);
}

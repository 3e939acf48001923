#include "handles.h"

#include <errno.h>

struct handle {
	gpointer object;
	uint64_t tenant; /* 0: no tenant's (it could not be told) */
	gsize bytes;
};

struct tenant_count {
	guint handles;
	gsize bytes;
};

/* A key of h->held: one tenant's hold on one object. */
struct hold {
	uint64_t tenant;
	gpointer object;
};

static guint hold_hash(gconstpointer p)
{
	const struct hold *k = p;
	return g_int64_hash(&k->tenant) ^ g_direct_hash(k->object);
}

static gboolean hold_equal(gconstpointer a, gconstpointer b)
{
	const struct hold *x = a, *y = b;
	return x->tenant == y->tenant && x->object == y->object;
}

#define KEY(n) ((gpointer)(uintptr_t)(n))
G_STATIC_ASSERT(sizeof(gpointer) >= sizeof(uint64_t));

void handles_init(struct handles *h, handles_free_fn free_object)
{
	g_mutex_init(&h->lock);
	h->table = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
	h->counts = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
	h->held = g_hash_table_new_full(hold_hash, hold_equal, g_free, NULL);
	h->bytes = 0;
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
	g_clear_pointer(&h->held, g_hash_table_unref);
	g_mutex_clear(&h->lock);
}

/* What tenant holds (a zero count if nothing). Under h->lock. */
static struct tenant_count count_of(struct handles *h, uint64_t tenant)
{
	struct tenant_count *c = g_hash_table_lookup(h->counts, KEY(tenant));
	return c ? *c : (struct tenant_count){ 0, 0 };
}

static void count_set(struct handles *h, uint64_t tenant, struct tenant_count now)
{
	if (!now.handles) {
		g_hash_table_remove(h->counts, KEY(tenant));
		return;
	}
	struct tenant_count *c = g_hash_table_lookup(h->counts, KEY(tenant));
	if (!c) {
		c = g_new(struct tenant_count, 1);
		g_hash_table_insert(h->counts, KEY(tenant), c);
	}
	*c = now;
}

/* How many handles of tenant hold object. Under h->lock. */
static guint holds_of(struct handles *h, uint64_t tenant, gpointer object)
{
	struct hold k = { tenant, object };
	return GPOINTER_TO_UINT(g_hash_table_lookup(h->held, &k));
}

/* The bytes a new handle of tenant's on object adds: none if another of
 * its handles holds object already. Under h->lock. */
static gsize new_bytes(struct handles *h, uint64_t tenant, gpointer object, gsize bytes)
{
	return bytes && holds_of(h, tenant, object) == 0 ? bytes : 0;
}

/* 0, or why a new handle of tenant's adding bytes is refused. Under h->lock. */
static int over_bounds(struct handles *h, uint64_t tenant, gsize bytes)
{
	struct tenant_count c = count_of(h, tenant);
	if (g_hash_table_size(h->table) >= HANDLES_MAX || h->bytes + bytes > HANDLES_BYTES)
		return -ENFILE;
	if (tenant && (c.handles >= HANDLES_TENANT_MAX || c.bytes + bytes > HANDLES_TENANT_BYTES))
		return -EMFILE;
	return 0;
}

/* A tenant's hold on object goes by n (1 or -1), and what it counts. */
static void hold_add(struct handles *h, uint64_t tenant, gpointer object, gsize bytes, int n)
{
	struct tenant_count c = count_of(h, tenant);
	guint holds = holds_of(h, tenant, object);
	gsize changed = bytes && holds == (n > 0 ? 0 : 1) ? bytes : 0;
	if (bytes && holds + (guint)n) {
		struct hold *k = g_new(struct hold, 1);
		*k = (struct hold){ tenant, object };
		g_hash_table_replace(h->held, k, GUINT_TO_POINTER(holds + (guint)n));
	} else if (bytes) {
		struct hold k = { tenant, object };
		g_hash_table_remove(h->held, &k);
	}
	c.handles += (guint)n;
	c.bytes = n > 0 ? c.bytes + changed : c.bytes - changed;
	h->bytes = n > 0 ? h->bytes + changed : h->bytes - changed;
	count_set(h, tenant, c);
}

static void insert(struct handles *h, uint64_t fh, gpointer object, gsize bytes, uint64_t tenant)
{
	struct handle *e = g_new(struct handle, 1);
	*e = (struct handle){ object, tenant, bytes };
	g_hash_table_insert(h->table, KEY(fh), e);
	hold_add(h, tenant, object, bytes, 1);
}

int handles_add(struct handles *h, gpointer object, gsize bytes, uint64_t kind, uint64_t tenant, uint64_t *ret_fh)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&h->lock);
	int r = over_bounds(h, tenant, new_bytes(h, tenant, object, bytes));
	if (r < 0) {
		h->free_object(kind, object);
		return r;
	}
	*ret_fh = h->tag | kind | (++h->serial & ((UINT64_C(1) << HANDLES_KIND_SHIFT) - 1));
	insert(h, *ret_fh, object, bytes, tenant);
	return 0;
}

gpointer handles_get(struct handles *h, uint64_t fh)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&h->lock);
	struct handle *e = g_hash_table_lookup(h->table, KEY(fh));
	return e ? e->object : NULL;
}

int handles_adopt(struct handles *h, uint64_t fh, gpointer object, gsize bytes, uint64_t tenant,
		  gpointer *ret_object)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&h->lock);
	struct handle *e = g_hash_table_lookup(h->table, KEY(fh));
	int r = e ? 0 : over_bounds(h, tenant, new_bytes(h, tenant, object, bytes));
	if (e || r < 0) {
		h->free_object(fh, object);
		if (e)
			*ret_object = e->object;
		return r;
	}
	insert(h, fh, object, bytes, tenant);
	*ret_object = object;
	return 0;
}

void handles_remove(struct handles *h, uint64_t fh)
{
	struct handle e = { NULL, 0, 0 };
	g_mutex_lock(&h->lock);
	struct handle *found = g_hash_table_lookup(h->table, KEY(fh));
	if (found) {
		e = *found;
		hold_add(h, e.tenant, e.object, e.bytes, -1);
		g_hash_table_remove(h->table, KEY(fh));
	}
	g_mutex_unlock(&h->lock);
	if (e.object)
		h->free_object(fh, e.object);
}

void handles_count(struct handles *h, uint64_t tenant, guint *ret_handles, gsize *ret_bytes)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&h->lock);
	struct tenant_count c = count_of(h, tenant);
	*ret_handles = c.handles;
	*ret_bytes = c.bytes;
}

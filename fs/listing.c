#include "listing.h"

#include "view.h"

#include <string.h>

/* The heap's cost of one block, beyond what it holds. */
#define BLOCK_OVERHEAD 16

static guint listing_hash(gconstpointer p)
{
	return ((const struct listing *)p)->hash;
}

static gboolean listing_equal(gconstpointer a, gconstpointer b)
{
	const struct listing *x = a, *y = b;
	if (x->ino != y->ino || x->entries->len != y->entries->len)
		return FALSE;
	for (guint i = 0; i < x->entries->len; i++) {
		const struct view_dirent *e = &g_array_index(x->entries, struct view_dirent, i);
		const struct view_dirent *f = &g_array_index(y->entries, struct view_dirent, i);
		if (e->ino != f->ino || e->type != f->type || strcmp(e->name, f->name) != 0)
			return FALSE;
	}
	return TRUE;
}

static guint entries_hash(uint64_t ino, const GArray *entries)
{
	guint h = g_int64_hash(&ino);
	for (guint i = 0; i < entries->len; i++) {
		const struct view_dirent *e = &g_array_index(entries, struct view_dirent, i);
		h = h * 31 + g_str_hash(e->name);
		h = h * 31 + g_int64_hash(&e->ino) + e->type;
	}
	return h;
}

gsize listing_bytes(const GArray *entries)
{
	gsize n = sizeof(struct listing) + BLOCK_OVERHEAD + sizeof(GArray) + BLOCK_OVERHEAD +
		  g_array_get_element_size((GArray *)entries) * entries->len + BLOCK_OVERHEAD;
	for (guint i = 0; i < entries->len; i++)
		n += strlen(g_array_index(entries, struct view_dirent, i).name) + 1 + BLOCK_OVERHEAD;
	return n;
}

void listings_init(struct listings *l)
{
	g_mutex_init(&l->lock);
	l->set = g_hash_table_new(listing_hash, listing_equal);
}

void listings_clear(struct listings *l)
{
	g_clear_pointer(&l->set, g_hash_table_unref);
	g_mutex_clear(&l->lock);
}

struct listing *listings_share(struct listings *l, uint64_t ino, GArray *entries)
{
	struct listing probe = { .entries = entries, .ino = ino, .hash = entries_hash(ino, entries) };
	struct listing *found;
	{
		G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&l->lock);
		found = g_hash_table_lookup(l->set, &probe);
		if (found) {
			found->refs++;
		} else {
			found = g_new(struct listing, 1);
			*found = probe;
			found->bytes = listing_bytes(entries);
			found->refs = 1;
			found->owner = l;
			g_hash_table_add(l->set, found);
			return found;
		}
	}
	g_array_unref(entries); /* the same as found's */
	return found;
}

void listing_unref(struct listing *li)
{
	struct listings *l = li->owner;
	{
		G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&l->lock);
		if (--li->refs > 0)
			return;
		g_hash_table_remove(l->set, li);
	}
	g_array_unref(li->entries);
	g_free(li);
}

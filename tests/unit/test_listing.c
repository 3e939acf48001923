/* fs/listing.c: directory handles whose entries are the same share one
 * listing, which lives as long as one holds it. */
#include "listing.h"

#include "view.h"

#include <criterion/criterion.h>
#include <glib.h>

static void dirent_clear(gpointer p)
{
	g_free(((struct view_dirent *)p)->name);
}

/* A listing of names (NULL-terminated), inodes 1, 2, ... */
static GArray *entries_of(const char *const *names)
{
	GArray *a = g_array_new(FALSE, FALSE, sizeof(struct view_dirent));
	g_array_set_clear_func(a, dirent_clear);
	for (unsigned i = 0; names[i]; i++) {
		struct view_dirent e = { g_strdup(names[i]), i + 1, S_IFDIR };
		g_array_append_val(a, e);
	}
	return a;
}

Test(listing, the_same_entries_share_one_listing_and_others_do_not)
{
	struct listings l;
	listings_init(&l);
	const char *const names[] = { ".", "..", "1", "42", "cpuinfo", NULL };
	const char *const other[] = { ".", "..", "1", "43", "cpuinfo", NULL };
	struct listing *a = listings_share(&l, 1, entries_of(names));
	struct listing *b = listings_share(&l, 1, entries_of(names));
	struct listing *c = listings_share(&l, 1, entries_of(other));
	struct listing *d = listings_share(&l, 2, entries_of(names));
	cr_expect_eq(a, b, "two listings of the same entries are one");
	cr_expect_neq(a, c, "another process listed");
	cr_expect_neq(a, d, "another directory");
	cr_expect_geq(a->bytes, listing_bytes(a->entries));
	cr_expect_eq(g_hash_table_size(l.set), 3);
	listing_unref(a);
	cr_expect_eq(g_hash_table_size(l.set), 3, "b holds it");
	listing_unref(b);
	cr_expect_eq(g_hash_table_size(l.set), 2, "none holds it: gone");
	struct listing *e = listings_share(&l, 1, entries_of(names));
	cr_expect_eq(e->refs, 1, "made again");
	listing_unref(c);
	listing_unref(d);
	listing_unref(e);
	listings_clear(&l);
}

Test(listing, the_bytes_grow_with_the_entries)
{
	const char *const few[] = { ".", "..", NULL };
	const char *const more[] = { ".", "..", "1", "2", "3", "a-longer-name", NULL };
	g_autoptr(GArray) a = entries_of(few);
	g_autoptr(GArray) b = entries_of(more);
	cr_expect_gt(listing_bytes(b), listing_bytes(a) + 4 * sizeof(struct view_dirent));
}

/* fs/handles.c: what a tenant's handles count (handles, and bytes once per
 * object a tenant's handles share), its bounds, and the handles of another
 * daemon's made again (adopted), which count as new ones. */
#include "handles.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <glib.h>

static unsigned freed;

static void count_free(uint64_t fh, gpointer object)
{
	freed++;
}

static struct handles *fresh(void)
{
	static struct handles h;
	freed = 0;
	handles_init(&h, count_free);
	return &h;
}

static guint handles_of(struct handles *h, uint64_t tenant)
{
	guint n;
	gsize bytes;
	handles_count(h, tenant, &n, &bytes);
	return n;
}

static gsize bytes_of(struct handles *h, uint64_t tenant)
{
	guint n;
	gsize bytes;
	handles_count(h, tenant, &n, &bytes);
	return bytes;
}

static int object; /* what handles hold: only its address matters */

Test(handles, handles_of_one_object_count_its_bytes_once_per_tenant)
{
	struct handles *h = fresh();
	uint64_t fh[4];
	for (unsigned i = 0; i < 3; i++)
		cr_assert_eq(handles_add(h, &object, 1000, 0, 7, &fh[i]), 0);
	cr_assert_eq(handles_add(h, &object, 1000, 0, 8, &fh[3]), 0);
	cr_expect_eq(handles_of(h, 7), 3);
	cr_expect_eq(bytes_of(h, 7), 1000, "three handles of one listing: %zu bytes", bytes_of(h, 7));
	cr_expect_eq(bytes_of(h, 8), 1000, "another tenant's hold counts for it");
	handles_remove(h, fh[0]);
	handles_remove(h, fh[1]);
	cr_expect_eq(bytes_of(h, 7), 1000, "one handle still holds it");
	handles_remove(h, fh[2]);
	cr_expect_eq(handles_of(h, 7), 0);
	cr_expect_eq(bytes_of(h, 7), 0, "none holds it");
	cr_expect_eq(freed, 3);
	handles_clear(h);
}

Test(handles, a_tenant_past_its_bytes_gets_EMFILE_and_another_does_not)
{
	struct handles *h = fresh();
	static int objects[5];
	const gsize each = HANDLES_TENANT_BYTES / 4;
	uint64_t fh;
	for (unsigned i = 0; i < 4; i++)
		cr_assert_eq(handles_add(h, &objects[i], each, 0, 7, &fh), 0, "object %u", i);
	cr_expect_eq(handles_add(h, &objects[4], 1, 0, 7, &fh), -EMFILE, "past the tenant's bytes");
	cr_expect_eq(freed, 1, "the refused object is freed");
	cr_expect_eq(handles_add(h, &objects[0], each, 0, 7, &fh), 0, "one it holds costs no more");
	cr_expect_eq(handles_add(h, &objects[4], each, 0, 8, &fh), 0, "another tenant");
	handles_clear(h);
}

Test(handles, adopted_handles_count_for_the_tenant_that_uses_them_and_are_refused_past_its_bound)
{
	struct handles *h = fresh();
	static int objects[HANDLES_TENANT_MAX + 1];
	uint64_t fh;
	gpointer got = NULL;
	/* Handles another daemon made: numbers of a tag not this table's. */
	const uint64_t other = UINT64_C(1) << 62;
	for (unsigned i = 0; i < HANDLES_TENANT_MAX; i++)
		cr_assert_eq(handles_adopt(h, other + i, &objects[i], 0, 7, &got), 0, "adopting %u", i);
	cr_expect_eq(handles_of(h, 7), HANDLES_TENANT_MAX, "the adopted handles count for their tenant");
	cr_expect_eq(handles_add(h, &objects[HANDLES_TENANT_MAX], 0, 0, 7, &fh), -EMFILE, "a new one past the bound");
	got = NULL;
	cr_expect_eq(handles_adopt(h, other + HANDLES_TENANT_MAX, &object, 0, 7, &got), -EMFILE,
		     "an adoption past the bound");
	cr_expect_null(got);
	/* Adopting one adopted already gives its object, and counts no more. */
	cr_expect_eq(handles_adopt(h, other, &object, 0, 7, &got), 0);
	cr_expect_eq(got, &objects[0]);
	cr_expect_eq(handles_of(h, 7), HANDLES_TENANT_MAX);
	handles_remove(h, other);
	cr_expect_eq(handles_of(h, 7), HANDLES_TENANT_MAX - 1, "an adopted one released");
	cr_expect_eq(handles_add(h, &object, 0, 0, 7, &fh), 0, "room again");
	handles_clear(h);
}

#include "snapshot.h"

#include <criterion/criterion.h>
#include <string.h>

static GBytes *content(void)
{
	return g_bytes_new_static("0123456789", 10);
}

Test(snapshot, whole_file_in_one_read)
{
	g_autoptr(GBytes) b = content();
	const char *p;
	size_t n;
	snapshot_slice(b, 0, 4096, &p, &n);
	cr_assert_eq(n, 10);
	cr_assert(memcmp(p, "0123456789", 10) == 0);
}

Test(snapshot, short_read_at_the_end)
{
	g_autoptr(GBytes) b = content();
	const char *p;
	size_t n;
	snapshot_slice(b, 7, 100, &p, &n);
	cr_assert_eq(n, 3);
	cr_assert(memcmp(p, "789", 3) == 0);
}

Test(snapshot, offset_inside_with_small_size)
{
	g_autoptr(GBytes) b = content();
	const char *p;
	size_t n;
	snapshot_slice(b, 3, 2, &p, &n);
	cr_assert_eq(n, 2);
	cr_assert(memcmp(p, "34", 2) == 0);
}

Test(snapshot, offset_at_and_past_the_end_is_empty)
{
	g_autoptr(GBytes) b = content();
	const char *p;
	size_t n = 99;
	snapshot_slice(b, 10, 5, &p, &n);
	cr_assert_eq(n, 0);
	n = 99;
	snapshot_slice(b, 1 << 30, 5, &p, &n);
	cr_assert_eq(n, 0);
	n = 99;
	snapshot_slice(b, -1, 5, &p, &n);
	cr_assert_eq(n, 0);
}

Test(snapshot, byte_by_byte_reassembles_the_content)
{
	g_autoptr(GBytes) b = content();
	char out[16] = { 0 };
	size_t total = 0;
	for (off_t off = 0;; off++) {
		const char *p;
		size_t n;
		snapshot_slice(b, off, 1, &p, &n);
		if (n == 0)
			break;
		out[total++] = *p;
	}
	cr_assert_eq(total, 10);
	cr_assert_str_eq(out, "0123456789");
}

Test(snapshot, empty_content)
{
	g_autoptr(GBytes) b = g_bytes_new_static("", 0);
	const char *p;
	size_t n = 1;
	snapshot_slice(b, 0, 10, &p, &n);
	cr_assert_eq(n, 0);
}

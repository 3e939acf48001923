/* When a new text of a file that moves every tick may take the place of
 * the one the kernel's page cache holds: only where no open file of it
 * can be in a pass over it. Times are made up (µs). */
#include "quiet.h"

#include <criterion/criterion.h>

#define INO 42
#define PASS QUIET_PASS_US

static GBytes *text(const char *s)
{
	return g_bytes_new_static(s, strlen(s));
}

/* quiet_open's answer, with its store (-1 for a read past the cache). */
static int opened(struct quiet *q, const char *s, int64_t version, gint64 now)
{
	g_autoptr(GBytes) t = text(s);
	enum quiet_store how;
	return quiet_open(q, INO, t, version, now, &how) ? (int)how : -1;
}

static int reread(struct quiet *q, uint64_t fh, const char *s, int64_t version, gint64 now)
{
	g_autoptr(GBytes) t = text(s);
	return (int)quiet_reread(q, INO, fh, t, version, now);
}

static char *kernels(struct quiet *q)
{
	g_autoptr(GBytes) t = quiet_text(q, INO);
	cr_assert_not_null(t, "the kernel holds no text");
	return g_strndup(g_bytes_get_data(t, NULL), g_bytes_get_size(t));
}

Test(quiet, the_first_open_stores_the_next_ones_of_that_text_read_it_as_it_is)
{
	struct quiet *q = quiet_new();
	cr_assert_null(quiet_text(q, INO));
	cr_assert_eq(opened(q, "1.00 2.00\n", 1, 1000), QUIET_STORE, "a text of its own size, first");
	cr_assert_eq(opened(q, "1.00 2.00\n", 1, 1001), QUIET_KEPT);
	g_autofree char *k = kernels(q);
	cr_assert_str_eq(k, "1.00 2.00\n");
	quiet_free(q);
}

Test(quiet, a_new_text_waits_while_an_open_file_may_be_in_a_pass_and_is_read_past_the_cache)
{
	struct quiet *q = quiet_new();
	cr_assert_eq(opened(q, "1.00 2.00\n", 1, 1000), QUIET_STORE);
	quiet_contact(q, INO, 7, 1000);
	/* file 7 was opened a moment ago: it may be reading */
	cr_assert_eq(opened(q, "1.01 2.02\n", 2, 1000 + PASS / 2), -1, "stored under a reader");
	g_autofree char *k = kernels(q);
	cr_assert_str_eq(k, "1.00 2.00\n");
	/* once it is closed, or a pass's time went by, the new text goes in,
	 * over the old one's pages where it is as long */
	quiet_closed(q, INO, 7);
	cr_assert_eq(opened(q, "1.01 2.02\n", 2, 1000 + PASS / 2), QUIET_OVER);
	cr_assert_eq(opened(q, "10.01 2.02\n", 3, 1000 + PASS / 2 + 1), QUIET_STORE, "a longer text, in place");
	quiet_free(q);
}

Test(quiet, a_file_held_open_gets_the_new_text_at_a_read_a_pass_after_its_last_request)
{
	struct quiet *q = quiet_new();
	gint64 t = 1000;
	cr_assert_eq(opened(q, "1.00 2.00\n", 1, t), QUIET_STORE);
	quiet_contact(q, INO, 7, t);
	struct stat st = { .st_atim = { 5, 0 }, .st_mtim = { 9, 9 } };
	double timeout;
	quiet_attr(q, INO, &st, &timeout, t);
	cr_assert_eq(st.st_size, 10);
	cr_assert_eq(st.st_mtim.tv_sec, 5, "times that move would drop the pages at every new text");
	cr_assert_eq(timeout, QUIET_ATTR_TIMEOUT);
	/* its own read, in its pass: the kernel's text stays */
	cr_assert_eq(reread(q, 7, "1.01 2.02\n", 2, t + PASS / 2), QUIET_KEPT);
	/* held past a pass with no request: every pass of it must ask */
	quiet_attr(q, INO, &st, &timeout, t + PASS / 2 + PASS);
	cr_assert_eq(timeout, 0);
	/* which one may begin unseen until the attributes given expire */
	cr_assert_eq(reread(q, 7, "1.01 2.02\n", 2, t + PASS / 2 + PASS + 1), QUIET_KEPT);
	cr_assert_eq(reread(q, 7, "1.02 2.04\n", 3, t + PASS / 2 + 3 * PASS), QUIET_OVER);
	g_autofree char *k = kernels(q);
	cr_assert_str_eq(k, "1.02 2.04\n");
	quiet_free(q);
}

Test(quiet, another_file_held_open_keeps_the_text_while_the_attributes_let_it_read_unseen)
{
	struct quiet *q = quiet_new();
	gint64 t = 1000;
	cr_assert_eq(opened(q, "1.00 2.00\n", 1, t), QUIET_STORE);
	quiet_contact(q, INO, 7, t); /* held open, no request since */
	struct stat st = { 0 };
	double timeout;
	gint64 later = t + 10 * PASS;
	quiet_attr(q, INO, &st, &timeout, later); /* another caller's LOOKUP */
	cr_assert_eq(timeout, 0);
	cr_assert_eq(opened(q, "1.01 2.02\n", 2, later + 1), -1, "file 7 may read unseen now");
	cr_assert_eq(opened(q, "1.01 2.02\n", 2, later + 2 * PASS), QUIET_OVER);
	quiet_free(q);
}

/* Texts shared per content class: kept while young enough, rendered again
 * when older, and a new version only when the text changed. */
#include "served.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

struct source {
	const char *text;
	int renders;
	int fail; /* -errno to return, or 0 */
};

static int render(void *data, GBytes **ret)
{
	struct source *src = data;
	src->renders++;
	if (src->fail)
		return src->fail;
	*ret = g_bytes_new(src->text, strlen(src->text));
	return 0;
}

static char *get(struct served *s, uint64_t ino, gint64 max_age, struct source *src, int64_t *ret_version)
{
	g_autoptr(GBytes) text = NULL;
	int r = served_get(s, ino, (struct served_ages){ max_age, max_age }, render, src, &text, ret_version);
	cr_assert_eq(r, 0, "served_get: %s", g_strerror(-r));
	return g_strndup(g_bytes_get_data(text, NULL), g_bytes_get_size(text));
}

Test(served, a_young_text_is_kept_an_old_one_rendered_again)
{
	struct served *s = served_new();
	struct source src = { "one\n", 0, 0 };
	int64_t v1, v2;
	g_autofree char *a = get(s, 7, G_USEC_PER_SEC, &src, &v1);
	g_autofree char *b = get(s, 7, G_USEC_PER_SEC, &src, &v2);
	cr_assert_str_eq(a, "one\n");
	cr_assert_str_eq(b, "one\n");
	cr_assert_eq(src.renders, 1, "a text of less than a second was rendered again");
	cr_assert_eq(v1, v2);
	cr_assert_gt(v1, 0);
	g_autofree char *c = get(s, 7, 0, &src, &v2);
	cr_assert_str_eq(c, "one\n");
	cr_assert_eq(src.renders, 2, "a text older than asked was not rendered again");
	cr_assert_eq(v2, v1, "the same text is the same version");
	guint64 renders, reuses;
	served_counts(s, &renders, &reuses);
	cr_assert_eq(renders, 2);
	cr_assert_eq(reuses, 1);
	served_free(s);
}

Test(served, a_changed_text_is_a_new_later_version_and_peek_sees_it)
{
	struct served *s = served_new();
	struct source src = { "one\n", 0, 0 };
	int64_t v1, v2, peeked;
	g_autofree char *a = get(s, 7, 0, &src, &v1);
	cr_assert_str_eq(a, "one\n");
	src.text = "two\n";
	g_autofree char *b = get(s, 7, 0, &src, &v2);
	cr_assert_str_eq(b, "two\n");
	cr_assert_gt(v2, v1, "a new text got no later version");
	g_autoptr(GBytes) text = NULL;
	cr_assert_eq(served_peek(s, 7, &text, &peeked), 0);
	cr_assert_eq(peeked, v2);
	cr_assert_eq(g_bytes_get_size(text), 4);
	cr_assert_eq(served_peek(s, 8, &text, &peeked), -ENOENT, "another inode has no text");
	served_free(s);
}

Test(served, a_failed_render_keeps_nothing_and_returns_its_error)
{
	struct served *s = served_new();
	struct source src = { "one\n", 0, -EIO };
	g_autoptr(GBytes) text = NULL;
	int64_t v;
	cr_assert_eq(served_get(s, 7, (struct served_ages){ 0, 0 }, render, &src, &text, &v), -EIO);
	cr_assert_null(text);
	cr_assert_eq(served_peek(s, 7, &text, &v), -ENOENT);
	served_free(s);
}

Test(served, inodes_keep_their_own_texts)
{
	struct served *s = served_new();
	struct source one = { "one CPU\n", 0, 0 }, two = { "two CPUs\n", 0, 0 };
	int64_t v1, v2;
	g_autofree char *a = get(s, 1, G_USEC_PER_SEC, &one, &v1);
	g_autofree char *b = get(s, 2, G_USEC_PER_SEC, &two, &v2);
	cr_assert_str_eq(a, "one CPU\n");
	cr_assert_str_eq(b, "two CPUs\n");
	g_autofree char *c = get(s, 1, G_USEC_PER_SEC, &two, &v1);
	cr_assert_str_eq(c, "one CPU\n", "inode 1 was given inode 2's text");
	cr_assert_eq(two.renders, 1);
	served_free(s);
}

static int render_host(void *data, GBytes **ret)
{
	int r = render(data, ret);
	return r < 0 ? r : SERVED_HOST;
}

Test(served, the_hosts_text_is_kept_only_as_long_as_its_own_age_says)
{
	struct served *s = served_new();
	struct source host = { "host\n", 0, 0 }, own = { "own\n", 0, 0 };
	struct served_ages ages = { G_USEC_PER_SEC, 0 };
	g_autoptr(GBytes) a = NULL, b = NULL, c = NULL, d = NULL;
	int64_t v;
	cr_assert_eq(served_get(s, 1, ages, render_host, &host, &a, &v), 0, "SERVED_HOST is no error");
	cr_assert_eq(served_get(s, 1, ages, render_host, &host, &b, &v), 0);
	cr_assert_eq(host.renders, 2, "the host's text was served again");
	cr_assert_eq(served_get(s, 2, ages, render, &own, &c, &v), 0);
	cr_assert_eq(served_get(s, 2, ages, render, &own, &d, &v), 0);
	cr_assert_eq(own.renders, 1, "a class's own young text was rendered again");
	served_free(s);
}

/* A render during which another one of the same inode begins and ends. */
struct overtaken {
	struct served *s;
	struct source early, late;
	GBytes *late_text;
};

static int render_overtaken(void *data, GBytes **ret)
{
	struct overtaken *o = data;
	int64_t v;
	g_usleep(1000);
	cr_assert_eq(served_get(o->s, 7, (struct served_ages){ 0, 0 }, render, &o->late, &o->late_text, &v), 0);
	return render(&o->early, ret);
}

Test(served, of_two_renders_at_once_the_one_that_began_later_is_kept)
{
	struct overtaken o = { served_new(), { "early\n", 0, 0 }, { "late\n", 0, 0 }, NULL };
	g_autoptr(GBytes) text = NULL, kept = NULL;
	int64_t v, peeked;
	cr_assert_eq(served_get(o.s, 7, (struct served_ages){ 0, 0 }, render_overtaken, &o, &text, &v), 0);
	cr_assert_eq(o.early.renders, 1);
	cr_assert_eq(o.late.renders, 1);
	cr_assert(g_bytes_equal(text, o.late_text), "the earlier render's text replaced the later one's");
	cr_assert_eq(served_peek(o.s, 7, &kept, &peeked), 0);
	cr_assert(g_bytes_equal(kept, o.late_text));
	cr_assert_eq(peeked, v);
	g_bytes_unref(o.late_text);
	served_free(o.s);
}

/* The directory walker on a tree made for each test. */
#include "dirwalk.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <unistd.h>

static char *tmp;
static int tmp_fd = -1;

static void setup(void)
{
	tmp = g_dir_make_tmp("dirwalk-XXXXXX", NULL);
	cr_assert_not_null(tmp);
	static const char *const names[] = { "b", "a", "C", "cpu10", "cpu2" };
	for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
		g_autofree char *path = g_build_filename(tmp, names[i], NULL);
		cr_assert(g_file_set_contents(path, "", 0, NULL));
	}
	g_autofree char *sub = g_build_filename(tmp, "sub", NULL);
	cr_assert_eq(g_mkdir(sub, 0755), 0);
	tmp_fd = open(tmp, O_RDONLY | O_DIRECTORY);
	cr_assert_geq(tmp_fd, 0);
}

static void teardown(void)
{
	static const char *const names[] = { "b", "a", "C", "cpu10", "cpu2", "sub" };
	for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
		g_autofree char *path = g_build_filename(tmp, names[i], NULL);
		g_remove(path);
	}
	g_rmdir(tmp);
	g_free(tmp);
	close(tmp_fd);
}

TestSuite(dirwalk, .init = setup, .fini = teardown);

static void collect(const struct dirent *de, void *data)
{
	GString *s = data;
	g_string_append_printf(s, "%s%s%s", s->len ? " " : "", de->d_name, de->d_type == DT_DIR ? "/" : "");
}

Test(dirwalk, sorted_walks_every_entry_but_dots_in_byte_order)
{
	g_autoptr(GString) s = g_string_new(NULL);
	cr_assert_eq(dirwalk_sorted(tmp_fd, ".", collect, s), 0);
	cr_assert_str_eq(s->str, "C a b cpu10 cpu2 sub/");
}

Test(dirwalk, unsorted_walks_the_same_entries)
{
	g_autoptr(GString) s = g_string_new(NULL);
	cr_assert_eq(dirwalk(tmp_fd, ".", collect, s), 0);
	g_auto(GStrv) names = g_strsplit(s->str, " ", -1);
	cr_assert_eq(g_strv_length(names), 6);
	cr_assert(g_strv_contains((const char *const *)names, "sub/"));
	cr_assert(g_strv_contains((const char *const *)names, "cpu10"));
}

Test(dirwalk, what_is_not_a_directory_is_an_error)
{
	g_autoptr(GString) s = g_string_new(NULL);
	cr_assert_eq(dirwalk(tmp_fd, "nosuch", collect, s), -ENOENT);
	cr_assert_eq(dirwalk_sorted(tmp_fd, "a", collect, s), -ENOTDIR);
	cr_assert_eq(s->len, 0);
}

Test(dirwalk, no_descriptor_is_left_open)
{
	g_autoptr(GString) s = g_string_new(NULL);
	/* The first open takes the fd kept in reserve for a process out of
	 * fds (procfile_openat): it stays, by design. */
	cr_assert_eq(dirwalk(tmp_fd, ".", collect, s), 0);
	int before = open("/dev/null", O_RDONLY);
	close(before);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(dirwalk(tmp_fd, ".", collect, s), 0);
		cr_assert_eq(dirwalk_sorted(tmp_fd, "sub", collect, s), 0);
		cr_assert_eq(dirwalk(tmp_fd, "a", collect, s), -ENOTDIR);
	}
	int after = open("/dev/null", O_RDONLY);
	close(after);
	cr_assert_eq(after, before, "the lowest free descriptor is the same after the walks");
}

/* A tree of files made for each test in a temporary directory: files put
 * with their directories, directories opened, all removed at the end. For
 * unit tests of what reads cgroup and procfs trees (fixtures that a test
 * writes itself). */
#pragma once

#include <criterion/criterion.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <unistd.h>

static char *tmptree;

static inline void tmptree_make(void)
{
	tmptree = g_dir_make_tmp("cgprocfs-tree-XXXXXX", NULL);
	cr_assert_not_null(tmptree);
}

static inline void tmptree_remove(void)
{
	g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", tmptree);
	cr_assert_eq(system(cmd), 0);
	g_clear_pointer(&tmptree, g_free);
}

/* Write text to the tree's file path, making its directories. */
static inline void tmptree_put(const char *path, const char *text)
{
	g_autofree char *full = g_build_filename(tmptree, path, NULL);
	g_autofree char *parent = g_path_get_dirname(full);
	cr_assert_eq(g_mkdir_with_parents(parent, 0755), 0);
	cr_assert(g_file_set_contents(full, text, -1, NULL), "%s", full);
}

/* The tree's directory path (made if missing), opened. */
static inline int tmptree_open_dir(const char *path)
{
	g_autofree char *full = g_build_filename(tmptree, path, NULL);
	cr_assert_eq(g_mkdir_with_parents(full, 0755), 0);
	int fd = open(full, O_RDONLY | O_DIRECTORY);
	cr_assert_geq(fd, 0, "%s", full);
	return fd;
}

/* The memory view's state (fs/memgroups) on a fake procfs and a v2 memory
 * tree in a temporary directory: which group a caller is in, its class,
 * and what it reads; a vanished or garbled cgroup gives the host's files
 * and one report per file. */
#include "memgroups.h"

#include "deciders.h"
#include "procfile.h"
#include "scope.h"
#include "tmptree.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <unistd.h>

static int proc_fd = -1, memory_fd = -1;
static GPtrArray *reports;
static GPtrArray *scopes; /* every make()'s, freed at the end */

static const char host_meminfo[] = "MemTotal:       16384000 kB\nMemFree:         8192000 kB\n"
				   "MemAvailable:   12000000 kB\nSwapTotal:             0 kB\n"
				   "SwapFree:              0 kB\n";

static void setup(void)
{
	tmptree_make();
	proc_fd = tmptree_open_dir("proc");
	memory_fd = tmptree_open_dir("memory");
	reports = g_ptr_array_new_with_free_func(g_free);
	scopes = g_ptr_array_new_with_free_func((GDestroyNotify)scope_free);
	tmptree_put("proc/meminfo", host_meminfo);
	tmptree_put("proc/100/cgroup", "0::/box\n");
	tmptree_put("proc/200/cgroup", "0::/free\n");
	tmptree_put("proc/300/cgroup", "0::/gone\n");
	tmptree_put("memory/box/memory.max", "268435456\n");
	tmptree_put("memory/box/memory.current", "67108864\n");
	tmptree_put("memory/box/memory.stat", "anon 1048576\nfile 2097152\n");
	tmptree_put("memory/free/memory.max", "max\n");
	tmptree_put("memory/free/memory.current", "4096\n");
}

static void teardown(void)
{
	close(proc_fd);
	close(memory_fd);
	g_ptr_array_unref(reports);
	g_ptr_array_unref(scopes);
	tmptree_remove();
}

TestSuite(memgroups, .init = setup, .fini = teardown);

static void report(void *data, const char *file, int err)
{
	g_ptr_array_add(reports, g_strdup_printf("%s %d", file, err));
}

static struct memgroups *make(void)
{
	const struct cgroup_hierarchy memory = { CGROUP_V2, memory_fd, "/" };
	/* the caller's own cgroup, whatever it is: the memory view's choice */
	const struct scope_config scfg = { proc_fd, -1, { .memory = memory }, SCOPE_CALLER };
	struct scope *scope = scope_new(&scfg);
	g_ptr_array_add(scopes, scope);
	const struct memgroups_config cfg = {
		.proc_fd = proc_fd,
		.scope = scope,
		.memory = memory,
		.swap_view = TRUE,
		.report = report,
	};
	return memgroups_new(&cfg);
}

static char *render(struct memgroups *m, pid_t tid, const char *name)
{
	g_autofree char *group = NULL;
	cr_assert_eq(deciders_of(memgroups_deciders(m), tid, FALSE, (gpointer *)&group), 0);
	GBytes *text = NULL;
	int r = memgroups_render(m, group, name, &text);
	cr_assert(r == 0 || r == SERVED_HOST, "memgroups_render: %d", r);
	g_autoptr(GBytes) host = NULL;
	if (r == SERVED_HOST) {
		cr_assert_eq(procfile_read_at(proc_fd, name, &host), 0);
		cr_assert(g_bytes_equal(text, host), "SERVED_HOST, not the host's %s", name);
	}
	char *s = g_strndup(g_bytes_get_data(text, NULL), g_bytes_get_size(text));
	g_bytes_unref(text);
	return s;
}

Test(memgroups, a_limited_caller_reads_its_cgroup_an_unlimited_one_the_host)
{
	struct memgroups *m = make();
	g_autofree char *boxed = render(m, 100, "meminfo");
	cr_assert(g_str_has_prefix(boxed, "MemTotal:         262144 kB\nMemFree:          196608 kB\n"), "%s", boxed);
	g_autofree char *free = render(m, 200, "meminfo");
	cr_assert_str_eq(free, host_meminfo, "no limit: the host's, byte for byte");
	cr_assert_eq(reports->len, 0);
	memgroups_free(m);
}

Test(memgroups, a_group_is_its_path_and_its_class_is_known_to_every_caller)
{
	struct memgroups *m = make();
	g_autofree char *a = NULL;
	cr_assert_eq(deciders_of(memgroups_deciders(m), 100, FALSE, (gpointer *)&a), 0);
	g_autofree char *b = NULL;
	cr_assert_eq(deciders_of(memgroups_deciders(m), 200, FALSE, (gpointer *)&b), 0);
	cr_assert_str_eq(a, "box");
	cr_assert_neq(memgroups_class(a), memgroups_class(b));
	cr_assert_eq(memgroups_class(a), memgroups_class("box"), "the same in every process");
	g_autofree char *known = deciders_of_class(memgroups_deciders(m), memgroups_class(a));
	cr_assert_str_eq(known, "box");
	cr_assert_null(deciders_of_class(memgroups_deciders(m), memgroups_class("never-seen")));
	memgroups_free(m);
}

/* A caller whose /proc/<tid>/cgroup cannot be read (EMFILE after the
 * wait, say; here it is a directory: EISDIR) is of no class: an error,
 * never the host's files, and nothing kept: it is read again next time. */
Test(memgroups, a_caller_whose_cgroup_file_cannot_be_read_gets_an_error_not_the_hosts_files)
{
	struct memgroups *m = make();
	tmptree_put("proc/400/cgroup/unreadable", "");
	g_autofree char *group = NULL;
	int r = deciders_of(memgroups_deciders(m), 400, FALSE, (gpointer *)&group);
	cr_assert_eq(r, -EIO, "deciders_of: %d, group \"%s\" (\"\": the host's files)", r, group ? group : "(none)");
	cr_assert_null(deciders_of_class(memgroups_deciders(m), memgroups_class("")), "the host's class was kept");
	g_autofree char *dir = g_build_filename(tmptree, "proc/400/cgroup", NULL);
	g_autofree char *inside = g_build_filename(dir, "unreadable", NULL);
	cr_assert_eq(g_unlink(inside), 0);
	cr_assert_eq(g_rmdir(dir), 0);
	tmptree_put("proc/400/cgroup", "0::/box\n");
	cr_assert_eq(deciders_of(memgroups_deciders(m), 400, FALSE, (gpointer *)&group), 0, "the error was kept");
	cr_assert_str_eq(group, "box");
	g_autofree char *gone = NULL;
	cr_assert_eq(deciders_of(memgroups_deciders(m), 999, FALSE, (gpointer *)&gone), -EIO, "no proc/999");
	memgroups_free(m);
}

Test(memgroups, a_vanished_or_garbled_cgroup_gives_the_hosts_file_and_one_report)
{
	struct memgroups *m = make();
	for (int i = 0; i < 3; i++) {
		g_autofree char *text = render(m, 300, "meminfo");
		cr_assert_str_eq(text, host_meminfo, "vanished");
	}
	cr_assert_eq(reports->len, 1, "one report, not one per read");
	g_autofree char *gone = g_strdup_printf("gone %d", ENOENT);
	cr_assert_str_eq(g_ptr_array_index(reports, 0), gone);

	tmptree_put("memory/box/memory.current", "lots\n");
	for (int i = 0; i < 3; i++) {
		g_autofree char *text = render(m, 100, "meminfo");
		cr_assert_str_eq(text, host_meminfo, "garbled");
	}
	cr_assert_eq(reports->len, 2);
	g_autofree char *garbled = g_strdup_printf("box/memory.current %d", EINVAL);
	cr_assert_str_eq(g_ptr_array_index(reports, 1), garbled);
	memgroups_free(m);
}

/* Reading cgroup files from v1 and v2 trees built for each test in a
 * temporary directory: a memory cgroup's figures (cgroup_read_memory:
 * nested limits, "max", missing swap files, garbage, a vanished cgroup,
 * v1's total_* names) and CPU time (cgroup_read_cpu_usage). */
#include "cgroup.h"

#include "tmptree.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <unistd.h>

static int tree_fd = -1;

static void make_tree(void)
{
	tmptree_make();
	tree_fd = tmptree_open_dir(".");
}

static void remove_tree(void)
{
	close(tree_fd);
	tmptree_remove();
}

TestSuite(cgroup_files, .init = make_tree, .fini = remove_tree);

static int read_memory(enum cgroup_version version, const char *dir, struct mem_figures *f, gboolean *limited,
		       char **culprit)
{
	const struct cgroup_hierarchy h = { version, tree_fd, "/" };
	return cgroup_read_memory(&h, dir, f, limited, culprit);
}

static uint64_t stat_of(const struct mem_figures *f, const char *key)
{
	uint64_t v = 0;
	cr_assert(mem_figures_stat(f, key, &v), "no %s in the figures", key);
	return v;
}

#define MIB (UINT64_C(1) << 20)

/* A v2 cgroup a/b: a limits memory, b limits swap. */
static void v2_tree(void)
{
	tmptree_put("a/memory.max", "536870912\n");
	tmptree_put("a/memory.swap.max", "max\n");
	tmptree_put("a/b/memory.max", "max\n");
	tmptree_put("a/b/memory.current", "104857600\n");
	tmptree_put("a/b/memory.swap.max", "67108864\n");
	tmptree_put("a/b/memory.swap.current", "10485760\n");
	tmptree_put("a/b/memory.stat", "anon 1000\nfile 2000\nfile_mapped 300\nslab_reclaimable 40\npgfault 7\n");
}

Test(cgroup_files, v2_limits_are_the_smallest_over_ancestors)
{
	v2_tree();
	struct mem_figures f = { 0 };
	gboolean limited;
	cr_assert_eq(read_memory(CGROUP_V2, "a/b", &f, &limited, NULL), 0);
	cr_assert(limited);
	cr_assert_eq(f.limit, 512 * MIB, "a's limit holds for b");
	cr_assert_eq(f.usage, 100 * MIB);
	cr_assert(f.swap_accounted && f.swap_limited);
	cr_assert_eq(f.swap_limit, 64 * MIB);
	cr_assert_eq(f.swap_usage, 10 * MIB);
	cr_assert_eq(stat_of(&f, "file"), 2000);
	cr_assert_eq(stat_of(&f, "file_mapped"), 300, "file_mapped is its own key");
	cr_assert_eq(stat_of(&f, "pgfault"), 7);
	uint64_t v;
	cr_assert_not(mem_figures_stat(&f, "shmem", &v));
	mem_figures_clear(&f);
}

Test(cgroup_files, v2_without_a_limit_anywhere_or_at_the_root_is_not_limited)
{
	tmptree_put("free/memory.max", "max\n");
	tmptree_put("free/memory.current", "1\n");
	tmptree_put("free/memory.stat", "anon 1\n");
	struct mem_figures f = { 0 };
	gboolean limited = TRUE;
	cr_assert_eq(read_memory(CGROUP_V2, "free", &f, &limited, NULL), 0);
	cr_assert_not(limited);
	cr_assert_null(f.stat);
	limited = TRUE;
	cr_assert_eq(read_memory(CGROUP_V2, ".", &f, &limited, NULL), 0, "v2's root has no memory files");
	cr_assert_not(limited);
}

Test(cgroup_files, v2_without_swap_files_does_not_account_swap)
{
	tmptree_put("noswap/memory.max", "268435456\n");
	tmptree_put("noswap/memory.current", "0\n");
	tmptree_put("noswap/memory.stat", "anon 0\n");
	struct mem_figures f = { 0 };
	gboolean limited;
	cr_assert_eq(read_memory(CGROUP_V2, "noswap", &f, &limited, NULL), 0);
	cr_assert(limited);
	cr_assert_not(f.swap_accounted);
	cr_assert_not(f.swap_limited);
	mem_figures_clear(&f);
}

Test(cgroup_files, garbage_is_einval_and_names_the_file)
{
	v2_tree();
	const char *cases[][2] = {
		{ "a/memory.max", "lots\n" },
		{ "a/b/memory.current", "-1\n" },
		{ "a/b/memory.swap.max", "64M\n" },
		{ "a/b/memory.stat", "anon 1\nfile\n" },
		{ "a/b/memory.stat", "anon x\n" },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		v2_tree();
		tmptree_put(cases[i][0], cases[i][1]);
		struct mem_figures f = { 0 };
		gboolean limited = TRUE;
		g_autofree char *culprit = NULL;
		cr_assert_eq(read_memory(CGROUP_V2, "a/b", &f, &limited, &culprit), -EINVAL, "%s", cases[i][0]);
		cr_assert_str_eq(culprit, cases[i][0]);
		cr_assert_not(limited, "nothing half read is served");
		cr_assert_null(f.stat);
	}
}

Test(cgroup_files, v2_without_the_memory_controller_is_the_level_it_is_charged_to)
{
	v2_tree();
	tmptree_put("a/b/.lxc/cgroup.procs", "7\n"); /* no memory files: not enabled for it */
	const struct cgroup_hierarchy h = { CGROUP_V2, tree_fd, "/" };
	struct mem_figures f = { 0 };
	gboolean limited = FALSE;
	cr_assert_eq(cgroup_memory_limited(&h, "a/b/.lxc", &limited), 0);
	cr_assert(limited, "a's limit holds for what b is charged");
	limited = FALSE;
	cr_assert_eq(read_memory(CGROUP_V2, "a/b/.lxc", &f, &limited, NULL), 0);
	cr_assert(limited);
	cr_assert_eq(f.limit, 512 * MIB);
	cr_assert_eq(f.usage, 100 * MIB, "b's usage, which counts its leaf's");
	cr_assert_eq(stat_of(&f, "file"), 2000);
	mem_figures_clear(&f);
	/* no level with the controller (v2's root only): not limited */
	tmptree_put("bare/leaf/cgroup.procs", "8\n");
	cr_assert_eq(cgroup_memory_limited(&h, "bare/leaf", &limited), -ENOENT);
	limited = TRUE;
	cr_assert_eq(read_memory(CGROUP_V2, "bare/leaf", &f, &limited, NULL), 0);
	cr_assert_not(limited);
}

Test(cgroup_files, a_vanished_cgroup_is_enoent)
{
	v2_tree();
	struct mem_figures f = { 0 };
	gboolean limited;
	cr_assert_eq(read_memory(CGROUP_V2, "a/gone", &f, &limited, NULL), -ENOENT);
	cr_assert_not(limited);
}

/* v1: c limited to 256 MiB with 64 MiB of swap, usage above the limit. */
static void v1_tree(void)
{
	tmptree_put("memory.limit_in_bytes", "9223372036854771712\n");
	tmptree_put("memory.memsw.limit_in_bytes", "9223372036854771712\n");
	tmptree_put("c/memory.limit_in_bytes", "268435456\n");
	tmptree_put("c/memory.usage_in_bytes", "314572800\n");
	tmptree_put("c/memory.memsw.limit_in_bytes", "335544320\n");
	tmptree_put("c/memory.memsw.usage_in_bytes", "419430400\n");
	tmptree_put("c/memory.stat", "rss 99\ncache 98\ntotal_rss 5\ntotal_rss_huge 7\ntotal_cache 9\n"
			     "total_mapped_file 11\ntotal_pgfault 13\nhierarchical_memory_limit 268435456\n");
}

Test(cgroup_files, v1_figures_come_in_v2_names_from_the_totals)
{
	v1_tree();
	struct mem_figures f = { 0 };
	gboolean limited;
	cr_assert_eq(read_memory(CGROUP_V1, "c", &f, &limited, NULL), 0);
	cr_assert(limited);
	cr_assert_eq(f.limit, 256 * MIB, "the root's maximum is no limit");
	cr_assert_eq(f.usage, 300 * MIB);
	cr_assert(f.swap_accounted && f.swap_limited);
	cr_assert_eq(f.swap_limit, 64 * MIB, "memsw less memory");
	cr_assert_eq(f.swap_usage, 100 * MIB);
	cr_assert_eq(stat_of(&f, "anon"), 5, "total_rss, not rss");
	cr_assert_eq(stat_of(&f, "anon_thp"), 7, "total_rss_huge is not total_rss");
	cr_assert_eq(stat_of(&f, "file"), 9);
	cr_assert_eq(stat_of(&f, "file_mapped"), 11);
	cr_assert_eq(stat_of(&f, "pgfault"), 13);
	uint64_t v;
	cr_assert_not(mem_figures_stat(&f, "rss", &v));
	cr_assert_not(mem_figures_stat(&f, "total_rss", &v));
	mem_figures_clear(&f);
}

Test(cgroup_files, v1_swap_unlimited_or_not_accounted)
{
	v1_tree();
	tmptree_put("c/memory.memsw.limit_in_bytes", "9223372036854771712\n");
	struct mem_figures f = { 0 };
	gboolean limited;
	cr_assert_eq(read_memory(CGROUP_V1, "c", &f, &limited, NULL), 0);
	cr_assert(f.swap_accounted);
	cr_assert_not(f.swap_limited);
	mem_figures_clear(&f);

	/* d has no memsw files: the kernel does not count its swap */
	tmptree_put("d/memory.limit_in_bytes", "0\n");
	tmptree_put("d/memory.usage_in_bytes", "4096\n");
	tmptree_put("d/memory.stat", "total_rss 4096\n");
	cr_assert_eq(read_memory(CGROUP_V1, "d", &f, &limited, NULL), 0);
	cr_assert(limited, "a limit of 0 is a limit");
	cr_assert_eq(f.limit, 0);
	cr_assert_not(f.swap_accounted);
	mem_figures_clear(&f);
}

Test(cgroup_files, the_group_of_a_path_stays_inside_the_mount)
{
	const struct cgroup_hierarchy h = { CGROUP_V2, -1, "/kubepods" };
	g_autofree char *a = cgroup_relative_dir(&h, "/kubepods/pod1/c");
	cr_assert_str_eq(a, "pod1/c");
	g_autofree char *top = cgroup_relative_dir(&h, "/kubepods");
	cr_assert_str_eq(top, ".");
	cr_assert_null(cgroup_relative_dir(&h, "/other"));
	cr_assert_null(cgroup_relative_dir(&h, "/kubepods/../x"));
}

static int cpu_usage(enum cgroup_version version, const char *path, struct cgroup_cpu_time *u, char **culprit)
{
	const struct cgroup_hierarchy h = { version, tree_fd, "/" };
	const struct cgroup_hierarchy none = { CGROUP_NONE, -1, NULL };
	const struct cgroup_config cfg = { .cpu = version == CGROUP_V2 ? h : none, .cpuset = none, .memory = none,
					   .cpuacct = version == CGROUP_V1 ? h : none, .io = none, .unified = none };
	struct cgroup_paths p = { .cpu = (char *)path, .cpuacct = (char *)path };
	return cgroup_read_cpu_usage(&cfg, &p, u, culprit);
}

Test(cgroup_files, v1_cpu_time_is_cpuacct_usage_split_as_cpuacct_stat_splits_it)
{
	/* usage_all's tick samples (which skew the time) are not read. */
	tmptree_put("c/cpuacct.usage_all", "cpu user system\n0 900 900\n1 0 0\n");
	tmptree_put("c/cpuacct.usage", "1000\n");
	tmptree_put("c/cpuacct.stat", "user 3\nsystem 1\n");
	struct cgroup_cpu_time u;
	cr_assert_eq(cpu_usage(CGROUP_V1, "/c", &u, NULL), 0);
	cr_assert_eq(u.user_ns, 750);
	cr_assert_eq(u.system_ns, 250);
	/* No tick counted yet: the time is the user's. */
	tmptree_put("d/cpuacct.usage", "7\n");
	tmptree_put("d/cpuacct.stat", "user 0\nsystem 0\n");
	cr_assert_eq(cpu_usage(CGROUP_V1, "/d", &u, NULL), 0);
	cr_assert_eq(u.user_ns, 7);
	cr_assert_eq(u.system_ns, 0);
	/* A cgroup's years of time, to the nanosecond. */
	tmptree_put("e/cpuacct.usage", "18000000000000000000\n");
	tmptree_put("e/cpuacct.stat", "user 1\nsystem 2\n");
	cr_assert_eq(cpu_usage(CGROUP_V1, "/e", &u, NULL), 0);
	cr_assert_eq(u.user_ns, UINT64_C(6000000000000000000));
	cr_assert_eq(u.system_ns, UINT64_C(12000000000000000000));
	/* Keys are found wherever their lines are. */
	tmptree_put("f/cpuacct.usage", "1000\n");
	tmptree_put("f/cpuacct.stat", "system 1\nuser 3\n");
	cr_assert_eq(cpu_usage(CGROUP_V1, "/f", &u, NULL), 0);
	cr_assert_eq(u.user_ns, 750);
}

Test(cgroup_files, v2_cpu_time_is_cpu_stat)
{
	tmptree_put("c/cpu.stat", "usage_usec 330\nuser_usec 300\nsystem_usec 30\nnr_periods 0\n");
	struct cgroup_cpu_time u;
	cr_assert_eq(cpu_usage(CGROUP_V2, "/c", &u, NULL), 0);
	cr_assert_eq(u.user_ns, 300000);
	cr_assert_eq(u.system_ns, 30000);
}

Test(cgroup_files, cpu_time_garbage_is_einval_and_a_vanished_cgroup_enoent)
{
	const char *bad[][3] = {
		{ "1", "cpuacct.usage", "x\n" },
		{ "1", "cpuacct.usage", "-1\n" },
		{ "1", "cpuacct.stat", "user 1\n" }, /* no system line */
		{ "1", "cpuacct.stat", "user 1\nsystem x\n" },
		{ "1", "cpuacct.stat", "user 1 2\nsystem 1\n" },
		{ "2", "cpu.stat", "usage_usec 1\n" },                    /* no user_usec */
		{ "2", "cpu.stat", "user_usec x\nsystem_usec 1\n" },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autofree char *path = g_strdup_printf("b%zu/%s", i, bad[i][1]);
		g_autofree char *dir = g_strdup_printf("/b%zu", i);
		tmptree_put(path, bad[i][2]);
		if (strcmp(bad[i][1], "cpuacct.stat") == 0) {
			g_autofree char *usage = g_strdup_printf("b%zu/cpuacct.usage", i);
			tmptree_put(usage, "10\n");
		}
		struct cgroup_cpu_time u;
		g_autofree char *culprit = NULL;
		cr_assert_eq(cpu_usage(bad[i][0][0] == '1' ? CGROUP_V1 : CGROUP_V2, dir, &u, &culprit), -EINVAL, "%s",
			     bad[i][2]);
		cr_assert_str_eq(culprit, path);
	}
	struct cgroup_cpu_time u;
	cr_assert_eq(cpu_usage(CGROUP_V2, "/gone", &u, NULL), -ENOENT);
	cr_assert_eq(cpu_usage(CGROUP_V1, "/gone", &u, NULL), -ENOENT);
}

/* ------------------------------------------------------------------ I/O -- */

static int read_io(enum cgroup_version version, const char *dir, GArray **devs, char **culprit)
{
	const struct cgroup_hierarchy h = { version, tree_fd, "/" };
	*devs = g_array_new(FALSE, TRUE, sizeof(struct cgroup_io_device));
	return cgroup_read_io(&h, dir, *devs, culprit);
}

static const struct cgroup_io_device *dev(GArray *devs, unsigned major, unsigned minor)
{
	for (guint i = 0; i < devs->len; i++) {
		const struct cgroup_io_device *d = &g_array_index(devs, struct cgroup_io_device, i);
		if (d->major == major && d->minor == minor)
			return d;
	}
	cr_assert_fail("no device %u:%u", major, minor);
	return NULL;
}

Test(cgroup_files, v2_io_stat_counts_every_device_and_ignores_other_keys)
{
	tmptree_put("c/io.stat", "8:0 rbytes=4096 wbytes=8388608 rios=1 wios=64 dbytes=0 dios=0\n"
			 "259:0 rbytes=512 wbytes=0 rios=1 wios=0 dbytes=1048576 dios=2 cost.vrate=100.00\n"
			 "253:7 rbytes=0 wbytes=0 rios=0 wios=0 dbytes=0 dios=0\n");
	g_autoptr(GArray) devs = NULL;
	cr_assert_eq(read_io(CGROUP_V2, "c", &devs, NULL), 0);
	cr_assert_eq(devs->len, 3);
	const struct cgroup_io_device *sda = dev(devs, 8, 0), *nvme = dev(devs, 259, 0);
	cr_assert_eq(sda->ios[CGROUP_IO_WRITE], 64);
	cr_assert_eq(sda->bytes[CGROUP_IO_WRITE], 8388608);
	cr_assert_eq(sda->bytes[CGROUP_IO_READ], 4096);
	cr_assert_eq(nvme->ios[CGROUP_IO_DISCARD], 2);
	cr_assert_eq(nvme->bytes[CGROUP_IO_DISCARD], 1048576, "a key after the six is ignored");
}

Test(cgroup_files, v2_without_the_io_controller_counts_at_the_level_it_is_charged_to)
{
	/* LXC's attach leaf: b holds the container's init and has io.stat, .lxc
	 * beside it cannot have the controller. */
	tmptree_put("a/b/io.stat", "8:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n");
	tmptree_put("a/b/.lxc/cgroup.procs", "");
	g_autoptr(GArray) devs = NULL, none = NULL;
	cr_assert_eq(read_io(CGROUP_V2, "a/b/.lxc", &devs, NULL), 0);
	cr_assert_eq(devs->len, 1);
	cr_assert_eq(dev(devs, 8, 0)->bytes[CGROUP_IO_WRITE], 8192, "b's counters");
	cr_assert_eq(dev(devs, 8, 0)->ios[CGROUP_IO_READ], 1);
	cr_assert_eq(read_io(CGROUP_V2, "a/b/.lxc/gone", &none, NULL), -ENOENT, "a cgroup gone is still gone");
}

Test(cgroup_files, v1_throttle_files_count_requests_and_bytes_and_skip_the_total)
{
	tmptree_put("c/blkio.throttle.io_serviced_recursive", "7:0 Read 8\n7:0 Write 4\n7:0 Sync 12\n7:0 Async 0\n"
						      "7:0 Discard 1\n7:0 Total 13\n8:16 Read 2\n8:16 Write 0\n"
						      "Total 15\n");
	tmptree_put("c/blkio.throttle.io_service_bytes_recursive", "7:0 Read 4194304\n7:0 Write 2097152\n7:0 Discard 512\n"
							   "7:0 Total 6291968\n8:16 Read 8192\nTotal 6300160\n");
	g_autoptr(GArray) devs = NULL;
	cr_assert_eq(read_io(CGROUP_V1, "c", &devs, NULL), 0);
	cr_assert_eq(devs->len, 2);
	const struct cgroup_io_device *loop = dev(devs, 7, 0);
	cr_assert_eq(loop->ios[CGROUP_IO_READ], 8);
	cr_assert_eq(loop->ios[CGROUP_IO_WRITE], 4);
	cr_assert_eq(loop->ios[CGROUP_IO_DISCARD], 1);
	cr_assert_eq(loop->bytes[CGROUP_IO_READ], 4194304);
	cr_assert_eq(loop->bytes[CGROUP_IO_WRITE], 2097152);
	cr_assert_eq(dev(devs, 8, 16)->bytes[CGROUP_IO_READ], 8192);
}

Test(cgroup_files, io_garbage_is_einval_naming_the_file_and_missing_is_enoent)
{
	g_autoptr(GArray) a = NULL, b = NULL, c = NULL, d = NULL;
	g_autofree char *culprit = NULL, *culprit_v1 = NULL;
	tmptree_put("g/io.stat", "8:0 rbytes=lots\n");
	cr_assert_eq(read_io(CGROUP_V2, "g", &a, &culprit), -EINVAL);
	cr_assert_str_eq(culprit, "g/io.stat");
	tmptree_put("h/blkio.throttle.io_serviced_recursive", "sda Read 1\n");
	tmptree_put("h/blkio.throttle.io_service_bytes_recursive", "");
	cr_assert_eq(read_io(CGROUP_V1, "h", &b, &culprit_v1), -EINVAL);
	cr_assert_str_eq(culprit_v1, "h/blkio.throttle.io_serviced_recursive");
	cr_assert_eq(read_io(CGROUP_V2, "gone", &c, NULL), -ENOENT);
	tmptree_put("noacct/cgroup.procs", "");
	cr_assert_eq(read_io(CGROUP_V2, "noacct", &d, NULL), -ENOENT, "no io controller: no io.stat");
	GArray *e = g_array_new(FALSE, TRUE, sizeof(struct cgroup_io_device));
	cr_assert_eq(cgroup_parse_io_stat("8:0\n", e), 0, "a device with no keys");
	cr_assert_eq(cgroup_parse_io_stat("8:0 rbytes\n", e), -EINVAL);
	cr_assert_eq(cgroup_parse_blkio("7:0 Read\n", "", e), -EINVAL);
	g_array_unref(e);
}

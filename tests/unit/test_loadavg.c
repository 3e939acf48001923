/* The load averages' arithmetic (fs/loadavg.h) against the continuous
 * exponentials the kernel's fixed-point constants stand for, and the
 * text's shape. */
#include "loadavg.h"

#include "caller.h"
#include "cgroup.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static double value(uint64_t fixed)
{
	return (double)fixed / LOADAVG_FIXED_1;
}

Test(loadavg, one_thread_for_a_minute_gives_the_exponentials)
{
	uint64_t avenrun[3] = { 0, 0, 0 };
	for (int i = 0; i < 12; i++) /* 12 samples of 5 s */
		loadavg_step(avenrun, 1);
	const double want[3] = { 1 - exp(-1.0), 1 - exp(-1.0 / 5), 1 - exp(-1.0 / 15) };
	for (int i = 0; i < 3; i++)
		cr_assert(fabs(value(avenrun[i]) - want[i]) < 0.01, "average %d: %.4f, want %.4f", i, value(avenrun[i]),
			  want[i]);
}

Test(loadavg, a_load_decays_the_same_way_and_never_below_zero)
{
	uint64_t avenrun[3] = { 2 * LOADAVG_FIXED_1, 2 * LOADAVG_FIXED_1, 2 * LOADAVG_FIXED_1 };
	for (int i = 0; i < 12; i++)
		loadavg_step(avenrun, 0);
	cr_assert(fabs(value(avenrun[0]) - 2 * exp(-1.0)) < 0.01, "%.4f", value(avenrun[0]));
	for (int i = 0; i < 2000; i++)
		loadavg_step(avenrun, 0);
	cr_assert_eq(avenrun[0], 0);
}

Test(loadavg, the_text_is_the_kernels_shape)
{
	const uint64_t avenrun[3] = { LOADAVG_FIXED_1, LOADAVG_FIXED_1 / 2, 0 };
	GString *s = loadavg_render(avenrun, 2, 17, "4242");
	cr_assert_str_eq(s->str, "1.00 0.50 0.00 2/17 4242\n");
	g_string_free(s, TRUE);
}

/* A group's averages start from what runs in it at its first read; the
 * thread that reads is not counted (it waits for the answer; here it runs,
 * reading its own state). */
Test(loadavg, the_first_read_does_not_count_the_reader_as_running)
{
	const pid_t self = (pid_t)syscall(SYS_gettid);
	g_autofree char *dir = g_dir_make_tmp("cgprocfs-load-XXXXXX", NULL);
	g_autofree char *tasks = g_build_filename(dir, "tasks", NULL);
	g_autofree char *text = g_strdup_printf("%d\n", (int)self);
	cr_assert(g_file_set_contents(tasks, text, -1, NULL));
	const struct cgroup_hierarchy h = { .version = CGROUP_V1, .root_fd = open(dir, O_RDONLY | O_DIRECTORY),
					    .mount_root = "/" };
	int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY);
	const char *host = "0.50 0.40 0.30 2/300 4000\n";
	for (int asking = 0; asking < 2; asking++) {
		struct loadavgs *l = loadavgs_new(proc_fd, &h);
		g_autoptr(GString) out = NULL;
		caller_set_serving(asking ? self : 0);
		cr_assert_eq(loadavgs_render(l, "/", host, FALSE, &out), 0);
		cr_assert(g_str_has_prefix(out->str, asking ? "0.00 0.00 0.00 0/1 " : "1.00 1.00 1.00 1/1 "),
			  "%s the reader: %s", asking ? "not counting" : "counting", out->str);
		loadavgs_free(l);
	}
	caller_set_serving(0);
	close(proc_fd);
	close(h.root_fd);
	unlink(tasks);
	rmdir(dir);
}

/* A fixture v1 hierarchy in a temporary directory: its root's tasks and
 * those of n sub-cgroups list tid, each `times` times. */
static char *fixture_tree(unsigned n, unsigned times, pid_t tid)
{
	char *dir = g_dir_make_tmp("cgprocfs-load-XXXXXX", NULL);
	g_autoptr(GString) text = g_string_new(NULL);
	for (unsigned i = 0; i < times; i++)
		g_string_append_printf(text, "%d\n", (int)tid);
	for (unsigned i = 0; i <= n; i++) {
		g_autofree char *sub = i ? g_strdup_printf("%s/s%u", dir, i) : g_strdup(dir);
		g_autofree char *tasks = g_build_filename(sub, "tasks", NULL);
		cr_assert(i == 0 || mkdir(sub, 0755) == 0);
		cr_assert(g_file_set_contents(tasks, text->str, (gssize)text->len, NULL));
	}
	return dir;
}

static void remove_tree(const char *dir, unsigned n)
{
	for (unsigned i = n; i > 0; i--) {
		g_autofree char *sub = g_strdup_printf("%s/s%u", dir, i);
		g_autofree char *tasks = g_build_filename(sub, "tasks", NULL);
		unlink(tasks);
		rmdir(sub);
	}
	g_autofree char *tasks = g_build_filename(dir, "tasks", NULL);
	unlink(tasks);
	rmdir(dir);
}

/* The total (running/TOTAL) of the first read of the fixture's root. */
static unsigned total_of(const char *dir)
{
	const struct cgroup_hierarchy h = { .version = CGROUP_V1, .root_fd = open(dir, O_RDONLY | O_DIRECTORY),
					    .mount_root = "/" };
	int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY);
	struct loadavgs *l = loadavgs_new(proc_fd, &h);
	g_autoptr(GString) out = NULL;
	cr_assert_eq(loadavgs_render(l, "/", "0.50 0.40 0.30 2/300 4000\n", FALSE, &out), 0);
	loadavgs_free(l);
	close(proc_fd);
	close(h.root_fd);
	unsigned running, total;
	cr_assert_eq(sscanf(out->str, "%*s %*s %*s %u/%u", &running, &total), 2, "%s", out->str);
	return total;
}

/* A tenant sizes its subtree: a sample meets at most so many cgroups
 * (issue 54: 3,000 sub-cgroups took 164 ms under the daemon-wide lock). */
Test(loadavg, a_sample_walks_at_most_the_cap_of_cgroups)
{
	const unsigned n = LOADAVG_WALK_CGROUPS_MAX + 8; /* and the root */
	g_autofree char *dir = fixture_tree(n, 1, (pid_t)syscall(SYS_gettid));
	unsigned total = total_of(dir);
	remove_tree(dir, n);
	cr_assert_eq(total, LOADAVG_WALK_CGROUPS_MAX, "the walk counted the threads of %u cgroups of %u", total, n + 1);
}

/* ... and at most so many thread ids, however few cgroups list them. */
Test(loadavg, a_sample_reads_at_most_the_cap_of_threads)
{
	const unsigned times = LOADAVG_WALK_THREADS_MAX / 2 + 8; /* in the root and one sub-cgroup */
	g_autofree char *dir = fixture_tree(1, times, (pid_t)syscall(SYS_gettid));
	unsigned total = total_of(dir);
	remove_tree(dir, 1);
	cr_assert_eq(total, LOADAVG_WALK_THREADS_MAX, "the walk counted %u thread ids of %u", total, 2 * times);
}

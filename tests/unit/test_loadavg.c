/* The load averages' arithmetic (fs/loadavg.h) against the continuous
 * exponentials the kernel's fixed-point constants stand for, and the
 * text's shape. */
#include "loadavg.h"

#include "caller.h"
#include "cgroup.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
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

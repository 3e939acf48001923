/* stat's CPU counters of a cgroup (fs/cpucounters.h): the spread of its
 * time over n lines, and counters that never go back for a reader when n
 * changes, when usage outruns elapsed time, or across a restart (the
 * offsets kept in a file). */
#include "cpucounters.h"

#include <criterion/criterion.h>
#include <glib/gstdio.h>
#include <unistd.h>

/* A reader of group with n CPUs, the cgroup's totals as given. */
struct reader {
	struct cpu_counters *c;
	unsigned n;
	cpu_ticks rows[9];
};

static void read_at(struct reader *r, unsigned n, uint64_t user, uint64_t system, uint64_t elapsed)
{
	cr_assert_leq(n, 8);
	cpu_counters_follow(r->c, "/ctr", 100, user, system, elapsed, n, NULL, r->rows);
	r->n = n;
}

/* Reads again, and checks that no counter of a line both reads have
 * went back. */
static void read_on(struct reader *r, unsigned n, uint64_t user, uint64_t system, uint64_t elapsed)
{
	cpu_ticks was[9];
	unsigned had = r->n;
	memcpy(was, r->rows, sizeof(was));
	read_at(r, n, user, system, elapsed);
	for (unsigned row = 0; row <= MIN(had, n); row++)
		for (int f = 0; f < CPU_TICKS_FIELDS; f++)
			cr_assert_geq(r->rows[row].f[f], was[row].f[f], "row %u field %d went back from %lu to %lu", row,
				      f, (unsigned long)was[row].f[f], (unsigned long)r->rows[row].f[f]);
}

#define assert_row(r, row, u, s, i)                                                                    \
	cr_assert((r)->rows[row].f[CPU_TICKS_USER] == (u) && (r)->rows[row].f[CPU_TICKS_SYSTEM] == (s) && \
			  (r)->rows[row].f[CPU_TICKS_IDLE] == (i),                                            \
		  "row %d: %lu %lu %lu, not %lu %lu %lu", row, (unsigned long)(r)->rows[row].f[0],           \
		  (unsigned long)(r)->rows[row].f[1], (unsigned long)(r)->rows[row].f[2], (unsigned long)(u), \
		  (unsigned long)(s), (unsigned long)(i))

Test(cpucounters, spread_sums_to_the_totals_and_idles_the_rest)
{
	cpu_ticks rows[4];
	cpu_ticks_spread(301, 100, 1000, 3, rows);
	cr_assert_eq(rows[1].f[CPU_TICKS_USER], 101, "the first lines take the remainder");
	cr_assert_eq(rows[3].f[CPU_TICKS_USER], 100);
	cr_assert_eq(rows[0].f[CPU_TICKS_USER], 301);
	cr_assert_eq(rows[0].f[CPU_TICKS_SYSTEM], 100);
	cr_assert_eq(rows[2].f[CPU_TICKS_IDLE], 1000 - 100 - 33);
	cr_assert_eq(rows[0].f[CPU_TICKS_IDLE], rows[1].f[CPU_TICKS_IDLE] + rows[2].f[CPU_TICKS_IDLE] +
							rows[3].f[CPU_TICKS_IDLE]);
}

Test(cpucounters, with_n_unchanged_the_counters_are_the_spread)
{
	struct reader r = { cpu_counters_new(NULL), 0, { { { 0 } } } };
	read_at(&r, 2, 100, 20, 1000);
	assert_row(&r, 0, 100, 20, 1880);
	assert_row(&r, 1, 50, 10, 940);
	read_on(&r, 2, 300, 20, 2000);
	assert_row(&r, 0, 300, 20, 3680);
	assert_row(&r, 2, 150, 10, 1840);
	cpu_counters_free(r.c);
}

Test(cpucounters, fewer_cpus_go_on_from_where_they_were)
{
	struct reader r = { cpu_counters_new(NULL), 0, { { { 0 } } } };
	read_at(&r, 2, 100, 0, 1000);
	assert_row(&r, 0, 100, 0, 1900);
	/* the quota falls to one CPU: idle of the spread falls from 2 x 1000
	 * to 1000, user of cpu0 jumps from 50 to 100 */
	read_on(&r, 1, 100, 0, 1000);
	assert_row(&r, 0, 100, 0, 1900);
	assert_row(&r, 1, 50, 0, 950);
	/* 100 ticks later, 50 of them used: exactly that much more */
	read_on(&r, 1, 150, 0, 1100);
	assert_row(&r, 0, 150, 0, 1950);
	assert_row(&r, 1, 100, 0, 1000);
	cpu_counters_free(r.c);
}

Test(cpucounters, more_cpus_go_on_and_a_new_line_starts_at_its_spread)
{
	struct reader r = { cpu_counters_new(NULL), 0, { { { 0 } } } };
	read_at(&r, 1, 400, 0, 1000);
	read_on(&r, 3, 400, 0, 1000);
	assert_row(&r, 0, 400, 0, 600);
	assert_row(&r, 1, 400, 0, 600);
	cr_assert_eq(r.rows[3].f[CPU_TICKS_USER], 133, "a new line: its spread");
	read_on(&r, 3, 430, 0, 1010);
	assert_row(&r, 0, 430, 0, 600 + 30 - 30);
	cpu_counters_free(r.c);
}

Test(cpucounters, usage_that_outruns_elapsed_time_holds_idle_where_it_was)
{
	struct reader r = { cpu_counters_new(NULL), 0, { { { 0 } } } };
	read_at(&r, 1, 100, 0, 1000);
	read_on(&r, 1, 150, 0, 1010); /* 50 ticks used in 10: a burst */
	assert_row(&r, 0, 150, 0, 900);
	read_on(&r, 1, 150, 0, 1020);
	assert_row(&r, 0, 150, 0, 910);
	cpu_counters_free(r.c);
}

Test(cpucounters, a_cgroup_made_again_starts_over)
{
	struct cpu_counters *c = cpu_counters_new(NULL);
	cpu_ticks a[3], b[2];
	cpu_counters_follow(c, "/ctr", 100, 100, 0, 1000, 2, NULL, a);
	cpu_counters_follow(c, "/ctr", 200, 10, 0, 50, 1, NULL, b);
	cr_assert_eq(b[0].f[CPU_TICKS_USER], 10);
	cr_assert_eq(b[0].f[CPU_TICKS_IDLE], 40);
	cpu_counters_free(c);
}

static char *temp_path(void)
{
	g_autofree char *dir = g_dir_make_tmp("cpucounters-XXXXXX", NULL);
	cr_assert_not_null(dir);
	return g_build_filename(dir, "cputime", NULL);
}

/* Where the counters of path log the rows given since its last write. */
static char *log_of(const char *path)
{
	return g_strconcat(path, ".log", NULL);
}

static void remove_temp(const char *path)
{
	g_autofree char *log = log_of(path);
	g_unlink(log);
	g_unlink(path);
	g_autofree char *dir = g_path_get_dirname(path);
	g_rmdir(dir);
}

Test(cpucounters, a_restart_goes_on_from_the_offsets_kept)
{
	g_autofree char *path = temp_path();
	struct reader r = { cpu_counters_new(path), 0, { { { 0 } } } };
	read_at(&r, 2, 100, 0, 1000);
	read_on(&r, 1, 100, 0, 1000);
	cpu_ticks before[9];
	memcpy(before, r.rows, sizeof(before));
	cpu_counters_free(r.c);

	r.c = cpu_counters_new(path); /* the daemon that took over */
	read_on(&r, 1, 100, 0, 1000);
	cr_assert_arr_eq(r.rows, before, 2 * sizeof(cpu_ticks), "the same counters as before the restart");
	/* n changed while no daemon ran */
	read_on(&r, 2, 105, 0, 1010);
	cpu_counters_free(r.c);
	remove_temp(path);
}

/* A fresh boot: the directory of the file (the control socket's, under
 * /run) does not exist yet. */
Test(cpucounters, the_file_s_missing_directory_is_made)
{
	g_autofree char *top = g_dir_make_tmp("cpucounters-XXXXXX", NULL);
	g_autofree char *path = g_build_filename(top, "run", "cputime", NULL);
	struct reader r = { cpu_counters_new(path), 0, { { { 0 } } } };
	read_at(&r, 2, 100, 0, 1000);
	g_autofree char *log = log_of(path);
	cr_assert(g_file_test(log, G_FILE_TEST_EXISTS), "the rows given go to %s", log);
	GStatBuf st;
	g_autofree char *dir = g_path_get_dirname(path);
	cr_assert_eq(g_stat(dir, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0700, "the directory's mode");
	cpu_counters_free(r.c);
	remove_temp(path);
	g_rmdir(top);
}

Test(cpucounters, lines_of_the_file_not_understood_are_skipped)
{
	g_autofree char *path = temp_path();
	cr_assert(g_file_set_contents(path,
				      "garbage\n"
				      "100 1 0 0 500 0 0 500 /ctr\n"
				      "100 2 1 2\n",
				      -1, NULL));
	struct cpu_counters *c = cpu_counters_new(path);
	cpu_ticks rows[2];
	cpu_counters_follow(c, "/ctr", 100, 0, 0, 10, 1, NULL, rows);
	cr_assert_eq(rows[0].f[CPU_TICKS_IDLE], 510, "the line understood is used");
	cpu_counters_free(c);
	remove_temp(path);
}

static gboolean gone_if_ctr(const char *group, gint64 epoch, void *data)
{
	return strcmp(group, "/ctr") == 0;
}

Test(cpucounters, groups_gone_are_forgotten)
{
	g_autofree char *path = temp_path();
	struct cpu_counters *c = cpu_counters_new(path);
	cpu_ticks rows[3];
	cpu_counters_follow(c, "/ctr", 100, 0, 0, 10, 1, NULL, rows);
	cpu_counters_follow(c, "/other group", 100, 0, 0, 10, 1, NULL, rows);
	cpu_counters_follow(c, "/other group", 100, 0, 0, 10, 2, NULL, rows);
	cpu_counters_sweep(c, gone_if_ctr, NULL);
	g_autofree char *text = NULL;
	cr_assert(g_file_get_contents(path, &text, NULL, NULL));
	cr_assert_null(strstr(text, "/ctr"), "%s", text);
	cr_assert_not_null(strstr(text, " /other group\n"), "%s", text);
	cpu_counters_free(c);
	remove_temp(path);
}

Test(cpucounters, a_new_group_is_kept_by_the_flush_a_new_n_at_once)
{
	g_autofree char *path = temp_path();
	struct cpu_counters *c = cpu_counters_new(path);
	cpu_ticks rows[3];
	cpu_counters_follow(c, "/ctr", 100, 0, 0, 10, 1, NULL, rows);
	cr_assert_not(g_file_test(path, G_FILE_TEST_EXISTS), "written on a reader's request");
	cpu_counters_flush(c);
	g_autofree char *flushed = NULL;
	cr_assert(g_file_get_contents(path, &flushed, NULL, NULL));
	cr_assert(g_str_has_prefix(flushed, "100 1 "), "%s", flushed);
	cpu_counters_follow(c, "/ctr", 100, 0, 0, 20, 2, NULL, rows);
	g_autofree char *now = NULL;
	cr_assert(g_file_get_contents(path, &now, NULL, NULL));
	cr_assert(g_str_has_prefix(now, "100 2 "), "a new n is written before the reader gets it: %s", now);
	cpu_counters_free(c);
	remove_temp(path);
}

Test(cpucounters, a_daemon_that_takes_over_gives_no_less_than_the_last_rows_kept)
{
	g_autofree char *path = temp_path();
	struct reader r = { cpu_counters_new(path), 0, { { { 0 } } } };
	read_at(&r, 1, 100, 0, 1000);
	cpu_counters_flush(r.c); /* as at a handover */
	cpu_counters_free(r.c);

	r.c = cpu_counters_new(path);
	read_on(&r, 1, 150, 0, 1010); /* a burst, right after the takeover */
	assert_row(&r, 0, 150, 0, 900);
	cpu_counters_flush(r.c);
	cpu_counters_free(r.c);

	r.c = cpu_counters_new(path);
	read_on(&r, 2, 170, 0, 1012); /* and one as n changes */
	cpu_counters_free(r.c);
	remove_temp(path);
}

Test(cpucounters, a_daemon_after_a_sigkill_gives_no_less_than_the_rows_given_since_the_last_write)
{
	g_autofree char *path = temp_path();
	struct reader r = { cpu_counters_new(path), 0, { { { 0 } } } };
	read_at(&r, 1, 100, 0, 1000);
	cpu_counters_flush(r.c); /* the background thread's last write */
	read_on(&r, 1, 100, 0, 1050);
	assert_row(&r, 0, 100, 0, 950);
	cpu_counters_free(r.c); /* SIGKILLed: nothing more written */

	r.c = cpu_counters_new(path);
	read_on(&r, 1, 150, 0, 1060); /* a burst across the restart: 910 would go back */
	assert_row(&r, 0, 150, 0, 950);
	cpu_counters_free(r.c);
	remove_temp(path);
}

Test(cpucounters, the_log_is_emptied_once_the_file_is_written_and_its_older_n_gives_way)
{
	g_autofree char *path = temp_path();
	g_autofree char *log = log_of(path);
	struct cpu_counters *c = cpu_counters_new(path);
	cpu_ticks rows[3];
	cpu_counters_follow(c, "/ctr", 100, 0, 0, 10, 1, NULL, rows);
	cpu_counters_follow(c, "/ctr", 100, 0, 0, 20, 1, NULL, rows);
	g_autofree char *logged = NULL;
	cr_assert(g_file_get_contents(log, &logged, NULL, NULL));
	cr_assert(g_str_has_prefix(logged, "100 1 ") && strstr(logged, "\n=1 0 0 20 0 0 20\n"), "%s", logged);
	cpu_counters_flush(c);
	g_autofree char *emptied = NULL;
	cr_assert(g_file_get_contents(log, &emptied, NULL, NULL));
	cr_assert_str_empty(emptied);
	/* A kill between the file's write and the log's emptying: the log's
	 * lines are older. Its n (1) is not the file's (2): dropped. */
	cpu_counters_follow(c, "/ctr", 100, 0, 0, 30, 2, NULL, rows);
	cpu_counters_free(c);
	cr_assert(g_file_set_contents(log, logged, -1, NULL));
	c = cpu_counters_new(path);
	cpu_counters_follow(c, "/ctr", 100, 0, 0, 40, 2, NULL, rows);
	/* from the file's offsets: 30 given at 30 for both CPUs, 20 more */
	cr_assert_eq(rows[0].f[CPU_TICKS_IDLE], 50, "cpu idle %lu", (unsigned long)rows[0].f[CPU_TICKS_IDLE]);
	cpu_counters_free(c);
	remove_temp(path);
}

Test(cpucounters, a_log_past_a_mebibyte_has_the_file_written_and_the_log_emptied)
{
	g_autofree char *path = temp_path();
	g_autofree char *log = log_of(path);
	struct cpu_counters *c = cpu_counters_new(path);
	cpu_ticks rows[2];
	GStatBuf st = { 0 };
	off_t largest = 0;
	for (uint64_t t = 1; t <= 50000; t++) { /* about 2 MiB logged, no flush: a busy group, --no-loadavg */
		cpu_counters_follow(c, "/ctr", 100, t, 0, 2 * t, 1, NULL, rows);
		cr_assert_eq(g_stat(log, &st), 0);
		largest = MAX(largest, st.st_size);
	}
	cr_assert_leq(largest, (1 << 20) + 128, "the log grew to %ld bytes", (long)largest);
	cr_assert(g_file_test(path, G_FILE_TEST_EXISTS), "the file was never written");
	cpu_counters_free(c);
	remove_temp(path);
}

/* The lines are host CPUs (cpuN of /proc/stat): when the CPUs change, a
 * CPU's line goes on from its own, wherever it stands now. */
Test(cpucounters, a_cpus_line_goes_on_from_its_own_when_the_cpus_change)
{
	g_autofree char *dir = g_dir_make_tmp("cpucounters-XXXXXX", NULL);
	g_autofree char *path = g_build_filename(dir, "counters", NULL);
	struct cpu_counters *c = cpu_counters_new(path);
	cpu_ticks one[2], two[3];
	const unsigned cpu1[] = { 1 }, both[] = { 0, 1 };
	cpu_counters_follow(c, "/ctr", 100, 500, 0, 1000, 1, cpu1, one);
	cr_assert_eq(one[1].f[CPU_TICKS_USER], 500, "cpu1 alone has it all");
	cpu_counters_follow(c, "/ctr", 100, 500, 0, 1000, 2, both, two);
	cr_assert_geq(two[2].f[CPU_TICKS_USER], 500, "cpu1's line, second now, went back to %lu",
		      (unsigned long)two[2].f[CPU_TICKS_USER]);
	cr_assert_geq(two[0].f[CPU_TICKS_USER], 500, "the cpu line");
	cr_assert_eq(two[1].f[CPU_TICKS_USER], 250, "cpu0, new, at its spread");
	/* and so for a daemon after this one */
	cpu_counters_follow(c, "/ctr", 100, 600, 0, 1100, 1, cpu1, one);
	uint64_t cpu1_user = one[1].f[CPU_TICKS_USER];
	cpu_counters_flush(c);
	cpu_counters_free(c);
	c = cpu_counters_new(path);
	cpu_counters_follow(c, "/ctr", 100, 600, 0, 1100, 2, both, two);
	cr_assert_geq(two[2].f[CPU_TICKS_USER], cpu1_user, "cpu1's line after a restart went back to %lu from %lu",
		      (unsigned long)two[2].f[CPU_TICKS_USER], (unsigned long)cpu1_user);
	cpu_counters_unkeep(c);
	cpu_counters_free(c);
	g_rmdir(dir);
}

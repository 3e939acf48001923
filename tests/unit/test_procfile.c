#include "procfile.h"

#include "cleanup.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

Test(procfile, parses_state_and_start_time)
{
	const char *text = "42 (sleep) S 1 42 42 0 -1 4194560 101 0 0 0 0 0 0 0 20 0 1 0 987654 "
			   "2000000 200 18446744073709551615 94000000000000 94000000100000 140730000000000 0 0 0 "
			   "0 0 0 0 0 0 0 17 1 0 0 0 0 0 94000000200000 94000000300000 94000000400000 "
			   "140730000001000 140730000002000 140730000002000 140730000003000 0\n";
	struct pid_stat st;
	cr_assert_eq(procfile_parse_pid_stat(text, strlen(text), &st), 0);
	cr_assert_eq(st.state, 'S');
	cr_assert_eq(st.start_time, 987654);
	cr_assert_eq(st.minflt, 101);
	cr_assert_eq(st.vsize, 2000000);
	cr_assert_eq(st.rss, 200);
	cr_assert_eq(st.start_code, 94000000000000);
	cr_assert_eq(st.end_code, 94000000100000);
	cr_assert_eq(st.start_stack, 140730000000000);
}

Test(procfile, comm_with_spaces_and_parentheses)
{
	const char *text = "7 (a) b) (c ) Z 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 55 0 0 18446744073709551615 0 0 0\n";
	struct pid_stat st;
	cr_assert_eq(procfile_parse_pid_stat(text, strlen(text), &st), 0);
	cr_assert_eq(st.state, 'Z');
	cr_assert_eq(st.start_time, 55);
}

Test(procfile, truncated_or_garbage_is_einval)
{
	struct pid_stat st = { .state = 'q', .start_time = 1 };
	const char *bad[] = { "", "42 (x", "42 (x) S 1 2 3", "no parens at all",
			      "1 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 notanumber 0",
			      "1 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 55 0 0 0 1 2" };
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++)
		cr_assert_eq(procfile_parse_pid_stat(bad[i], strlen(bad[i]), &st), -EINVAL, "%s", bad[i]);
	cr_assert_eq(st.state, 'q', "untouched on failure");
	cr_assert_eq(st.start_time, 1);
}

Test(procfile, reads_this_process_from_the_real_procfs)
{
	_cleanup_close_ int proc = open("/proc", O_RDONLY | O_DIRECTORY);
	struct pid_stat st;
	cr_assert_eq(procfile_pid_stat(proc, getpid(), &st), 0);
	cr_assert_eq(st.state, 'R');
	cr_assert_gt(st.start_time, 0);
}

Test(procfile, missing_pid_is_enoent)
{
	_cleanup_close_ int proc = open("/proc", O_RDONLY | O_DIRECTORY);
	struct pid_stat st;
	/* above the largest pid_max the kernel allows */
	cr_assert_eq(procfile_pid_stat(proc, 4194304 + 1, &st), -ENOENT);
}

Test(procfile, reads_files_larger_than_one_chunk)
{
	char path[] = "/tmp/cgprocfs-procfile-XXXXXX";
	_cleanup_close_ int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	g_autofree char *big = g_malloc(10000);
	for (int i = 0; i < 10000; i++)
		big[i] = (char)('a' + i % 26);
	cr_assert_eq(write(fd, big, 10000), 10000);
	g_autoptr(GBytes) got = NULL;
	cr_assert_eq(procfile_read_at(AT_FDCWD, path, &got), 0);
	unlink(path);
	cr_assert_eq(g_bytes_get_size(got), 10000);
	cr_assert(memcmp(g_bytes_get_data(got, NULL), big, 10000) == 0);
}

Test(procfile, an_open_out_of_fds_takes_the_reserves_slot_then_fails_with_emfile)
{
	int first = procfile_openat(AT_FDCWD, "/proc/self/stat", O_RDONLY); /* takes the reserve */
	cr_assert_geq(first, 0);
	close(first);
	struct rlimit lim = { 64, 64 };
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &lim), 0);
	GArray *held = g_array_new(FALSE, FALSE, sizeof(int));
	for (int fd; (fd = dup(0)) >= 0;)
		g_array_append_val(held, fd);
	cr_assert_eq(errno, EMFILE);
	int fd = procfile_openat(AT_FDCWD, "/proc/self/stat", O_RDONLY);
	cr_assert_geq(fd, 0, "the reserve's slot: %s", g_strerror(-fd));
	close(fd);
	/* The reserve could not be taken again (its slot was just used and
	 * freed: taken back now) or not; with every slot held, fail. */
	int again = dup(0);
	if (again >= 0)
		g_array_append_val(held, again);
	gint64 started = g_get_monotonic_time();
	cr_assert_eq(procfile_openat(AT_FDCWD, "/proc/self/stat", O_RDONLY), -EMFILE);
	cr_assert_geq(g_get_monotonic_time() - started, G_USEC_PER_SEC / 2, "it waited for a free fd first");
	for (guint i = 0; i < held->len; i++)
		close(g_array_index(held, int, i));
	g_array_unref(held);
}

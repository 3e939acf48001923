/* The topmost mounts at a few paths, found in one pass over a mountinfo
 * text (daemon/mountinfo.c), as the whole table parsed finds them. */
#include "mountinfo.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

static const char *const paths[] = { "/proc/meminfo", "/proc" };

Test(mountinfo, the_topmost_mount_at_each_path_and_none_where_nothing_is)
{
	const char *text =
		"22 1 0:21 / /proc rw,nosuid shared:5 - proc proc rw\n"
		"30 22 0:40 /proc/meminfo /proc/meminfo rw - fuse.cgprocfs cgprocfs rw,user_id=0\n"
		"31 22 0:41 / /proc/meminfo\\040x rw - tmpfs none rw\n"      /* another name, escaped */
		"32 22 0:42 / /proc/meminfox rw master:1 shared:2 - ext4 /dev/sda rw\n"
		"33 22 0:43 / /proc/meminfo rw - proc proc rw\n"              /* on top of the view */
		"garbage\n"
		"34 1 0:44 / /proc ro - fuse.cgprocfs cgprocfs rw";          /* the last line, no newline */
	char *types[2];
	mountinfo_tops_in(text, paths, 2, types);
	cr_assert_str_eq(types[0], "proc", "the topmost at /proc/meminfo");
	cr_assert_str_eq(types[1], "fuse.cgprocfs", "the topmost at /proc");
	g_free(types[0]);
	g_free(types[1]);
	mountinfo_tops_in("22 1 0:21 / /sys rw - sysfs sysfs rw\n", paths, 2, types);
	cr_assert_null(types[0]);
	cr_assert_null(types[1]);
}

/* This process's own table, read a line at a time, agrees with the whole
 * table parsed. */
Test(mountinfo, a_table_read_a_line_at_a_time_agrees_with_the_whole_table)
{
	int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(proc_fd, 0);
	const char *const mine[] = { "/proc", "/", "/sys", "/dev" };
	char *types[4];
	cr_assert_eq(mountinfo_tops_of(proc_fd, getpid(), mine, 4, types), 0);
	g_autoptr(GPtrArray) all = mountinfo_of(proc_fd, getpid());
	cr_assert_not_null(all);
	for (int i = 0; i < 4; i++) {
		const struct mount_entry *e = mountinfo_top(all, mine[i]);
		cr_assert_str_eq(types[i] ? types[i] : "(none)", e ? e->fstype : "(none)", "at %s", mine[i]);
		g_free(types[i]);
	}
	cr_assert_eq(mountinfo_tops_of(proc_fd, 0x7ffffff0, mine, 4, types), -ENOENT, "no such process");
	close(proc_fd);
}

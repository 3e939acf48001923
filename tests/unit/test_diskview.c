/* /proc/diskstats of a cgroup (fs/diskview.h): the cgroup's lines for its
 * devices, partitions with their disks, other devices kept (v1) or 0 (v2),
 * the host's field count, garbage refused. */
#include "diskview.h"

#include <criterion/criterion.h>
#include <errno.h>

static const char *host = "   8       0 sda 100 1 2000 10 200 2 4000 20 0 30 30 5 0 80 1 7 2\n"
			  "   8       1 sda1 90 1 1800 9 190 2 3800 19 0 29 29 5 0 80 1 0 0\n"
			  "   8      16 sdb 3 0 24 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n"
			  " 259       0 nvme0n1 9 9 9 9 9 9 9 9 0 9 9 9 9 9 9 9 9\n"
			  " 259       1 nvme0n1p1 8 8 8 8 8 8 8 8 0 8 8 8 8 8 8 8 8\n"
			  "   7       1 loop1 1 0 8 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
			  "   7      10 loop10 2 0 16 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";

static GArray *devices(const struct cgroup_io_device *d, size_t n)
{
	GArray *a = g_array_new(FALSE, TRUE, sizeof(struct cgroup_io_device));
	g_array_append_vals(a, d, (guint)n);
	return a;
}

static char *render(const char *text, GArray *devs, enum diskview_others others)
{
	GString *out = NULL;
	cr_assert_eq(diskview_render(text, devs, others, &out), 0);
	return g_string_free(out, FALSE);
}

static const struct cgroup_io_device sda = { 8, 0, { 3, 64, 1 }, { 4096, 8388608, 1048576 } };
static const struct cgroup_io_device loop1 = { 7, 1, { 4, 0, 0 }, { 2048, 0, 0 } };

Test(diskview, v2_shows_the_cgroups_counts_and_0_for_the_disks_it_did_not_use)
{
	const struct cgroup_io_device used[] = { sda, loop1, { 253, 9, { 1, 1, 1 }, { 512, 512, 512 } } };
	g_autoptr(GArray) devs = devices(used, G_N_ELEMENTS(used));
	g_autofree char *out = render(host, devs, DISKVIEW_OTHERS_ZERO);
	cr_assert_str_eq(out, "   8       0 sda 3 0 8 0 64 0 16384 0 0 0 0 1 0 2048 0 0 0\n"
			      "   8      16 sdb 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
			      " 259       0 nvme0n1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
			      "   7       1 loop1 4 0 4 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
			      "   7      10 loop10 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
			 "sectors are bytes / 512; partitions left out; 253:9 has no name:\n%s", out);
	g_autoptr(GArray) none = devices(NULL, 0);
	g_autofree char *idle = render(host, none, DISKVIEW_OTHERS_ZERO);
	cr_assert(g_str_has_prefix(idle, "   8       0 sda 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"),
		  "a cgroup that did no I/O yet: every disk, at 0 (never an empty file): %s", idle);
}

Test(diskview, v1_keeps_the_hosts_lines_of_devices_it_does_not_count_and_their_partitions)
{
	g_autoptr(GArray) devs = devices(&sda, 1);
	g_autofree char *out = render(host, devs, DISKVIEW_OTHERS_HOST);
	g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
	cr_assert_eq(g_strv_length(lines), 7, "%s", out);
	cr_assert_str_eq(lines[0], "   8       0 sda 3 0 8 0 64 0 16384 0 0 0 0 1 0 2048 0 0 0");
	cr_assert_str_eq(lines[1], "   8      16 sdb 3 0 24 0 0 0 0 0 0 1 1 0 0 0 0 0 0", "sda1 goes with sda");
	cr_assert_str_eq(lines[2], " 259       0 nvme0n1 9 9 9 9 9 9 9 9 0 9 9 9 9 9 9 9 9", "as it is, byte for byte");
	cr_assert_str_eq(lines[3], " 259       1 nvme0n1p1 8 8 8 8 8 8 8 8 0 8 8 8 8 8 8 8 8",
			 "a partition with its disk: the host's");
	cr_assert_str_eq(lines[4], "   7       1 loop1 1 0 8 0 0 0 0 0 0 0 0 0 0 0 0 0 0");
	cr_assert_str_eq(lines[5], "   7      10 loop10 2 0 16 0 0 0 0 0 0 0 0 0 0 0 0 0 0",
			 "loop10 is no partition of loop1 (that would be loop1p0)");
}

Test(diskview, an_older_kernels_line_keeps_its_field_count)
{
	g_autoptr(GArray) devs = devices(&sda, 1);
	g_autofree char *out = render("   8       0 sda 100 1 2000 10 200 2 4000 20 0 30 30\n", devs, DISKVIEW_OTHERS_ZERO);
	cr_assert_str_eq(out, "   8       0 sda 3 0 8 0 64 0 16384 0 0 0 0\n", "11 fields, no discards: %s", out);
}

Test(diskview, garbage_is_einval)
{
	g_autoptr(GArray) devs = devices(&sda, 1);
	GString *out = NULL;
	cr_assert_eq(diskview_render("   8       0 sda 1 2 3\n", devs, DISKVIEW_OTHERS_ZERO, &out), -EINVAL, "too few fields");
	cr_assert_eq(diskview_render("   8       x sda 1 2 3 4 5 6 7 8 9 10 11\n", devs, DISKVIEW_OTHERS_ZERO, &out), -EINVAL);
	cr_assert_eq(diskview_render("   8       0 sda 1 2 3 4 5 6 7 8 9 10 -11\n", devs, DISKVIEW_OTHERS_ZERO, &out), -EINVAL);
	cr_assert_null(out);
	g_autofree char *empty = render("", devs, DISKVIEW_OTHERS_ZERO);
	cr_assert_str_eq(empty, "", "no disks: an empty file, as the host's");
}

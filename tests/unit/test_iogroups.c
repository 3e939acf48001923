/* The I/O view's state (fs/iogroups) on a fake procfs and cgroup trees in
 * a temporary directory: which group a caller is in, its diskstats from
 * v2 io.stat and v1 throttle files, its pressure files; a garbled,
 * missing or vanished cgroup file gives the host's file (one report for
 * a garbled one). */
#include "iogroups.h"

#include "procfile.h"
#include "scope.h"
#include "tmptree.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

static int proc_fd = -1, v2_fd = -1, blkio_fd = -1;
static GPtrArray *reports;
static GPtrArray *scopes; /* every make()'s, freed at the end */

static const char host_diskstats[] =
	"   7       1 loop1 10 0 80 5 20 0 160 9 0 14 14 0 0 0 0 0 0\n"
	"   8       0 sda 900 10 72000 300 800 20 64000 400 0 700 700 5 0 40 1 0 0\n"
	"   8       1 sda1 800 10 64000 250 700 20 56000 350 0 600 600 5 0 40 1 0 0\n";
static const char host_cpu_pressure[] = "some avg10=1.00 avg60=2.00 avg300=3.00 total=123456\n"
					"full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
static const char box_cpu_pressure[] = "some avg10=9.00 avg60=8.00 avg300=7.00 total=42\n"
				       "full avg10=0.50 avg60=0.40 avg300=0.30 total=21\n";

static void setup(void)
{
	tmptree_make();
	proc_fd = tmptree_open_dir("proc");
	v2_fd = tmptree_open_dir("v2");
	blkio_fd = tmptree_open_dir("blkio");
	reports = g_ptr_array_new_with_free_func(g_free);
	scopes = g_ptr_array_new_with_free_func((GDestroyNotify)scope_free);
	tmptree_put("proc/diskstats", host_diskstats);
	tmptree_put("proc/pressure/cpu", host_cpu_pressure);
	tmptree_put("proc/pressure/memory", host_cpu_pressure);
	tmptree_put("proc/pressure/io", host_cpu_pressure);
	tmptree_put("proc/100/cgroup", "0::/box\n");
	tmptree_put("proc/200/cgroup", "0::/\n");
	tmptree_put("proc/300/cgroup", "0::/garbled\n");
	tmptree_put("proc/400/cgroup", "0::/plain\n");
	tmptree_put("proc/500/cgroup", "0::/gone\n");
	/* 253:0 is not in the host's diskstats (a device since removed) */
	tmptree_put("v2/box/io.stat", "8:0 rbytes=4096 wbytes=8388608 rios=1 wios=64 dbytes=0 dios=0\n"
			      "253:0 rbytes=512 wbytes=512 rios=1 wios=1 dbytes=0 dios=0\n");
	tmptree_put("v2/box/cpu.pressure", box_cpu_pressure);
	tmptree_put("v2/garbled/io.stat", "8:0 rbytes=lots\n");
	tmptree_put("v2/garbled/cpu.pressure", "nothing to see\n");
	tmptree_put("v2/plain/cgroup.procs", ""); /* no I/O accounting, no PSI */
	/* v1: the top lists 7:1 (it had a throttle rule; no I/O since) but
	 * not 8:0 */
	tmptree_put("blkio/blkio.throttle.io_serviced_recursive",
	    "7:1 Read 0\n7:1 Write 0\n7:1 Sync 0\n7:1 Async 0\n7:1 Discard 0\n7:1 Total 0\nTotal 0\n");
	tmptree_put("blkio/blkio.throttle.io_service_bytes_recursive",
	    "7:1 Read 0\n7:1 Write 0\n7:1 Sync 0\n7:1 Async 0\n7:1 Discard 0\n7:1 Total 0\nTotal 0\n");
	tmptree_put("blkio/box/blkio.throttle.io_serviced_recursive",
	    "7:1 Read 1\n7:1 Write 2\n7:1 Sync 3\n7:1 Async 0\n7:1 Discard 0\n7:1 Total 3\n"
	    "8:0 Read 0\n8:0 Write 0\n8:0 Sync 0\n8:0 Async 0\n8:0 Discard 0\n8:0 Total 0\nTotal 3\n");
	tmptree_put("blkio/box/blkio.throttle.io_service_bytes_recursive",
	    "7:1 Read 4096\n7:1 Write 8192\n7:1 Sync 12288\n7:1 Async 0\n7:1 Discard 0\n7:1 Total 12288\n"
	    "8:0 Read 0\n8:0 Write 0\n8:0 Sync 0\n8:0 Async 0\n8:0 Discard 0\n8:0 Total 0\nTotal 12288\n");
	tmptree_put("blkio/idle/blkio.throttle.io_serviced_recursive", "Total 0\n");
	tmptree_put("blkio/idle/blkio.throttle.io_service_bytes_recursive", "Total 0\n");
}

static void teardown(void)
{
	close(proc_fd);
	close(v2_fd);
	close(blkio_fd);
	g_ptr_array_unref(reports);
	g_ptr_array_unref(scopes);
	tmptree_remove();
}

TestSuite(iogroups, .init = setup, .fini = teardown);

static void report(void *data, const char *file, int err)
{
	g_ptr_array_add(reports, g_strdup_printf("%s %d", file, err));
}

static struct iogroups *make(enum cgroup_version io)
{
	const struct cgroup_hierarchy disks = { io, io == CGROUP_V2 ? v2_fd : blkio_fd, "/" };
	const struct cgroup_hierarchy v2 = { CGROUP_V2, v2_fd, "/" };
	/* the caller's own cgroup, whatever it is: the I/O view's choice */
	const struct scope_config scfg = { proc_fd, -1, { .io = disks, .unified = v2 }, SCOPE_CALLER };
	struct scope *scope = scope_new(&scfg);
	g_ptr_array_add(scopes, scope);
	const struct iogroups_config cfg = {
		.proc_fd = proc_fd,
		.scope = scope,
		.io = disks,
		.pressure = v2,
		.report = report,
	};
	return iogroups_new(&cfg);
}

static char *text_of(GBytes *b)
{
	char *s = g_strndup(g_bytes_get_data(b, NULL), g_bytes_get_size(b));
	g_bytes_unref(b);
	return s;
}

/* A render's text, which is the host's file (path) as it is when the
 * render says so. */
static char *rendered(int r, GBytes *text, const char *path)
{
	cr_assert(r == 0 || r == SERVED_HOST, "render: %d", r);
	g_autoptr(GBytes) host = NULL;
	if (r == SERVED_HOST) {
		cr_assert_eq(procfile_read_at(proc_fd, path, &host), 0);
		cr_assert(g_bytes_equal(text, host), "SERVED_HOST, not the host's %s", path);
	}
	return text_of(text);
}

static char *diskstats(struct iogroups *g, pid_t tid)
{
	g_autofree char *group = NULL;
	cr_assert_eq(deciders_of(iogroups_disk_deciders(g), tid, FALSE, (gpointer *)&group), 0);
	GBytes *text = NULL;
	int r = iogroups_render_diskstats(g, group, &text);
	return rendered(r, text, "diskstats");
}

static char *pressure(struct iogroups *g, pid_t tid, const char *name)
{
	g_autofree char *group = NULL;
	cr_assert_eq(deciders_of(iogroups_pressure_deciders(g), tid, FALSE, (gpointer *)&group), 0);
	g_autofree char *path = g_strconcat("pressure/", name, NULL);
	GBytes *text = NULL;
	int r = iogroups_render_pressure(g, group, name, &text);
	return rendered(r, text, path);
}

Test(iogroups, v2_a_caller_sees_the_devices_its_cgroup_used_with_its_counts)
{
	struct iogroups *g = make(CGROUP_V2);
	g_autofree char *box = diskstats(g, 100);
	cr_assert_str_eq(box,
			 "   7       1 loop1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
			 "   8       0 sda 1 0 8 0 64 0 16384 0 0 0 0 0 0 0 0 0 0\n",
			 "sda's requests and sectors, loop1 unused, 253:0 has no name on the host: %s", box);
	g_autofree char *root = diskstats(g, 200);
	cr_assert_str_eq(root, host_diskstats, "the root cgroup: the host's, byte for byte");
	g_autofree char *plain = diskstats(g, 400);
	cr_assert_str_eq(plain, host_diskstats, "no io.stat: the host's");
	g_autofree char *gone = diskstats(g, 500);
	cr_assert_str_eq(gone, host_diskstats, "a vanished cgroup: the host's");
	g_autofree char *unknown = NULL;
	cr_assert_eq(deciders_of(iogroups_disk_deciders(g), 999, FALSE, (gpointer *)&unknown), -EIO,
		     "a caller whose cgroup cannot be told: an error, not the host's");
	cr_assert_eq(reports->len, 0, "%u reports", reports->len);
	iogroups_free(g);
}

Test(iogroups, v1_counted_devices_are_the_cgroups_the_others_the_hosts)
{
	struct iogroups *g = make(CGROUP_V1);
	tmptree_put("proc/100/cgroup", "7:blkio:/box\n");
	tmptree_put("proc/600/cgroup", "7:blkio:/idle\n");
	g_autofree char *box = diskstats(g, 100);
	cr_assert_str_eq(box,
			 "   7       1 loop1 1 0 8 0 2 0 16 0 0 0 0 0 0 0 0 0 0\n"
			 "   8       0 sda 900 10 72000 300 800 20 64000 400 0 700 700 5 0 40 1 0 0\n"
			 "   8       1 sda1 800 10 64000 250 700 20 56000 350 0 600 600 5 0 40 1 0 0\n");
	g_autofree char *idle = diskstats(g, 600);
	cr_assert(g_str_has_prefix(idle, "   7       1 loop1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
					 "   8       0 sda 900 "),
		  "a counted device the cgroup never used: 0s; %s", idle);
	iogroups_free(g);
}

Test(iogroups, the_groups_counters_are_read_at_each_open_the_hosts_lines_are_at_most_a_tick_old)
{
	struct iogroups *g = make(CGROUP_V2);
	g_autofree char *before = diskstats(g, 100);
	cr_assert(strstr(before, "   8       0 sda 1 0 8 0 64 0 16384 "), "%s", before);
	tmptree_put("v2/box/io.stat", "8:0 rbytes=4096 wbytes=9437184 rios=1 wios=72 dbytes=0 dios=0\n");
	g_autofree char *wrote = diskstats(g, 100);
	cr_assert(strstr(wrote, "   8       0 sda 1 0 8 0 72 0 18432 "),
		  "a write the group made just before: seen at once, in the same tick: %s", wrote);
	tmptree_put("proc/diskstats", "   8      16 sdb 1 0 8 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n");
	g_usleep(G_USEC_PER_SEC / 100 + 1000);
	g_autofree char *later = diskstats(g, 100);
	cr_assert_str_eq(later, "   8      16 sdb 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
			 "the host's lines a tick later: sdb came, sda and loop1 went");
	iogroups_free(g);
}

Test(iogroups, v1_the_hosts_line_of_a_device_it_does_not_count_is_read_at_each_open)
{
	struct iogroups *g = make(CGROUP_V1);
	tmptree_put("proc/100/cgroup", "7:blkio:/box\n");
	g_autofree char *before = diskstats(g, 100);
	cr_assert(strstr(before, "   8       0 sda 900 10 72000 "), "%s", before);
	tmptree_put("proc/diskstats", "   7       1 loop1 10 0 80 5 20 0 160 9 0 14 14 0 0 0 0 0 0\n"
				      "   8       0 sda 900 10 72000 300 816 20 80384 402 0 700 702 5 0 40 1 0 0\n");
	g_autofree char *wrote = diskstats(g, 100);
	cr_assert(strstr(wrote, "   8       0 sda 900 10 72000 300 816 20 80384 402 "),
		  "a write to sda (which v1 does not count for the group) just before: the host's line shows it at "
		  "once, in the same tick: %s", wrote);
	iogroups_free(g);
}

Test(iogroups, v1_a_device_counted_since_the_last_read_of_the_top_cgroups_list_is_the_groups_at_once)
{
	tmptree_put("proc/diskstats", "   7       1 loop1 10 0 80 5 20 0 160 9 0 14 14 0 0 0 0 0 0\n"
				      "   7       2 loop2 30 0 240 5 40 0 320 9 0 14 14 0 0 0 0 0 0\n");
	struct iogroups *g = make(CGROUP_V1);
	tmptree_put("proc/100/cgroup", "7:blkio:/box\n");
	g_autofree char *before = diskstats(g, 100);
	cr_assert(strstr(before, "   7       2 loop2 30 0 240 "), "loop2 not counted yet: the host's line; %s", before);
	/* a rule set on loop2, and a write there, within the same tick */
	const char *lists[][2] = {
		{ "blkio/blkio.throttle.io_serviced_recursive", "7:1 Read 0\n7:2 Write 0\nTotal 0\n" },
		{ "blkio/blkio.throttle.io_service_bytes_recursive", "7:1 Read 0\n7:2 Write 0\nTotal 0\n" },
		{ "blkio/box/blkio.throttle.io_serviced_recursive", "7:2 Write 5\nTotal 5\n" },
		{ "blkio/box/blkio.throttle.io_service_bytes_recursive", "7:2 Write 20480\nTotal 20480\n" },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(lists); i++)
		tmptree_put(lists[i][0], lists[i][1]);
	g_autofree char *after = diskstats(g, 100);
	cr_assert_str_eq(after,
			 "   7       1 loop1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
			 "   7       2 loop2 0 0 0 0 5 0 40 0 0 0 0 0 0 0 0 0 0\n",
			 "the group's write to loop2, counted now: %s", after);
	iogroups_free(g);
}

Test(iogroups, garbled_io_stat_gives_the_hosts_file_and_one_report)
{
	struct iogroups *g = make(CGROUP_V2);
	for (int i = 0; i < 3; i++) {
		g_autofree char *text = diskstats(g, 300);
		cr_assert_str_eq(text, host_diskstats);
	}
	cr_assert_eq(reports->len, 1, "one report, not one per read");
	g_autofree char *want = g_strdup_printf("garbled/io.stat %d", EINVAL);
	cr_assert_str_eq(g_ptr_array_index(reports, 0), want);
	iogroups_free(g);
}

Test(iogroups, pressure_is_the_cgroups_file_where_it_has_one)
{
	struct iogroups *g = make(CGROUP_V2);
	g_autofree char *box = pressure(g, 100, "cpu");
	cr_assert_str_eq(box, box_cpu_pressure);
	g_autofree char *missing = pressure(g, 100, "memory");
	cr_assert_str_eq(missing, host_cpu_pressure, "no memory.pressure: the host's");
	g_autofree char *root = pressure(g, 200, "cpu");
	cr_assert_str_eq(root, host_cpu_pressure);
	cr_assert_eq(reports->len, 0);
	for (int i = 0; i < 2; i++) {
		g_autofree char *garbled = pressure(g, 300, "cpu");
		cr_assert_str_eq(garbled, host_cpu_pressure);
	}
	cr_assert_eq(reports->len, 1);
	g_autofree char *want = g_strdup_printf("garbled/cpu.pressure %d", EINVAL);
	cr_assert_str_eq(g_ptr_array_index(reports, 0), want);
	iogroups_free(g);
}

Test(iogroups, the_pressure_files_are_those_of_the_host)
{
	struct iogroups *g = make(CGROUP_V2);
	cr_assert(iogroups_has_pressure(g, NULL));
	cr_assert(iogroups_has_pressure(g, "cpu") && iogroups_has_pressure(g, "io"));
	cr_assert_not(iogroups_has_pressure(g, "irq"), "the host has no pressure/irq");
	iogroups_free(g);
	cr_assert_eq(unlinkat(proc_fd, "pressure/cpu", 0) + unlinkat(proc_fd, "pressure/memory", 0) +
			     unlinkat(proc_fd, "pressure/io", 0),
		     0);
	g = make(CGROUP_V2);
	cr_assert_not(iogroups_has_pressure(g, NULL), "no PSI on the host: no pressure directory");
	iogroups_free(g);
}

Test(iogroups, classes_tell_groups_and_files_apart)
{
	struct iogroups *g = make(CGROUP_V2);
	g_autofree char *a = NULL;
	cr_assert_eq(deciders_of(iogroups_disk_deciders(g), 100, FALSE, (gpointer *)&a), 0);
	g_autofree char *b = NULL;
	cr_assert_eq(deciders_of(iogroups_pressure_deciders(g), 100, FALSE, (gpointer *)&b), 0);
	cr_assert_str_eq(a, "box");
	cr_assert_str_eq(b, "box");
	cr_assert_neq(iogroups_disk_class(a), iogroups_pressure_class(b));
	cr_assert_neq(iogroups_disk_class(a), iogroups_disk_class(""));
	g_autofree char *known = deciders_of_class(iogroups_disk_deciders(g), iogroups_disk_class("box"));
	cr_assert_str_eq(known, "box");
	iogroups_free(g);
}

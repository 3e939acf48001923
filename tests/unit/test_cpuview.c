/* CPU maps and the renderers, on captured host text in
 * tests/fixtures/cpuinfo (x86 Intel and AMD shapes, arm64, /proc/stat). */
#include "cpuview.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

static char *fixture(const char *name)
{
	g_autofree char *path = g_build_filename(g_getenv("CGPROCFS_FIXTURES"), "cpuinfo", name, NULL);
	char *text = NULL;
	cr_assert(g_file_get_contents(path, &text, NULL, NULL), "%s", path);
	return text;
}

static struct cpu_map *map_of(const char *online, const char *cpuset, uint64_t quota, uint64_t period)
{
	struct cpuset on;
	struct cgroup_limits l = { 0 };
	cr_assert_eq(cpuset_parse_list(online, &on), 0);
	if (cpuset) {
		l.has_cpuset = TRUE;
		cr_assert_eq(cpuset_parse_list(cpuset, &l.cpuset), 0);
	}
	if (quota) {
		l.has_quota = TRUE;
		l.quota_us = quota;
		l.period_us = period;
	}
	return cpu_map_new(&on, &l, TRUE);
}

/* The values of key in text, one per block, joined with ','. */
static char *values(const char *text, const char *key)
{
	g_autoptr(GString) out = g_string_new(NULL);
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	for (char **l = lines; *l; l++) {
		if (!g_str_has_prefix(*l, key) || !strchr(*l, ':'))
			continue;
		g_autofree char *k = g_strstrip(g_strndup(*l, (gsize)(strchr(*l, ':') - *l)));
		if (strcmp(k, key) == 0)
			g_string_append_printf(out, "%s%s", out->len ? "," : "", g_strstrip(strchr(*l, ':') + 1));
	}
	return g_string_free(g_steal_pointer(&out), FALSE);
}

Test(cpuview, the_count_is_the_smaller_of_cpuset_and_quota)
{
	g_autoptr(cpu_map) a = map_of("0-7", "2-3", 0, 0);
	cr_assert_eq(a->count, 2);
	cr_assert(a->host[0] == 2 && a->host[1] == 3);
	cr_assert_not(a->is_host);
	g_autoptr(cpu_map) b = map_of("0-7", "2-3", 50000, 100000);
	cr_assert_eq(b->count, 1);
	cr_assert_eq(b->host[0], 2, "the first CPUs of the cpuset");
	g_autoptr(cpu_map) c = map_of("0-7", "0,2-3,7", 150000, 100000);
	cr_assert_eq(c->count, 2);
	cr_assert(c->host[0] == 0 && c->host[1] == 2);
	g_autoptr(cpu_map) d = map_of("0-3", "0-7", 0, 0);
	cr_assert_eq(d->count, 4, "only online CPUs count");
	cr_assert(d->is_host);
	g_autoptr(cpu_map) e = map_of("0-3", NULL, 800000, 100000);
	cr_assert(e->is_host, "a quota above the CPU count is no limit");
	g_autoptr(cpu_map) f = map_of("0-3", "6-7", 0, 0);
	cr_assert(f->is_host, "a cpuset of offline CPUs only shows the host");
	cr_assert_eq(cpu_map_view_cpu(b, 2), 0);
	cr_assert_eq(cpu_map_view_cpu(b, 3), -1);
}

Test(cpuview, a_quota_without_cpuset_limits_the_first_cpus)
{
	struct cpuset on;
	cr_assert_eq(cpuset_parse_list("0-3", &on), 0);
	struct cgroup_limits l = { .has_quota = TRUE, .quota_us = 200000, .period_us = 100000 };
	g_autoptr(cpu_map) m = cpu_map_new(&on, &l, TRUE);
	cr_assert_eq(m->count, 2);
	g_autoptr(cpu_map) ignored = cpu_map_new(&on, &l, FALSE);
	cr_assert(ignored->is_host, "--cpu-limit=cpuset ignores the quota");
}

Test(cpuview, intel_cpuinfo_keeps_host_numbers_and_is_recounted)
{
	g_autofree char *host = fixture("intel-4cpu");
	g_autoptr(cpu_map) m = map_of("0-3", "1,3", 0, 0);
	GString *out = NULL;
	cr_assert_eq(cpuview_render_cpuinfo(host, m, &out), 0);
	g_autofree char *text = g_string_free(out, FALSE);
	g_autofree char *procs = values(text, "processor");
	g_autofree char *siblings = values(text, "siblings");
	g_autofree char *cores = values(text, "cpu cores");
	g_autofree char *core_ids = values(text, "core id");
	g_autofree char *apic = values(text, "apicid");
	cr_assert_str_eq(procs, "1,3", "host numbers");
	cr_assert_str_eq(siblings, "2,2");
	cr_assert_str_eq(core_ids, "1,1", "host core ids kept, as sysfs topology shows them");
	cr_assert_str_eq(cores, "1,1", "two threads of one core");
	cr_assert_str_eq(apic, "2,3", "the host CPUs' own blocks");
	cr_assert(g_str_has_suffix(text, "power management:\n\n"));
}

Test(cpuview, intel_cpuinfo_two_cores)
{
	g_autofree char *host = fixture("intel-4cpu");
	g_autoptr(cpu_map) m = map_of("0-3", "0-1", 0, 0);
	GString *out = NULL;
	cr_assert_eq(cpuview_render_cpuinfo(host, m, &out), 0);
	g_autofree char *text = g_string_free(out, FALSE);
	g_autofree char *cores = values(text, "cpu cores");
	cr_assert_str_eq(cores, "2,2");
}

Test(cpuview, amd_cpuinfo_keeps_every_other_line)
{
	g_autofree char *host = fixture("amd-2cpu");
	g_autoptr(cpu_map) m = map_of("0-1", "1", 0, 0);
	GString *out = NULL;
	cr_assert_eq(cpuview_render_cpuinfo(host, m, &out), 0);
	g_autofree char *text = g_string_free(out, FALSE);
	/* The second block of the host, siblings and cpu cores recounted,
	 * everything else as it was. */
	g_auto(GStrv) blocks = g_strsplit(host, "\n\n", -1);
	g_auto(GStrv) want = g_strsplit(blocks[1], "\n", -1);
	g_auto(GStrv) got = g_strsplit(text, "\n", -1);
	for (guint i = 0; want[i]; i++) {
		if (g_str_has_prefix(want[i], "processor") || g_str_has_prefix(want[i], "siblings") ||
		    g_str_has_prefix(want[i], "cpu cores"))
			continue;
		cr_assert_str_eq(got[i], want[i]);
	}
	g_autofree char *procs = values(text, "processor");
	cr_assert_str_eq(procs, "1", "the host's number");
}

Test(cpuview, arm64_cpuinfo_keeps_host_numbers)
{
	g_autofree char *host = fixture("arm64-4cpu");
	g_autoptr(cpu_map) m = map_of("0-3", "2-3", 0, 0);
	GString *out = NULL;
	cr_assert_eq(cpuview_render_cpuinfo(host, m, &out), 0);
	g_autofree char *text = g_string_free(out, FALSE);
	g_autofree char *procs = values(text, "processor");
	g_autofree char *bogo = values(text, "BogoMIPS");
	cr_assert_str_eq(procs, "2,3");
	cr_assert_str_eq(bogo, "50.00,50.00");
	cr_assert_null(strstr(text, "siblings"));
}

Test(cpuview, an_unlimited_caller_gets_the_host_text)
{
	g_autofree char *host = fixture("intel-4cpu");
	g_autofree char *stat = fixture("stat-4cpu");
	g_autoptr(cpu_map) m = map_of("0-3", NULL, 0, 0);
	GString *a = NULL, *b = NULL;
	cr_assert_eq(cpuview_render_cpuinfo(host, m, &a), 0);
	cr_assert_eq(cpuview_render_stat(stat, m, &b), 0);
	cr_assert_str_eq(a->str, host);
	cr_assert_str_eq(b->str, stat);
	g_string_free(a, TRUE);
	g_string_free(b, TRUE);
}

Test(cpuview, cpuinfo_without_a_block_for_a_shown_cpu_is_einval)
{
	g_autoptr(cpu_map) m = map_of("0-3", "3", 0, 0);
	GString *out = NULL;
	cr_assert_eq(cpuview_render_cpuinfo("processor\t: 0\nx\t: y\n\n", m, &out), -EINVAL);
	cr_assert_null(out);
}

Test(cpuview, stat_sums_the_shown_cpus_and_keeps_their_numbers)
{
	g_autofree char *host = fixture("stat-4cpu");
	g_autoptr(cpu_map) m = map_of("0-3", "1,3", 0, 0);
	GString *out = NULL;
	cr_assert_eq(cpuview_render_stat(host, m, &out), 0);
	g_autofree char *text = g_string_free(out, FALSE);
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	cr_assert_str_eq(lines[0], "cpu  198 18 98 1998 2 0 4 0 0 0");
	cr_assert_str_eq(lines[1], "cpu1 101 11 51 1001 1 0 2 0 0 0");
	cr_assert_str_eq(lines[2], "cpu3 97 7 47 997 1 0 2 0 0 0");
	cr_assert_str_eq(lines[3], "intr 12345 0 0");
	cr_assert(g_str_has_suffix(text, "softirq 555 0 1 2\n"), "other lines as they were");
}

Test(cpuview, stat_of_odd_shape_is_einval)
{
	g_autoptr(cpu_map) m = map_of("0-3", "1", 0, 0);
	GString *out = NULL;
	cr_assert_eq(cpuview_render_stat("cpu  1 2\ncpu0 1 2\n", m, &out), -EINVAL, "cpu1 missing");
	cr_assert_eq(cpuview_render_stat("cpu  1 2\ncpu1 1 x\n", m, &out), -EINVAL);
}

/* stat with the time of a cgroup spread over n lines (fs/cpucounters.h). */
static int stat_usage(const char *view, unsigned n, uint64_t user, uint64_t system, uint64_t elapsed, GString **ret)
{
	g_autofree cpu_ticks *rows = g_new(cpu_ticks, n + 1);
	cpu_ticks_spread(user, system, elapsed, n, rows);
	return cpuview_render_stat_usage(view, n, rows, ret);
}

Test(cpuview, stat_usage_spreads_the_cgroups_time_evenly_and_idles_the_rest)
{
	const char *view = "cpu  9 9 9 9 9 9 9 9 9 9\ncpu0 1 1 1 1 1 1 1 1 1 1\ncpu1 1 1 1 1 1 1 1 1 1 1\n"
			   "intr 5\nbtime 1700000000\n";
	GString *out = NULL;
	/* 301 ticks of user, 100 of system over 2 CPUs, 1000 ticks elapsed */
	cr_assert_eq(stat_usage(view, 2, 301, 100, 1000, &out), 0);
	g_autofree char *text = g_string_free(out, FALSE);
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	cr_assert_str_eq(lines[1], "cpu0 151 0 50 799 0 0 0 0 0 0", "the first line takes the remainder");
	cr_assert_str_eq(lines[2], "cpu1 150 0 50 800 0 0 0 0 0 0");
	cr_assert_str_eq(lines[0], "cpu  301 0 100 1599 0 0 0 0 0 0", "the cpu line is the lines' sum");
	cr_assert_str_eq(lines[3], "intr 5");
	cr_assert_str_eq(lines[4], "btime 1700000000", "btime stays the host's");
}

Test(cpuview, stat_usage_idle_is_never_negative_and_odd_shapes_are_einval)
{
	const char *view = "cpu  1 1 1 1\ncpu0 1 1 1 1\n";
	GString *out = NULL;
	cr_assert_eq(stat_usage(view, 1, 500, 600, 1000, &out), 0);
	cr_assert(g_str_has_prefix(out->str, "cpu  500 0 600 0\ncpu0 500 0 600 0\n"), "%s", out->str);
	g_string_free(out, TRUE);
	out = NULL;
	cr_assert_eq(stat_usage(view, 2, 1, 1, 1, &out), -EINVAL, "one cpu line for two CPUs");
	cr_assert_eq(stat_usage("cpu  1 1\ncpu0 1 1\n", 1, 1, 1, 1, &out), -EINVAL, "too few fields");
	cr_assert_eq(stat_usage("cpu  1 1 1 1\ncpu3 1 1 1 1\ncpu1 1 1 1 1\n", 2, 1, 1, 1, &out), -EINVAL,
		     "cpu lines not in ascending order");
	cr_assert_null(out);
}

Test(cpuview, stat_usage_puts_the_ith_row_on_the_ith_cpu_line_whatever_its_number)
{
	const char *view = "cpu  9 9 9 9\ncpu1 1 1 1 1\ncpu3 1 1 1 1\nintr 5\n";
	GString *out = NULL;
	cr_assert_eq(stat_usage(view, 2, 3, 0, 10, &out), 0);
	g_autofree char *text = g_string_free(out, FALSE);
	cr_assert_str_eq(text, "cpu  3 0 0 17\ncpu1 2 0 0 8\ncpu3 1 0 0 9\nintr 5\n");
}

Test(cpuview, online_lists_and_masks_keep_host_numbers)
{
	g_autoptr(cpu_map) one = map_of("0-7", "5", 0, 0);
	g_autoptr(cpu_map) three = map_of("0-7", "2,4,6", 0, 0);
	g_autoptr(cpu_map) run = map_of("0-7", "4-7", 0, 0);
	GString *s = cpuview_render_online(one);
	cr_assert_str_eq(s->str, "5\n");
	g_string_free(s, TRUE);
	s = cpuview_render_online(three);
	cr_assert_str_eq(s->str, "2,4,6\n");
	g_string_free(s, TRUE);
	s = cpuview_render_online(run);
	cr_assert_str_eq(s->str, "4-7\n");
	g_string_free(s, TRUE);

	cr_assert_eq(cpuview_render_list("4-7\n", three, &s), 0);
	cr_assert_str_eq(s->str, "4,6\n", "restricted to the CPUs shown");
	g_string_free(s, TRUE);
	cr_assert_eq(cpuview_render_mask("00000000,000000f0\n", three, &s), 0);
	cr_assert_str_eq(s->str, "00000000,00000050\n", "same width as the host's");
	g_string_free(s, TRUE);
	cr_assert_eq(cpuview_render_list("garbage", three, &s), -EINVAL);
}

Test(cpuview, offline_is_the_hosts_and_the_present_cpus_not_shown)
{
	g_autoptr(cpu_map) three = map_of("0-7", "2,4,6", 0, 0);
	GString *s = NULL;
	cr_assert_eq(cpuview_render_offline("0-7\n", "\n", three, &s), 0);
	cr_assert_str_eq(s->str, "0-1,3,5,7\n");
	g_string_free(s, TRUE);
	cr_assert_eq(cpuview_render_offline("0-7\n", "8-15\n", three, &s), 0);
	cr_assert_str_eq(s->str, "0-1,3,5,7-15\n", "possible but not present CPUs stay offline");
	g_string_free(s, TRUE);
	s = NULL;
	cr_assert_eq(cpuview_render_offline("0-7\n", "x", three, &s), -EINVAL);
	cr_assert_null(s);
}

Test(cpuview, a_map_of_placed_cpus_shows_them)
{
	struct cpuset on;
	cr_assert_eq(cpuset_parse_list("0-3", &on), 0);
	const unsigned cpus[] = { 1, 3 };
	g_autoptr(cpu_map) m = cpu_map_of(&on, cpus, 2);
	cr_assert_eq(m->count, 2);
	cr_assert(m->host[0] == 1 && m->host[1] == 3);
	cr_assert_not(m->is_host);
	g_autoptr(cpu_map) first = map_of("0-3", "0-3", 200000, 100000);
	cr_assert(first->host[0] == 0 && first->host[1] == 1, "cpu_map_new: the first N");
	cr_assert_neq(cpu_map_class(m), cpu_map_class(first), "the class tells the CPUs apart");
	const unsigned all[] = { 0, 1, 2, 3 };
	g_autoptr(cpu_map) host = cpu_map_of(&on, all, 4);
	cr_assert(host->is_host);
}

/* The content class of a map: what decides the text of the CPU files, and
 * nothing else; never 0 (the class of files alike for every caller). */
Test(cpuview, maps_showing_the_same_cpus_share_a_class_and_others_do_not)
{
	g_autoptr(cpu_map) a = map_of("0-3", "1-2", 0, 0);
	g_autoptr(cpu_map) b = map_of("0-3", "1-2", 300000, 100000); /* a quota of 3 CPUs: the same two */
	g_autoptr(cpu_map) c = map_of("0-3", "2-3", 0, 0);
	g_autoptr(cpu_map) d = map_of("0-3", "1-3", 200000, 100000); /* the first two of 1-3: 1 and 2 */
	g_autoptr(cpu_map) host = map_of("0-3", NULL, 0, 0);
	cr_assert_eq(cpu_map_class(a), cpu_map_class(b));
	cr_assert_eq(cpu_map_class(a), cpu_map_class(d));
	cr_assert_neq(cpu_map_class(a), cpu_map_class(c), "other CPUs, same count");
	cr_assert_neq(cpu_map_class(a), cpu_map_class(host));
	cr_assert_neq(cpu_map_class(host), 0);
	cr_assert_eq(cpu_map_class(a) >> 52, 0, "a class fits the served layout's 52 bits");
}

/* Short classes are never given again, so a caller that makes ever new
 * CPU sets (cgroups of its own) must not grow the table without end:
 * past CPUVIEW_SHORTS_MAX classes, a new one gets none (0: rendered per
 * open), and those given keep theirs. */
Test(cpuview, short_classes_are_bounded_and_kept)
{
	struct cpuview *cv;
	const struct cpuview_config cfg = { .proc_fd = -1, .sys_cpu_fd = -1 };
	cr_assert_eq(cpuview_new(&cfg, &cv), 0);
	g_autoptr(cpu_map) first = map_of("0-63", "0", 0, 0);
	uint32_t first_short = cpuview_short_class(cv, first);
	cr_assert_neq(first_short, 0);
	unsigned given = 1;
	for (unsigned i = 2; i <= 2 * CPUVIEW_SHORTS_MAX; i++) {
		/* the CPUs of i's bits: a class of its own */
		g_autoptr(GString) set = g_string_new(NULL);
		for (unsigned b = 0; b < 32; b++)
			if (i & (1u << b))
				g_string_append_printf(set, "%s%u", set->len ? "," : "", b);
		g_autoptr(cpu_map) m = map_of("0-63", set->str, 0, 0);
		given += cpuview_short_class(cv, m) != 0;
	}
	cr_assert_leq(given, CPUVIEW_SHORTS_MAX, "%u classes have a short class (at most %u)", given,
		      (unsigned)CPUVIEW_SHORTS_MAX);
	cr_assert_eq(cpuview_short_class(cv, first), first_short, "a short class given is kept");
	cpuview_free(cv);
}

/* cpu_map_new, cpu_map_view_cpu and cpuview_render_online (fs/cpuview.h),
 * with cgroup_quota_cpus (fs/cgroup.h): the CPUs a caller sees for an
 * online set, a cpuset and a quota, all taken from the input (binary). */
#include "fuzz.h"

#include <string.h>

/* A set from the input: a base word and a 128-bit mask from there. */
static void take_set(struct fuzz_tail *t, struct cpuset *s)
{
	unsigned base = (unsigned)fuzz_take(t, 1) * 32;
	uint64_t lo = fuzz_take(t, 8), hi = fuzz_take(t, 8);
	cpuset_clear(s);
	for (unsigned b = 0; b < 64; b++) {
		if ((lo >> b) & 1)
			cpuset_add(s, base + b);
		if ((hi >> b) & 1)
			cpuset_add(s, base + 64 + b);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_tail t = { data, size };
	struct cpuset online;
	struct cgroup_limits l = { 0 };

	take_set(&t, &online);
	uint8_t flags = (uint8_t)fuzz_take(&t, 1);
	l.has_cpuset = flags & 1;
	take_set(&t, &l.cpuset);
	l.has_quota = (flags >> 1) & 1;
	l.quota_us = fuzz_take(&t, 8);
	l.period_us = fuzz_take(&t, 8);
	if (l.has_quota) {
		/* cgroup_read_limits only hands out quota and period of at
		 * least 1 (cgroup_quota_cpus divides by period) */
		l.quota_us = MAX(l.quota_us, 1);
		l.period_us = MAX(l.period_us, 1);
		unsigned q = cgroup_quota_cpus(l.quota_us, l.period_us);
		FUZZ_CHECK(q >= 1 && q <= CPUSET_MAX);
		/* ceil(quota/period), clamped: q*period >= quota > (q-1)*period */
		__extension__ typedef unsigned __int128 u128;
		FUZZ_CHECK((u128)q * l.period_us >= l.quota_us || q == CPUSET_MAX);
		FUZZ_CHECK((u128)(q - 1) * l.period_us < l.quota_us || q == 1);
	}
	gboolean use_quota = (flags >> 2) & 1;
	const struct cgroup_limits *limits = (flags >> 3) & 1 ? NULL : &l;

	g_autoptr(cpu_map) m = cpu_map_new(&online, limits, use_quota);
	unsigned n_online = cpuset_count(&online);
	struct cpuset shown;
	cpuset_clear(&shown);
	FUZZ_CHECK(m->count <= MAX(n_online, 1));
	FUZZ_CHECK(n_online == 0 || m->count >= 1);
	for (unsigned i = 0; i < m->count; i++) {
		FUZZ_CHECK(cpuset_has(&online, m->host[i]));
		FUZZ_CHECK(i == 0 || m->host[i - 1] < m->host[i]);
		FUZZ_CHECK(cpu_map_view_cpu(m, m->host[i]) == (int)i);
		cpuset_add(&shown, m->host[i]);
	}
	if (m->is_host)
		FUZZ_CHECK(m->count == n_online);
	else
		FUZZ_CHECK(m->count < n_online);
	if (limits && l.has_cpuset) {
		struct cpuset both = online;
		cpuset_intersect(&both, &l.cpuset);
		if (cpuset_count(&both) > 0)
			for (unsigned i = 0; i < m->count; i++)
				FUZZ_CHECK(cpuset_has(&l.cpuset, m->host[i]));
	}

	/* online: the CPUs shown, host numbers */
	GString *range = cpuview_render_online(m);
	struct cpuset r;
	FUZZ_CHECK(range->len >= 1 && range->str[range->len - 1] == '\n');
	FUZZ_CHECK(cpuset_parse_list(range->str, &r) == 0);
	FUZZ_CHECK(cpuset_equal(&r, &shown));
	g_string_free(range, TRUE);

	/* the host's own lists and masks, restricted: the CPUs shown */
	if (!m->is_host && n_online > 0) {
		g_autofree char *list = cpuset_format_list(&online);
		/* as many mask words as the highest online CPU needs */
		unsigned top = 0;
		for (unsigned cpu = 0; cpu < CPUSET_MAX; cpu++)
			if (cpuset_has(&online, cpu))
				top = cpu;
		g_autofree char *mask = cpuset_format_mask(&online, top / 32 + 1);
		GString *out = NULL;
		FUZZ_CHECK(cpuview_render_list(list, m, &out) == 0);
		FUZZ_CHECK(cpuset_parse_list(out->str, &r) == 0);
		FUZZ_CHECK(cpuset_equal(&r, &shown));
		g_string_free(out, TRUE);
		FUZZ_CHECK(cpuview_render_mask(mask, m, &out) == 0);
		FUZZ_CHECK(cpuset_parse_mask(out->str, &r) == 0);
		FUZZ_CHECK(cpuset_equal(&r, &shown));
		g_string_free(out, TRUE);
	}
	return 0;
}

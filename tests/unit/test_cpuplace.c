/* Placement of quota-limited containers on host CPUs (fs/cpuplace). */
#include "cpuplace.h"

#include <criterion/criterion.h>
#include <errno.h>

static struct cpuset set_of(const char *list)
{
	struct cpuset s;
	cr_assert_eq(cpuset_parse_list(list, &s), 0, "%s", list);
	return s;
}

/* Place key on n CPUs of list; the CPUs as a list. */
static char *place(struct cpuplace *p, const char *key, const char *list, unsigned n)
{
	struct cpuset allowed = set_of(list), got;
	unsigned cpus[CPUSET_MAX];
	int r = cpuplace_place(p, key, &allowed, n, cpus);
	cr_assert(r == 0 || r == -ENOSPC, "place %s: %d", key, r);
	cpuset_clear(&got);
	for (unsigned i = 0; i < n; i++) {
		cr_assert(cpuset_has(&allowed, cpus[i]), "%s got CPU %u outside %s", key, cpus[i], list);
		cr_assert(i == 0 || cpus[i - 1] < cpus[i], "ascending");
		cpuset_add(&got, cpus[i]);
	}
	return cpuset_format_list(&got);
}

/* want: the list key must get; why: said on failure. */
#define cr_assert_place(p, key, list, n, want, why)                                                         \
	__extension__({                                                                                      \
		g_autofree char *got_ = place(p, key, list, n);                                               \
		cr_assert_str_eq(got_, want, "%s on %u of %s: %s", key, n, list, why);                         \
	})

Test(cpuplace, one_cpu_containers_are_spread_not_piled_on_cpu_0)
{
	struct cpuplace *p = cpuplace_new(CPUPLACE_MAX_ENTRIES);
	cr_assert_place(p, "a", "0-1", 1, "0", "");
	cr_assert_place(p, "b", "0-1", 1, "1", "");
	cr_assert_place(p, "c", "0-1", 1, "0", "");
	cr_assert_eq(cpuplace_uses(p, 0), 2);
	cr_assert_eq(cpuplace_uses(p, 1), 1);
	cr_assert_place(p, "d", "0-3", 2, "2-3", "");
	cpuplace_free(p);
}

Test(cpuplace, a_place_sticks_while_others_come_and_go)
{
	struct cpuplace *p = cpuplace_new(CPUPLACE_MAX_ENTRIES);
	cr_assert_place(p, "a", "0-3", 1, "0", "");
	cr_assert_place(p, "b", "0-3", 1, "1", "");
	cpuplace_release(p, "a");
	cr_assert_eq(cpuplace_uses(p, 0), 0, "released");
	cr_assert_place(p, "b", "0-3", 1, "1", "");
	cr_assert_place(p, "c", "0-3", 1, "0", "");
	cpuplace_free(p);
}

Test(cpuplace, ties_go_to_another_core)
{
	struct cpuplace *p = cpuplace_new(CPUPLACE_MAX_ENTRIES);
	const unsigned core[] = { 0, 0, 2, 2, 4, 4 }; /* three cores of two threads */
	cpuplace_set_cores(p, core, G_N_ELEMENTS(core));
	cr_assert_place(p, "a", "0-5", 2, "0,2", "");
	cr_assert_place(p, "b", "0-5", 1, "4", "");
	cr_assert_place(p, "c", "0-5", 1, "1", "every core has one: a free thread, the lowest");
	cr_assert_place(p, "d", "0-5", 1, "3", "a free thread of a core that has one container, not two");
	cpuplace_free(p);
}

Test(cpuplace, growing_keeps_its_cpus_and_adds_the_least_used)
{
	struct cpuplace *p = cpuplace_new(CPUPLACE_MAX_ENTRIES);
	cr_assert_place(p, "a", "0-3", 1, "0", "");
	cr_assert_place(p, "b", "0-3", 1, "1", "");
	cr_assert_place(p, "a", "0-3", 2, "0,2", "");
	cr_assert_place(p, "a", "0-3", 3, "0,2-3", "");
	cr_assert_eq(cpuplace_uses(p, 1), 1, "b's CPU taken last");
	cpuplace_free(p);
}

Test(cpuplace, shrinking_drops_its_most_shared_cpus)
{
	struct cpuplace *p = cpuplace_new(CPUPLACE_MAX_ENTRIES);
	cr_assert_place(p, "a", "0-3", 3, "0-2", "");
	cr_assert_place(p, "b", "0-3", 1, "3", "");
	cr_assert_place(p, "c", "0-3", 1, "0", "");
	cr_assert_place(p, "a", "0-3", 2, "1-2", "CPU 0 is shared with c");
	cr_assert_eq(cpuplace_uses(p, 0), 1);
	cpuplace_free(p);
}

Test(cpuplace, a_new_cpuset_keeps_what_is_still_in_it)
{
	struct cpuplace *p = cpuplace_new(CPUPLACE_MAX_ENTRIES);
	cr_assert_place(p, "a", "0-7", 2, "0-1", "");
	cr_assert_place(p, "a", "1-7", 2, "1-2", "");
	cr_assert_eq(cpuplace_uses(p, 0), 0, "the CPU left is let go");
	cr_assert_place(p, "a", "4-7", 2, "4-5", "");
	cr_assert_eq(cpuplace_uses(p, 1) + cpuplace_uses(p, 2), 0);
	cpuplace_free(p);
}

Test(cpuplace, a_full_table_gives_the_first_cpus_and_counts_it)
{
	struct cpuplace *p = cpuplace_new(2);
	cr_assert_place(p, "a", "0-3", 1, "0", "");
	cr_assert_place(p, "b", "0-3", 1, "1", "");
	struct cpuset all = set_of("0-3");
	unsigned cpu;
	cr_assert_eq(cpuplace_place(p, "c", &all, 1, &cpu), -ENOSPC);
	cr_assert_eq(cpu, 0, "the first of its CPUs");
	cr_assert_eq(cpuplace_uses(p, 0), 1, "not counted");
	cr_assert_place(p, "a", "0-3", 1, "0", "a placed one still is");
	unsigned entries;
	guint64 full;
	cpuplace_counts(p, &entries, &full);
	cr_assert_eq(entries, 2);
	cr_assert_eq(full, 1);
	cpuplace_release(p, "b");
	cr_assert_place(p, "c", "0-3", 1, "1", "room again");
	cpuplace_free(p);
}

Test(cpuplace, bad_counts_are_refused)
{
	struct cpuplace *p = cpuplace_new(CPUPLACE_MAX_ENTRIES);
	struct cpuset two = set_of("0-1");
	unsigned cpus[4];
	cr_assert_eq(cpuplace_place(p, "a", &two, 0, cpus), -EINVAL);
	cr_assert_eq(cpuplace_place(p, "a", &two, 3, cpus), -EINVAL);
	g_auto(GStrv) keys = cpuplace_keys(p);
	cr_assert_eq(g_strv_length(keys), 0);
	cpuplace_free(p);
}

Test(cpuplace, a_dump_loads_into_a_new_table)
{
	struct cpuplace *p = cpuplace_new(CPUPLACE_MAX_ENTRIES);
	cr_assert_place(p, "1234:/docker/a b", "0-3", 2, "0-1", "");
	cr_assert_place(p, "99:/c\n", "0-3", 1, "2", "");
	g_autofree char *dump = cpuplace_dump(p);
	struct cpuplace *q = cpuplace_new(CPUPLACE_MAX_ENTRIES);
	cr_assert_eq(cpuplace_load(q, dump), 0, "%s", dump);
	cr_assert_eq(cpuplace_load(q, "garbage\n0-x k\n 5\n"), 3);
	cr_assert_place(q, "99:/c\n", "0-3", 1, "2", "kept");
	cr_assert_place(q, "1234:/docker/a b", "0-3", 2, "0-1", "kept");
	cr_assert_place(q, "new", "0-3", 1, "3", "the loaded ones count");
	g_auto(GStrv) keys = cpuplace_keys(q);
	cr_assert_eq(g_strv_length(keys), 3);
	cpuplace_free(p);
	cpuplace_free(q);
}

/* sched_getaffinity's answer for a view (fs/affinity-mask.h): which CPUs, and
 * the bytes, against glibc's cpu_set_t. */
#include "affinity-mask.h"

#include <criterion/criterion.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static struct cpuset set_of(const char *list)
{
	struct cpuset s;
	cr_assert_eq(cpuset_parse_list(list, &s), 0, "%s", list);
	return s;
}

/* The answer for k and a view of the CPUs in list v, as a list; NULL where
 * the kernel's stands. */
static char *answer(const char *k, const char *v)
{
	struct cpuset kernel = set_of(k), view = set_of(v), got;
	unsigned cpus[CPUSET_MAX];
	unsigned n = cpuset_members(&view, cpus, CPUSET_MAX);
	return affinity_mask_for(&kernel, cpus, n, &got) ? cpuset_format_list(&got) : NULL;
}

static void expect(const char *k, const char *v, const char *want)
{
	g_autofree char *got = answer(k, v);
	if (!want)
		cr_expect_null(got, "K %s, V %s: %s, not the kernel's", k, v, got);
	else
		cr_expect_str_eq(got ? got : "(the kernel's)", want, "K %s, V %s", k, v);
}

Test(affinity, an_unpinned_thread_gets_the_view)
{
	expect("0-7", "2-3", "2-3");
	expect("0-95", "40,41,90", "40-41,90");
	expect("0-1", "0", "0");
	expect("0-8191", "8191", "8191");
}

Test(affinity, a_thread_pinned_inside_the_view_or_to_n_cpus_or_fewer_keeps_the_kernels)
{
	expect("3", "2-3", NULL);
	expect("2-3", "2-3", NULL);
	expect("5-6", "2-3", NULL);
	expect("0", "0", NULL);
}

Test(affinity, a_thread_pinned_partly_or_wholly_outside_gets_n_of_its_own_cpus)
{
	expect("2-4", "2-3", "2-3");
	expect("3,6-7", "2-3", "3,6");
	expect("5-7", "2-3", "5-6");
	expect("1,9,17,25", "0", "1");
}

Test(affinity, an_empty_view_answers_nothing)
{
	struct cpuset k = set_of("0-3"), got;
	cr_expect_not(affinity_mask_for(&k, NULL, 0, &got));
}

Test(affinity, bytes_are_glibcs_cpu_set_and_stop_at_len)
{
	const unsigned cpus[] = { 0, 7, 8, 63, 64, 100, 1023 };
	cpu_set_t glibc;
	struct cpuset s;
	CPU_ZERO(&glibc);
	cpuset_clear(&s);
	for (size_t i = 0; i < G_N_ELEMENTS(cpus); i++) {
		CPU_SET(cpus[i], &glibc);
		cpuset_add(&s, cpus[i]);
	}
	uint8_t buf[sizeof(glibc) + 8];
	memset(buf, 0xa5, sizeof(buf));
	affinity_mask_bytes(&s, buf, sizeof(glibc));
	cr_expect_eq(memcmp(buf, &glibc, sizeof(glibc)), 0, "the bytes are not glibc's cpu_set_t");
	for (size_t i = sizeof(glibc); i < sizeof(buf); i++)
		cr_expect_eq(buf[i], 0xa5, "byte %zu past len written", i);
	memset(buf, 0xa5, sizeof(buf));
	affinity_mask_bytes(&s, buf, 8);
	cr_expect_eq(memcmp(buf, &glibc, 8), 0);
	cr_expect_eq(buf[8], 0xa5, "byte 8 past len 8 written");
	struct cpuset back;
	affinity_mask_parse((const uint8_t *)&glibc, sizeof(glibc), &back);
	cr_expect(cpuset_equal(&back, &s), "glibc's cpu_set_t read back is not the set");
}

Test(affinity, this_threads_kernel_mask_reads_back_as_glibc_counts_it)
{
	cpu_set_t glibc;
	uint8_t raw[1024];
	cr_assert_eq(sched_getaffinity(0, sizeof(glibc), &glibc), 0);
	long n = syscall(SYS_sched_getaffinity, 0, sizeof(raw), raw);
	cr_assert_gt(n, 0);
	struct cpuset s;
	affinity_mask_parse(raw, (size_t)n, &s);
	cr_expect_eq(cpuset_count(&s), (unsigned)CPU_COUNT(&glibc));
}

#include "cpuset.h"

#include <criterion/criterion.h>
#include <errno.h>

static char *roundtrip(const char *list)
{
	struct cpuset s;
	cr_assert_eq(cpuset_parse_list(list, &s), 0, "%s", list);
	return cpuset_format_list(&s);
}

Test(cpuset, lists_round_trip_in_kernel_form)
{
	const char *cases[][2] = {
		{ "0", "0" }, { "0-3\n", "0-3" }, { "0,2-3,7", "0,2-3,7" }, { "3,2,1,0", "0-3" },
		{ "0-1,1-2", "0-2" }, { "", "" }, { "  5  ", "5" }, { "8191", "8191" },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *got = roundtrip(cases[i][0]);
		cr_assert_str_eq(got, cases[i][1], "%s", cases[i][0]);
	}
}

Test(cpuset, bad_lists_are_einval_and_leave_the_output)
{
	struct cpuset s;
	cpuset_clear(&s);
	cpuset_add(&s, 42);
	const char *bad[] = { "x", "1-", "-1", "3-1", "1,,2", "1,", "8192", "0-99999", "1 2", "0x3" };
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++)
		cr_assert_eq(cpuset_parse_list(bad[i], &s), -EINVAL, "%s", bad[i]);
	cr_assert(cpuset_has(&s, 42) && cpuset_count(&s) == 1);
}

Test(cpuset, masks_parse_and_format_with_their_width)
{
	struct cpuset s;
	cr_assert_eq(cpuset_parse_mask("00000000,0000008f\n", &s), 0);
	g_autofree char *list = cpuset_format_list(&s);
	cr_assert_str_eq(list, "0-3,7");
	cr_assert_eq(cpuset_parse_mask("1,00000000", &s), 0);
	cr_assert(cpuset_has(&s, 32) && cpuset_count(&s) == 1);
	g_autofree char *two = cpuset_format_mask(&s, 2);
	cr_assert_str_eq(two, "00000001,00000000");
	cr_assert_eq(cpuset_parse_mask("zz", &s), -EINVAL);
	cr_assert_eq(cpuset_parse_mask("123456789", &s), -EINVAL);
	cr_assert_eq(cpuset_parse_mask("", &s), -EINVAL);
}

Test(cpuset, set_operations)
{
	struct cpuset a, b;
	cr_assert_eq(cpuset_parse_list("0-7", &a), 0);
	cr_assert_eq(cpuset_parse_list("2,4,9", &b), 0);
	cpuset_intersect(&a, &b);
	cr_assert_eq(cpuset_count(&a), 2);
	unsigned m[4];
	cr_assert_eq(cpuset_members(&a, m, 4), 2);
	cr_assert_eq(m[0], 2);
	cr_assert_eq(m[1], 4);
	cr_assert_eq(cpuset_members(&b, m, 1), 1, "at most max");
	cr_assert_not(cpuset_equal(&a, &b));
}

#include "delegate.h"

#include <criterion/criterion.h>

Test(delegate, top_level_names_point_into_real)
{
	g_autofree char *self = delegate_top_target("self");
	g_autofree char *meminfo = delegate_top_target("meminfo");
	cr_assert_str_eq(self, ".real/self");
	cr_assert_str_eq(meminfo, ".real/meminfo");
}

Test(delegate, pid_entries_point_up_and_into_real)
{
	g_autofree char *status = delegate_pid_target(4242, "status");
	g_autofree char *fd = delegate_pid_target(1, "fd");
	cr_assert_str_eq(status, "../.real/4242/status");
	cr_assert_str_eq(fd, "../.real/1/fd");
}

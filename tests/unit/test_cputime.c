/* /proc/uptime for a pid namespace (uptime_render): the time since its
 * init started and the idle time of its CPUs, never negative, never above
 * the host's; the host text not understood gives -EINVAL. */
#include "cputime.h"

#include <criterion/criterion.h>
#include <errno.h>

static char *render(const char *host, double start_s, unsigned cpus, double used_s)
{
	GString *out = NULL;
	cr_assert_eq(cputime_render_uptime(host, start_s, cpus, used_s, &out), 0, "%s", host);
	return g_string_free(out, FALSE);
}

Test(uptime, the_time_since_init_and_the_idle_time_of_its_cpus)
{
	g_autofree char *a = render("1000.50 1900.00\n", 990.25, 2, 5.0);
	cr_assert_str_eq(a, "10.25 15.50\n", "2 CPUs x 10.25 s less 5 s used");
}

Test(uptime, never_negative_never_above_the_hosts)
{
	g_autofree char *busy = render("1000.00 1900.00\n", 990.00, 1, 50.0);
	cr_assert_str_eq(busy, "10.00 0.00\n", "used more than it had: idle 0");
	g_autofree char *future = render("1000.00 1900.00\n", 2000.00, 1, 0.0);
	cr_assert_str_eq(future, "0.00 0.00\n", "an init started after now: 0");
	g_autofree char *idle = render("1000.00 50.00\n", 0.00, 4, 0.0);
	cr_assert_str_eq(idle, "1000.00 50.00\n", "never more idle than the host");
}

Test(uptime, a_host_text_not_understood_is_einval)
{
	const char *bad[] = { "", "garbage\n", "1000.00\n", "1000.00 x\n", "-5 1\n", "1 2 3\n" };
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		GString *out = NULL;
		cr_assert_eq(cputime_render_uptime(bad[i], 0, 1, 0, &out), -EINVAL, "%s", bad[i]);
		cr_assert_null(out);
	}
}

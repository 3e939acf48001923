/* The load averages' arithmetic (fs/loadavg.h) against the continuous
 * exponentials the kernel's fixed-point constants stand for, and the
 * text's shape. */
#include "loadavg.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

static double value(uint64_t fixed)
{
	return (double)fixed / LOADAVG_FIXED_1;
}

Test(loadavg, one_thread_for_a_minute_gives_the_exponentials)
{
	uint64_t avenrun[3] = { 0, 0, 0 };
	for (int i = 0; i < 12; i++) /* 12 samples of 5 s */
		loadavg_step(avenrun, 1);
	const double want[3] = { 1 - exp(-1.0), 1 - exp(-1.0 / 5), 1 - exp(-1.0 / 15) };
	for (int i = 0; i < 3; i++)
		cr_assert(fabs(value(avenrun[i]) - want[i]) < 0.01, "average %d: %.4f, want %.4f", i, value(avenrun[i]),
			  want[i]);
}

Test(loadavg, a_load_decays_the_same_way_and_never_below_zero)
{
	uint64_t avenrun[3] = { 2 * LOADAVG_FIXED_1, 2 * LOADAVG_FIXED_1, 2 * LOADAVG_FIXED_1 };
	for (int i = 0; i < 12; i++)
		loadavg_step(avenrun, 0);
	cr_assert(fabs(value(avenrun[0]) - 2 * exp(-1.0)) < 0.01, "%.4f", value(avenrun[0]));
	for (int i = 0; i < 2000; i++)
		loadavg_step(avenrun, 0);
	cr_assert_eq(avenrun[0], 0);
}

Test(loadavg, the_text_is_the_kernels_shape)
{
	const uint64_t avenrun[3] = { LOADAVG_FIXED_1, LOADAVG_FIXED_1 / 2, 0 };
	GString *s = loadavg_render(avenrun, 2, 17, "4242");
	cr_assert_str_eq(s->str, "1.00 0.50 0.00 2/17 4242\n");
	g_string_free(s, TRUE);
}

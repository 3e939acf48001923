/* Each session's share of the daemon's CPU time (daemon/share.c). */
#include "share.h"

#include <criterion/criterion.h>

/* A moment inside window w (and its offset in µs into it). */
#define AT(w, us) ((gint64)(w) * SHARE_WINDOW_US + (us))
#define HEAVY (10 * SHARE_FLOOR_US)

Test(share, one_session_is_never_over_its_share)
{
	struct share_totals t = { 0 };
	struct share_windows a = { 0 };

	for (int i = 0; i < 100; i++)
		share_charge(&t, &a, AT(1000, i * 100), HEAVY);
	cr_assert_not(share_over(&t, &a, AT(1000, 99 * 100)));
}

Test(share, the_heavier_of_two_is_over_and_the_lighter_is_not)
{
	struct share_totals t = { 0 };
	struct share_windows heavy = { 0 }, light = { 0 };

	share_charge(&t, &light, AT(1000, 10), SHARE_FLOOR_US * 2);
	share_charge(&t, &heavy, AT(1000, 20), HEAVY);
	cr_assert(share_over(&t, &heavy, AT(1000, 30)));
	cr_assert_not(share_over(&t, &light, AT(1000, 30)));
}

Test(share, a_session_under_the_floor_is_never_over)
{
	struct share_totals t = { 0 };
	struct share_windows a = { 0 }, b = { 0 };

	share_charge(&t, &a, AT(1000, 10), 1);
	share_charge(&t, &b, AT(1000, 20), SHARE_FLOOR_US - 3);
	cr_assert_not(share_over(&t, &b, AT(1000, 30)), "b took less than the floor");
}

Test(share, the_window_before_counts_and_older_ones_do_not)
{
	struct share_totals t = { 0 };
	struct share_windows heavy = { 0 }, light = { 0 };

	share_charge(&t, &heavy, AT(1000, 10), HEAVY);
	share_charge(&t, &light, AT(1001, 10), SHARE_FLOOR_US);
	cr_assert(share_over(&t, &heavy, AT(1001, 20)), "the window before is lately");
	/* Two windows on, heavy's cost has gone and light's is still there. */
	cr_assert_not(share_over(&t, &heavy, AT(1002, 20)));
	share_charge(&t, &light, AT(1002, 30), SHARE_FLOOR_US);
	cr_assert_not(share_over(&t, &light, AT(1002, 40)), "light is alone lately");
	/* Much later, nothing is left of either. */
	share_charge(&t, &light, AT(1010, 0), 1);
	share_charge(&t, &heavy, AT(1010, 0), 1);
	cr_assert_not(share_over(&t, &heavy, AT(1010, 1)));
	cr_assert_not(share_over(&t, &light, AT(1010, 1)));
}

Test(share, a_session_served_in_both_windows_counts_once)
{
	struct share_totals t = { 0 };
	struct share_windows a = { 0 }, b = { 0 };

	/* a: 3 floors over two windows, b: 2 floors. Average over two
	 * sessions: 2.5, so a is over; counted thrice (a twice), the average
	 * would be 5/3 and b over too. */
	share_charge(&t, &a, AT(1000, 10), SHARE_FLOOR_US);
	share_charge(&t, &a, AT(1001, 10), 2 * SHARE_FLOOR_US);
	share_charge(&t, &b, AT(1001, 20), 2 * SHARE_FLOOR_US);
	cr_assert_eq(share_sessions(&t, AT(1001, 30)), 2);
	cr_assert(share_over(&t, &a, AT(1001, 30)));
	cr_assert_not(share_over(&t, &b, AT(1001, 30)));
}

Test(share, a_request_that_cost_nothing_still_counts_its_session)
{
	struct share_totals t = { 0 };
	struct share_windows heavy = { 0 }, idle = { 0 };

	share_charge(&t, &heavy, AT(1000, 10), HEAVY);
	share_charge(&t, &idle, AT(1000, 20), 0);
	cr_assert(share_over(&t, &heavy, AT(1000, 30)), "two sessions were served: heavy took all");
}

Test(share, a_charge_stamped_before_the_latest_window_goes_to_it)
{
	struct share_totals t = { 0 };
	struct share_windows a = { 0 }, b = { 0 };

	share_charge(&t, &a, AT(1001, 10), SHARE_FLOOR_US);
	/* b's worker read its clock before a's, and got the lock after. */
	share_charge(&t, &b, AT(1000, SHARE_WINDOW_US - 1), HEAVY);
	cr_assert_eq(share_sessions(&t, AT(1001, 20)), 2);
	cr_assert(share_over(&t, &b, AT(1001, 20)));
	cr_assert_not(share_over(&t, &a, AT(1001, 20)), "a's cost is still counted: %d", (int)a.cost[1001 & 1]);
	cr_assert_eq(t.all.window, 1001);
}

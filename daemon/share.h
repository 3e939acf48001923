/* Each session's share of the daemon's time: what answering its
 * requests cost lately, against what every session's cost. A session
 * whose callers take more than the average of the sessions served lately
 * is over its share, and its requests wait for the others' (session.c
 * answers them at a lower priority): the daemon's time is charged to no
 * container's cgroup, so this is where one container's load is kept from
 * the others. Pure bookkeeping, no lock: the caller holds one. */
#pragma once

#include <glib.h>

/* Costs are summed over windows of SHARE_WINDOW_US; "lately" is the
 * current window and the one before. */
#define SHARE_WINDOW_US (100 * G_TIME_SPAN_MILLISECOND)
/* Under this much lately, no session is over its share: 1 % of a CPU. */
#define SHARE_FLOOR_US (2 * SHARE_WINDOW_US / 100)

/* The two windows of one session, or of them all. */
struct share_windows {
	gint64 window;  /* the latest window charged (now / SHARE_WINDOW_US) */
	gint64 cost[2]; /* µs, by window & 1 */
};

struct share_totals {
	struct share_windows all;
	/* Sessions charged in a window (by window & 1), and those of them
	 * charged in the window before too: the sessions served lately are
	 * counted once however many windows they span. */
	unsigned sessions[2], again[2];
};

/* Add cost_us (answering one request of s) at now_us (monotonic). */
void share_charge(struct share_totals *t, struct share_windows *s, gint64 now_us, gint64 cost_us);
/* The sessions charged lately. */
unsigned share_sessions(const struct share_totals *t, gint64 now_us);
/* Whether s cost more than the average session lately (and more than
 * SHARE_FLOOR_US). */
gboolean share_over(const struct share_totals *t, const struct share_windows *s, gint64 now_us);

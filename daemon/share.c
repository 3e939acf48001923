/* See share.h. */
#include "share.h"

/* What w holds of windows now and the one before it. */
static gint64 lately(const struct share_windows *w, gint64 now)
{
	if (w->window == now)
		return w->cost[0] + w->cost[1];
	return w->window == now - 1 ? w->cost[w->window & 1] : 0;
}

/* Make window now w's latest, dropping what is older than the one
 * before it: FALSE if w had no cost in the window before. */
static gboolean roll(struct share_windows *w, gint64 now)
{
	if (w->window == now)
		return TRUE;
	gboolean before = w->window == now - 1 && w->cost[w->window & 1] > 0;
	if (w->window < now - 1)
		w->cost[(now - 1) & 1] = 0;
	w->cost[now & 1] = 0;
	w->window = now;
	return before;
}

static void roll_totals(struct share_totals *t, gint64 now)
{
	gint64 last = t->all.window;
	roll(&t->all, now);
	if (last == now)
		return;
	if (last < now - 1)
		t->sessions[(now - 1) & 1] = t->again[(now - 1) & 1] = 0;
	t->sessions[now & 1] = t->again[now & 1] = 0;
}

void share_charge(struct share_totals *t, struct share_windows *s, gint64 now_us, gint64 cost_us)
{
	/* Workers charge in the order they get the lock, not of their
	 * clocks: a charge stamped before the latest window goes to it. */
	gint64 now = MAX(now_us / SHARE_WINDOW_US, t->all.window);
	cost_us = MAX(cost_us, 1); /* a request served is a session served */
	roll_totals(t, now);
	if (s->window != now) {
		t->sessions[now & 1]++;
		t->again[now & 1] += roll(s, now);
	}
	s->cost[now & 1] += cost_us;
	t->all.cost[now & 1] += cost_us;
}

unsigned share_sessions(const struct share_totals *t, gint64 now_us)
{
	gint64 now = now_us / SHARE_WINDOW_US;
	/* Those charged in either window, each once. */
	if (t->all.window == now)
		return t->sessions[0] + t->sessions[1] - t->again[now & 1];
	return t->all.window == now - 1 ? t->sessions[(now - 1) & 1] : 0;
}

gboolean share_over(const struct share_totals *t, const struct share_windows *s, gint64 now_us)
{
	gint64 now = now_us / SHARE_WINDOW_US;
	gint64 mine = lately(s, now);
	if (mine < SHARE_FLOOR_US)
		return FALSE;
	unsigned sessions = share_sessions(t, now_us);
	return sessions > 1 && mine * (gint64)sessions > lately(&t->all, now);
}

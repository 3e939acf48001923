/* Taking the views over (from the daemon serving them, --replace, or from
 * the keeper of one that died), and keeping a keeper that holds them all.
 *
 * Who holds the views' fds at each step is in the README ("Upgrading
 * without a remount"); the rule is that the one taken from lets go only
 * once the taker serves everything and its own keeper, holding
 * everything, stands at the keeper's path. */
#include "lifecycle.h"

#include "faults.h"
#include "log.h"

#include <errno.h>

/* How long a taker whose daemon died half-way waits for that daemon's
 * keeper to see it (the keeper hands over only once its daemon is gone). */
#define KEEPER_NOTICE_US (2 * G_USEC_PER_SEC)

gboolean taking_over(const struct daemon_config *cfg)
{
	return cfg->replace || cfg->recover_fd >= 0;
}

/* The keeper of the daemon taken from, once that one is gone: a
 * connection to it, or -1. */
static int keeper_of_the_dead(const char *path)
{
	gint64 until = g_get_monotonic_time() + KEEPER_NOTICE_US;
	int conn;

	while ((conn = keeper_connect(path)) < 0 && g_get_monotonic_time() < until)
		g_usleep(G_USEC_PER_SEC / 50);
	return conn;
}

gboolean takeover_take(struct daemon *d, GError **error)
{
	const struct daemon_config *cfg = d->cfg;

	d->from_keeper = cfg->recover_fd >= 0;
	int r = handover_take(cfg->control_socket, cfg->recover_fd, &d->ho, error);
	if (r == 0)
		return TRUE;
	/* Unless it refused: the daemon taken from may have died half-way,
	 * and its keeper has it all. */
	gboolean refused = r == -EPROTO || r == -EINVAL;
	int conn = d->from_keeper || refused ? -1 : keeper_of_the_dead(cfg->keeper_path);
	if (conn < 0) {
		g_prefix_error(error, "cannot take over %s: ", cfg->mountpoint);
		return FALSE;
	}
	g_message("the daemon taken over from went half-way (%s): taking the views from its keeper", (*error)->message);
	g_clear_error(error);
	d->from_keeper = TRUE;
	if (handover_take(cfg->control_socket, conn, &d->ho, error) == 0)
		return TRUE;
	g_prefix_error(error, "cannot take over %s from the keeper: ", cfg->mountpoint);
	return FALSE;
}

void takeover_resume(struct daemon *d)
{
	struct handover *ho = &d->ho;
	guint resumed = 0;

	/* What is not taken, handover_clear closes. */
	for (guint i = 1; i < ho->sessions->len && d->containers; i++)
		if (containers_resume(d->containers, ho, i, d->from_keeper) == 0)
			resumed++;
	if (resumed + 1 < ho->sessions->len)
		g_warning("%u container view(s) could not be taken over: they stop working now",
			  ho->sessions->len - 1 - resumed);
	if (d->from_keeper)
		recover_entries(d->host, d->proc_fd);
	fault_point("take-resumed");
}

void takeover_done(struct daemon *d)
{
	handover_done(&d->ho);
	fault_point("take-serving");
	g_message("took over the host view and %u container view(s) from %s", d->ho.sessions->len - 1,
		  d->from_keeper ? "the keeper of a daemon that died" : "the running daemon");
}

/* Give the keeper every view and the control socket, and publish it. */
static int keep_all(struct daemon *d, GError **error)
{
	/* INIT was answered by now (the .real mount, or the one before). */
	keeper_keep(d->keeper, 0, session_proto_minor(d->host), session_fuse_fd(d->host), -1);
	containers_keep_all(d->containers);
	return keeper_publish(d->keeper, error);
}

void daemon_keep_all(struct daemon *d)
{
	g_autoptr(GError) error = NULL;

	if (keep_all(d, &error) == 0)
		return;
	/* Its keeper may have died meanwhile: once more, with another. */
	if (keeper_respawn_if_gone(d->keeper)) {
		g_clear_error(&error);
		if (keep_all(d, &error) == 0)
			return;
	}
	log_warning_consequence(g_steal_pointer(&error), "the views end if this daemon dies");
}

void daemon_mind_keeper(struct daemon *d)
{
	if (keeper_respawn_if_gone(d->keeper))
		daemon_keep_all(d);
}

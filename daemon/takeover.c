/* Taking the views over (from the daemon serving them, --replace, or from
 * the keeper of one that died), and keeping a keeper that holds them all.
 *
 * Who holds the views' fds at each step is in the README ("Upgrading
 * without a remount"); the rule is that the one taken from lets go only
 * once the taker serves everything and its own keeper, holding
 * everything, stands at the keeper's path. */
#include "lifecycle.h"

#include "cleanup.h"
#include "faults.h"
#include "log.h"

#include <errno.h>
#include <poll.h>
#include <unistd.h>
#ifdef HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>
#endif

/* How long a taker whose daemon died half-way waits for that daemon's
 * keeper to see it (the keeper hands over only once its daemon is gone). */
#define KEEPER_NOTICE_US (2 * G_USEC_PER_SEC)
/* How often a taker waiting for the daemon's first answer asks its keeper. */
#define ANSWER_SLICE_MS 200

gboolean taking_over(const struct daemon_config *cfg)
{
	return cfg->replace || cfg->recover_fd >= 0;
}

/* The keeper of the daemon taken from, once that one is gone: a
 * connection to it, or -errno. */
static int keeper_of_the_dead(const char *path)
{
	gint64 until = g_get_monotonic_time() + KEEPER_NOTICE_US;
	int conn;

	while ((conn = keeper_connect(path)) < 0 && g_get_monotonic_time() < until)
		g_usleep(G_USEC_PER_SEC / 50);
	return conn;
}

/* Ask the daemon at the control socket for the views: the connection
 * once it said ok, or, if it dies first, its keeper's (*ret_from_keeper):
 * its keeper holds the socket, so a request can wait in its queue for a
 * daemon that is gone; the keeper is asked every ANSWER_SLICE_MS, and
 * answers only once its daemon is. -errno with *error (-EPROTO: refused). */
static int ask_for_views(const struct daemon_config *cfg, gboolean *ret_from_keeper, GError **error)
{
	gint64 until = g_get_monotonic_time() + (gint64)CONTROL_TIMEOUT_S * G_USEC_PER_SEC;
	struct control_msg answer;

	_cleanup_close_ int conn = control_connect(cfg->control_socket, 0, error);
	int r = conn < 0 ? conn : control_send_word(conn, CONTROL_HANDOVER, error);
	while (r == 0) {
		struct pollfd p = { .fd = conn, .events = POLLIN };
		if (poll(&p, 1, ANSWER_SLICE_MS) > 0)
			break;
		int keeper = keeper_connect(cfg->keeper_path);
		if (keeper >= 0) {
			*ret_from_keeper = TRUE;
			return keeper;
		}
		if (g_get_monotonic_time() > until)
			r = log_set_message(error, "the running daemon did not answer in %d s", CONTROL_TIMEOUT_S);
	}
	if (r == 0)
		r = control_receive(conn, CONTROL_WORD(CONTROL_OK) | CONTROL_WORD(CONTROL_ERROR), &answer, error);
	if (r == 0 && (answer.word == CONTROL_ERROR || answer.n_fds > 0)) {
		log_set_message(error, "refused: %s", answer.word == CONTROL_ERROR ? answer.reason : "an fd with ok");
		control_close_fds(&answer);
		r = -EPROTO;
	}
	if (r < 0) {
		g_prefix_error(error, "the running daemon did not hand over: ");
		return r;
	}
	return steal_fd(&conn);
}

/* The views, from the dead daemon's keeper: after what went wrong with
 * the daemon (*error, cleared once the keeper answers). */
static gboolean take_from_keeper(struct daemon *d, GError **error)
{
	int conn = keeper_of_the_dead(d->cfg->keeper_path);
	if (conn < 0)
		return FALSE;
	g_message("the daemon taken over from is gone (%s): taking the views from its keeper", (*error)->message);
	g_clear_error(error);
	d->from_keeper = TRUE;
	return handover_take(conn, &d->ho, error) == 0;
}

gboolean takeover_take(struct daemon *d, GError **error)
{
	const struct daemon_config *cfg = d->cfg;

	d->from_keeper = cfg->recover_fd >= 0;
	int conn = d->from_keeper ? cfg->recover_fd : ask_for_views(cfg, &d->from_keeper, error);
	int r = conn < 0 ? conn : handover_take(conn, &d->ho, error);
	/* Unless it refused (it serves on): the daemon taken from may have
	 * died half-way, and its keeper has it all. */
	if (r < 0 && !d->from_keeper && r != -EPROTO && r != -EINVAL && take_from_keeper(d, error))
		r = 0;
	if (r < 0)
		g_prefix_error(error, "cannot take over %s: ", cfg->mountpoint);
	else /* a running daemon's has no request in hand: its PSI triggers */
		server_answer_taken_from(d->server, steal_fd(&d->ho.inflight));
	return r == 0;
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
#ifdef HAVE_LIBSYSTEMD
	/* Under a service manager (a reload: cgprocfs --reload), this daemon
	 * is the unit's main process from now on; said before the daemon
	 * taken from hears "serving" and exits. */
	if (!d->from_keeper)
		sd_notifyf(0, "MAINPID=%d", (int)getpid());
#endif
	handover_done(&d->ho);
	fault_point("take-serving");
	g_message("took over the host view and %u container view(s) from %s", d->ho.sessions->len - 1,
		  d->from_keeper ? "the keeper of a daemon that died" : "the running daemon");
}

void takeover_abandon(struct daemon *d)
{
	GError *error = NULL;
	log_set_message(&error, "no keeper of this daemon's can be found by a new daemon: the views are left to %s",
			d->from_keeper ? "the keeper they came from" : "the daemon they came from, which serves on");
	log_failure(error);
	server_pause(d->server);
	handover_clear(&d->ho); /* closed: the other side sees it */
	_exit(1);
}

/* Give the keeper every view and the control socket, and publish it. */
static int keep_all(struct daemon *d, GError **error)
{
	/* INIT was answered by now (the .real mount, or the one before). */
	keeper_keep(d->keeper, 0, session_proto_minor(d->host), session_fuse_fd(d->host), -1);
	keeper_keep_inflight(d->keeper, server_inflight_fd(d->server));
	containers_keep_all(d->containers);
	if (d->sysinfo)
		sysinfo_listener_keep_all(d->sysinfo);
	fault_point("keep-unpublished"); /* the keeper holds views no new daemon can find */
	return keeper_publish(d->keeper, error);
}

gboolean daemon_keep_all(struct daemon *d)
{
	g_autoptr(GError) error = NULL;

	if (keep_all(d, &error) == 0)
		return TRUE;
	/* Its keeper may have died (or been killed, not answering) meanwhile:
	 * once more, with another. */
	if (keeper_needs_everything(d->keeper)) {
		g_clear_error(&error);
		if (keep_all(d, &error) == 0)
			return TRUE;
	}
	log_warning_consequence(g_steal_pointer(&error), "the views end if this daemon dies (trying again within "
				"seconds)");
	return FALSE;
}

void daemon_mind_keeper(struct daemon *d)
{
	if (keeper_needs_everything(d->keeper) && daemon_keep_all(d))
		g_message("the keeper holds every view again");
}

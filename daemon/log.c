/* One log for the daemon: glib's, libfuse's and ours, one line each on stderr. */
#include "log.h"

#include <errno.h>
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <string.h>

G_DEFINE_QUARK(cgprocfs-error-quark, cgprocfs_error)

static gboolean debug_enabled;

static GLogWriterOutput log_writer(GLogLevelFlags level, const GLogField *fields, gsize n_fields,
				   gpointer data)
{
	const char *message = NULL;
	const char *prefix = "";

	if ((level & G_LOG_LEVEL_DEBUG) && !debug_enabled)
		return G_LOG_WRITER_HANDLED;
	for (gsize i = 0; i < n_fields; i++)
		if (strcmp(fields[i].key, "MESSAGE") == 0)
			message = fields[i].value;
	if (level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL))
		prefix = "error: ";
	else if (level & G_LOG_LEVEL_WARNING)
		prefix = "warning: ";
	else if (level & G_LOG_LEVEL_DEBUG)
		prefix = "debug: ";
	fprintf(stderr, "cgprocfs: %s%s\n", prefix, message ? message : "");
	return G_LOG_WRITER_HANDLED;
}

/* libfuse's own messages go to the same log. */
G_GNUC_PRINTF(2, 0)
static void fuse_log_to_glib(enum fuse_log_level level, const char *fmt, va_list ap)
{
	g_autofree char *text = g_strdup_vprintf(fmt, ap);
	g_strchomp(text);
	if (level <= FUSE_LOG_ERR)
		g_warning("fuse: %s", text);
	else if (level <= FUSE_LOG_INFO)
		g_message("fuse: %s", text);
	else
		g_debug("fuse: %s", text);
}

void log_setup(gboolean debug)
{
	static gsize installed;

	debug_enabled = debug;
	/* glib takes a writer once per process; later calls only set debug. */
	if (g_once_init_enter(&installed)) {
		g_log_set_writer_func(log_writer, NULL, NULL);
		fuse_set_log_func(fuse_log_to_glib);
		g_once_init_leave(&installed, 1);
	}
}

int log_set_error(GError **error, int negative_errno, const char *fmt, ...)
{
	va_list ap;
	if (error) {
		va_start(ap, fmt);
		g_autofree char *text = g_strdup_vprintf(fmt, ap);
		va_end(ap);
		g_set_error(error, CGPROCFS_ERROR, -negative_errno, "%s: %s", text, g_strerror(-negative_errno));
	}
	return negative_errno;
}

int log_set_message(GError **error, const char *fmt, ...)
{
	va_list ap;
	if (error) {
		va_start(ap, fmt);
		g_autofree char *text = g_strdup_vprintf(fmt, ap);
		va_end(ap);
		g_set_error_literal(error, CGPROCFS_ERROR, EINVAL, text);
	}
	return -EINVAL;
}

void log_failure(GError *err)
{
	g_critical("%s", err->message);
	g_error_free(err);
}

void log_warning_consequence(GError *err, const char *consequence_fmt, ...)
{
	va_list ap;
	va_start(ap, consequence_fmt);
	g_autofree char *consequence = g_strdup_vprintf(consequence_fmt, ap);
	va_end(ap);
	g_warning("%s: %s", err->message, consequence);
	g_error_free(err);
}

/* The daemon's one way to report what a person must read.
 *
 * The error convention of the whole tree (see README, "For contributors"):
 *  - Functions return 0 (or a value) on success and -errno on failure.
 *    fs/ stops there: it never logs above debug level and never aborts.
 *  - In daemon/, a function whose failure a person must understand takes a
 *    GError **error as its last argument, sets it with log_set_error()
 *    (domain CGPROCFS_ERROR, code: the errno) and returns -errno or FALSE.
 *    Callers add context with g_prefix_error() on the way up.
 *  - Whoever decides what happens next logs it once: log_failure() for a
 *    GError, or g_message/g_warning. Everything goes through glib's log,
 *    written by log_setup()'s writer as one line on stderr: "cgprocfs: ...",
 *    "cgprocfs: warning: ...", "cgprocfs: error: ...".
 *  - Nothing a request, a container or a kernel answer can cause aborts the
 *    daemon: g_error() and abort() are not used. */
#pragma once

#include <glib.h>

#define CGPROCFS_ERROR (cgprocfs_error_quark())
GQuark cgprocfs_error_quark(void);

/* Route glib's and libfuse's messages to stderr, one line each; debug
 * messages only when debug is TRUE. Called again, it only sets debug. */
void log_setup(gboolean debug);

/* Set *error (if error is not NULL) to "<printf text>: <strerror(-negative_errno)>",
 * code -negative_errno. Returns negative_errno, for "return log_set_error(...)". */
G_GNUC_PRINTF(3, 4)
int log_set_error(GError **error, int negative_errno, const char *fmt, ...);

/* Set *error to the printf text alone (no errno text), code EINVAL. Returns -EINVAL. */
G_GNUC_PRINTF(2, 3)
int log_set_message(GError **error, const char *fmt, ...);

/* Log err as an error ("cgprocfs: error: <message>"), then free it. */
void log_failure(GError *err);
/* Log err as a warning, with what follows from it ("<message>: <consequence>"), then free it. */
G_GNUC_PRINTF(2, 3)
void log_warning_consequence(GError *err, const char *consequence_fmt, ...);

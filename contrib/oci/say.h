/* What the hook and the runtime wrapper say when a container will not
 * get the view (or its sysinfo): a runtime shows their stderr only when
 * they fail, and they never do, so each line goes to the system log (the
 * journal) too. */
#pragma once

#include <glib.h>

/* "PROG: TEXT" on stderr; "container ID: TEXT" in the system log under
 * PROG (ID "?" if NULL). */
G_GNUC_PRINTF(3, 4)
void oci_say(const char *prog, const char *id, const char *fmt, ...);

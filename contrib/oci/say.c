/* say.h: one line on stderr and in the system log. */
#include "say.h"

#include <stdio.h>
#include <syslog.h>

void oci_say(const char *prog, const char *id, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *text = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s\n", prog, text);
	openlog(prog, LOG_PID, LOG_DAEMON);
	syslog(LOG_WARNING, "container %s: %s", id ? id : "?", text);
	closelog();
}

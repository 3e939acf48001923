/* Fault injection (faults.h). */
#include "faults.h"

#include <glib.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static const char *fault_role = "daemon";

void fault_set_role(const char *role)
{
	fault_role = role;
}

void fault_point(const char *point)
{
	const char *want = g_getenv("CGPROCFS_FAULT");
	const char *colon = want ? strchr(want, ':') : NULL;

	if (!colon || strncmp(want, fault_role, (size_t)(colon - want)) != 0 || fault_role[colon - want] != '\0' ||
	    strcmp(colon + 1, point) != 0)
		return;
	g_message("fault injected: the %s SIGKILLs itself at %s", fault_role, point);
	kill(getpid(), SIGKILL);
}

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

gboolean fault_armed(void)
{
	static gsize armed;
	if (g_once_init_enter(&armed))
		g_once_init_leave(&armed, g_getenv("CGPROCFS_FAULT") ? 2 : 1);
	return armed == 2;
}

/* What CGPROCFS_FAULT asks of this process at point: "" (SIGKILL) or
 * "=stop"; NULL if nothing. */
static const char *fault_action(const char *point)
{
	const char *want = g_getenv("CGPROCFS_FAULT");
	size_t role_len = strlen(fault_role), point_len = strlen(point);

	if (!want || strncmp(want, fault_role, role_len) != 0 || want[role_len] != ':' ||
	    strncmp(want + role_len + 1, point, point_len) != 0)
		return NULL;
	const char *action = want + role_len + 1 + point_len;
	return *action == '\0' || strcmp(action, "=stop") == 0 ? action : NULL;
}

gboolean fault_wanted(const char *point)
{
	return fault_armed() && fault_action(point) != NULL;
}

void fault_point(const char *point)
{
	const char *action = fault_action(point);
	if (!action)
		return;
	if (strcmp(action, "=stop") == 0) {
		g_message("fault injected: the %s stops itself (SIGSTOP) at %s", fault_role, point);
		kill(getpid(), SIGSTOP);
	} else if (*action == '\0') {
		g_message("fault injected: the %s SIGKILLs itself at %s", fault_role, point);
		kill(getpid(), SIGKILL);
	}
}

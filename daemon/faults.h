/* Fault injection, for the tests of the handover and the keeper
 * (tests/integration/test_handover.py, the soak): with
 * CGPROCFS_FAULT=<role>:<point> in its environment, the process of that
 * role (daemon or keeper) that reaches the point of that name says so in
 * the log and SIGKILLs itself there; with <role>:<point>=stop, it stops
 * itself (SIGSTOP) there, for the test to go on with. Unset, as outside
 * those tests, fault_point does nothing. */
#pragma once

#include <glib.h>

/* This process's role from now on ("daemon" until set): a static string. */
void fault_set_role(const char *role);
void fault_point(const char *point);
/* Whether this process's role is asked to die at point (for a point
 * that must be made ready before it is reached). */
gboolean fault_wanted(const char *point);
/* Whether a fault is asked for at all (read once): for points on the
 * serving path. */
gboolean fault_armed(void);

/* cgprocfs-runtime's edits of an OCI config.json (json-glib), and the one
 * that gives a container's sysinfo(2) and sched_getaffinity(2) to the
 * daemon: the seccomp profile notifies them to the daemon's listener
 * (daemon/sysinfo.c) instead of allowing them, and nothing else changes. */
#pragma once

#include <json-glib/json-glib.h>

/* The member key of o as an object or array (made if missing), or NULL if
 * it is there as anything else. */
JsonNode *json_member_of_type(JsonObject *o, const char *key, JsonNodeType type);

/* Have config's linux.seccomp notify the calls names[0 .. n-1] (sysinfo,
 * sched_getaffinity) to the listener at path, each decided alone: where
 * the profile plainly allows it (by an unconditional SCMP_ACT_ALLOW
 * rule, taken out of that rule, or by its default action), it goes into
 * one SCMP_ACT_NOTIFY rule, and linux.seccomp.listenerPath is set; a
 * config with no profile gets one that allows everything else. The
 * profile's architectures stay as they are. Never more permissive: a call
 * the profile denies, or allows only on conditions, is left as it is (a
 * static text in why[i] says why; NULL for each call notified), as is
 * every call of a profile that names a listenerPath already (another
 * agent's). TRUE if edited (one call at least). */
gboolean seccomp_notify_calls(JsonObject *config, const char *path, const char *const *names, guint n,
			      const char **why);

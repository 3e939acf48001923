/* cgprocfs-runtime's edits of an OCI config.json (json-glib), and the one
 * that gives a container's sysinfo(2) to the daemon: the seccomp profile
 * notifies it to the daemon's listener (daemon/sysinfo.c) instead of
 * allowing it, and nothing else changes. */
#pragma once

#include <json-glib/json-glib.h>

/* The member key of o as an object or array (made if missing), or NULL if
 * it is there as anything else. */
JsonNode *json_member_of_type(JsonObject *o, const char *key, JsonNodeType type);

/* Have config's linux.seccomp notify sysinfo(2) to the listener at path:
 * where the profile plainly allows it (by an unconditional
 * SCMP_ACT_ALLOW rule, taken out of that rule, or by its default
 * action), one SCMP_ACT_NOTIFY rule for it and linux.seccomp.listenerPath;
 * a config with no profile gets one that allows everything else. The
 * profile's architectures stay as they are. Never more permissive: a
 * profile that denies sysinfo, or allows it only on conditions, is left
 * as it is, as is one that names a listenerPath already (another
 * agent's). TRUE if edited; FALSE with *why (a static text) if left. */
gboolean seccomp_notify_sysinfo(JsonObject *config, const char *path, const char **why);

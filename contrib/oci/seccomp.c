#include "seccomp.h"

#include <string.h>

#define SYSCALL "sysinfo"
#define ALLOW "SCMP_ACT_ALLOW"

JsonNode *json_member_of_type(JsonObject *o, const char *key, JsonNodeType type)
{
	if (!json_object_has_member(o, key)) {
		JsonNode *made = json_node_new(type);
		if (type == JSON_NODE_OBJECT)
			json_node_take_object(made, json_object_new());
		else
			json_node_take_array(made, json_array_new());
		json_object_set_member(o, key, made);
	}
	JsonNode *n = json_object_get_member(o, key);
	return JSON_NODE_TYPE(n) == type ? n : NULL;
}

/* The string member key of o, or NULL. */
static const char *string_member(JsonObject *o, const char *key)
{
	JsonNode *n = json_object_get_member(o, key);
	return n && JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_STRING ? json_node_get_string(n)
											 : NULL;
}

/* The index of SYSCALL in a rule's names, or -1. */
static int sysinfo_at(JsonObject *rule)
{
	JsonNode *names = json_object_get_member(rule, "names");
	JsonArray *a = names && JSON_NODE_HOLDS_ARRAY(names) ? json_node_get_array(names) : NULL;
	for (guint i = 0; a && i < json_array_get_length(a); i++) {
		JsonNode *n = json_array_get_element(a, i);
		if (JSON_NODE_HOLDS_VALUE(n) && g_strcmp0(json_node_get_string(n), SYSCALL) == 0)
			return (int)i;
	}
	return -1;
}

/* Whether a rule naming sysinfo plainly allows it: ALLOW, with no
 * conditions on its arguments. */
static gboolean plainly_allows(JsonObject *rule)
{
	JsonNode *args = json_object_get_member(rule, "args");
	gboolean conditional = args && !JSON_NODE_HOLDS_NULL(args) &&
			       (!JSON_NODE_HOLDS_ARRAY(args) || json_array_get_length(json_node_get_array(args)) > 0);
	return g_strcmp0(string_member(rule, "action"), ALLOW) == 0 && !conditional;
}

/* A new profile: everything allowed, for every architecture the kernel
 * runs here. */
static JsonObject *allow_all(void)
{
	JsonObject *p = json_object_new();
	json_object_set_string_member(p, "defaultAction", ALLOW);
	JsonArray *arches = json_array_new();
	json_array_add_string_element(arches, "SCMP_ARCH_X86_64");
	json_array_add_string_element(arches, "SCMP_ARCH_X86");
	json_array_add_string_element(arches, "SCMP_ARCH_X32");
	json_object_set_array_member(p, "architectures", arches);
	return p;
}

/* Whether profile p lets sysinfo be notified (see seccomp.h); *why if not. */
static gboolean may_notify(JsonObject *p, JsonArray *rules, const char **why)
{
	const char *listener = string_member(p, "listenerPath");
	if (listener && *listener)
		return *why = "the seccomp profile has a listenerPath already (another agent's): sysinfo(2) is left to it",
		       FALSE;
	gboolean allowed = g_strcmp0(string_member(p, "defaultAction"), ALLOW) == 0;
	for (guint i = 0; i < json_array_get_length(rules); i++) {
		JsonNode *r = json_array_get_element(rules, i);
		if (!JSON_NODE_HOLDS_OBJECT(r))
			return *why = "the seccomp profile is not OCI's", FALSE;
		if (sysinfo_at(json_node_get_object(r)) < 0)
			continue;
		if (!plainly_allows(json_node_get_object(r)))
			return *why = "the seccomp profile does not plainly allow sysinfo(2): it stays as it is", FALSE;
		allowed = TRUE;
	}
	return allowed || (*why = "the seccomp profile does not allow sysinfo(2): it stays as it is", FALSE);
}

gboolean seccomp_notify_sysinfo(JsonObject *config, const char *path, const char **why)
{
#ifndef __x86_64__
	return *why = "sysinfo(2) is answered on x86-64 only", FALSE;
#endif
	JsonNode *linux_node = json_member_of_type(config, "linux", JSON_NODE_OBJECT);
	if (!linux_node)
		return *why = "config.json's linux is not an object", FALSE;
	JsonObject *linux_object = json_node_get_object(linux_node);
	if (!json_object_has_member(linux_object, "seccomp") ||
	    JSON_NODE_HOLDS_NULL(json_object_get_member(linux_object, "seccomp")))
		json_object_set_object_member(linux_object, "seccomp", allow_all());
	JsonNode *profile = json_member_of_type(linux_object, "seccomp", JSON_NODE_OBJECT);
	JsonNode *list = profile ? json_member_of_type(json_node_get_object(profile), "syscalls", JSON_NODE_ARRAY) : NULL;
	if (!list)
		return *why = "the seccomp profile is not OCI's", FALSE;
	JsonObject *p = json_node_get_object(profile);
	JsonArray *rules = json_node_get_array(list);
	if (!may_notify(p, rules, why))
		return FALSE;
	/* A later rule for a call that has one is dropped (libseccomp): the
	 * allowing rules let go of it first. */
	for (guint i = json_array_get_length(rules); i-- > 0;) {
		JsonObject *r = json_array_get_object_element(rules, i);
		int at = sysinfo_at(r);
		if (at < 0)
			continue;
		JsonArray *names = json_object_get_array_member(r, "names");
		json_array_remove_element(names, (guint)at);
		if (json_array_get_length(names) == 0)
			json_array_remove_element(rules, i);
	}
	JsonObject *notify = json_object_new();
	JsonArray *names = json_array_new();
	json_array_add_string_element(names, SYSCALL);
	json_object_set_array_member(notify, "names", names);
	json_object_set_string_member(notify, "action", "SCMP_ACT_NOTIFY");
	json_array_add_object_element(rules, notify);
	json_object_set_string_member(p, "listenerPath", path);
	return TRUE;
}

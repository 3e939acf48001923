#include "seccomp.h"

#include <string.h>

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

/* The index of name in a rule's names, or -1. */
static int call_at(JsonObject *rule, const char *name)
{
	JsonNode *names = json_object_get_member(rule, "names");
	JsonArray *a = names && JSON_NODE_HOLDS_ARRAY(names) ? json_node_get_array(names) : NULL;
	for (guint i = 0; a && i < json_array_get_length(a); i++) {
		JsonNode *n = json_array_get_element(a, i);
		if (JSON_NODE_HOLDS_VALUE(n) && g_strcmp0(json_node_get_string(n), name) == 0)
			return (int)i;
	}
	return -1;
}

/* Whether a rule naming a call plainly allows it: ALLOW, with no
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

/* Whether profile p's rules (each an object) let name be notified (see
 * seccomp.h): NULL, or why not. */
static const char *refusal(JsonObject *p, JsonArray *rules, const char *name)
{
	gboolean allowed = g_strcmp0(string_member(p, "defaultAction"), ALLOW) == 0;
	for (guint i = 0; i < json_array_get_length(rules); i++) {
		JsonObject *r = json_array_get_object_element(rules, i);
		if (call_at(r, name) < 0)
			continue;
		if (!plainly_allows(r))
			return "the seccomp profile does not plainly allow it: it stays as it is";
		allowed = TRUE;
	}
	return allowed ? NULL : "the seccomp profile does not allow it: it stays as it is";
}

/* Whether the profile may be edited at all; else each why[i] says why not. */
static gboolean editable(JsonObject *p, JsonArray *rules, guint n, const char **why)
{
	const char *listener = string_member(p, "listenerPath");
	const char *no = NULL;
	if (listener && *listener)
		no = "the seccomp profile has a listenerPath already (another agent's): it is left to it";
	for (guint i = 0; !no && i < json_array_get_length(rules); i++)
		if (!JSON_NODE_HOLDS_OBJECT(json_array_get_element(rules, i)))
			no = "the seccomp profile is not OCI's";
	for (guint i = 0; no && i < n; i++)
		why[i] = no;
	return !no;
}

/* Take name out of every rule naming it (a rule left with no name goes). */
static void let_go(JsonArray *rules, const char *name)
{
	for (guint i = json_array_get_length(rules); i-- > 0;) {
		JsonObject *r = json_array_get_object_element(rules, i);
		int at = call_at(r, name);
		if (at < 0)
			continue;
		JsonArray *names = json_object_get_array_member(r, "names");
		json_array_remove_element(names, (guint)at);
		if (json_array_get_length(names) == 0)
			json_array_remove_element(rules, i);
	}
}

/* config's seccomp profile (one made that allows everything, if it has
 * none) and its rules; NULL with *why if they are not OCI's. */
static JsonObject *profile_of(JsonObject *config, JsonArray **ret_rules, const char **why)
{
	JsonNode *linux_node = json_member_of_type(config, "linux", JSON_NODE_OBJECT);
	if (!linux_node)
		return *why = "config.json's linux is not an object", NULL;
	JsonObject *linux_object = json_node_get_object(linux_node);
	if (!json_object_has_member(linux_object, "seccomp") ||
	    JSON_NODE_HOLDS_NULL(json_object_get_member(linux_object, "seccomp")))
		json_object_set_object_member(linux_object, "seccomp", allow_all());
	JsonNode *profile = json_member_of_type(linux_object, "seccomp", JSON_NODE_OBJECT);
	JsonNode *list = profile ? json_member_of_type(json_node_get_object(profile), "syscalls", JSON_NODE_ARRAY) : NULL;
	if (!list)
		return *why = "the seccomp profile is not OCI's", NULL;
	*ret_rules = json_node_get_array(list);
	return json_node_get_object(profile);
}

gboolean seccomp_notify_calls(JsonObject *config, const char *path, const char *const *names, guint n,
			      const char **why)
{
	for (guint i = 0; i < n; i++)
		why[i] = NULL;
#ifndef __x86_64__
	for (guint i = 0; i < n; i++)
		why[i] = "answered on x86-64 only";
	return FALSE;
#endif
	JsonArray *rules = NULL;
	JsonObject *p = profile_of(config, &rules, &why[0]);
	for (guint i = 1; !p && i < n; i++)
		why[i] = why[0];
	if (!p || !editable(p, rules, n, why))
		return FALSE;
	JsonArray *notified = json_array_new();
	for (guint i = 0; i < n; i++)
		if (!(why[i] = refusal(p, rules, names[i])))
			json_array_add_string_element(notified, names[i]);
	if (json_array_get_length(notified) == 0) {
		json_array_unref(notified);
		return FALSE;
	}
	/* A later rule for a call that has one is dropped (libseccomp): the
	 * allowing rules let go of it first. */
	for (guint i = 0; i < n; i++)
		if (!why[i])
			let_go(rules, names[i]);
	JsonObject *notify = json_object_new();
	json_object_set_array_member(notify, "names", notified);
	json_object_set_string_member(notify, "action", "SCMP_ACT_NOTIFY");
	json_array_add_object_element(rules, notify);
	json_object_set_string_member(p, "listenerPath", path);
	return TRUE;
}

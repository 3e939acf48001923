#include "ocijson.h"

#include <errno.h>
#include <string.h>

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

/* The string at p (at its opening quote): its text, *end after it; NULL if
 * p is no string. */
static char *string_at(const char *p, const char **end)
{
	GString *out = g_string_new(NULL);
	if (*p++ != '"') {
		g_string_free(out, TRUE);
		return NULL;
	}
	for (; *p && *p != '"'; p++) {
		if (*p != '\\') {
			g_string_append_c(out, *p);
			continue;
		}
		switch (*++p) {
		case 'n': g_string_append_c(out, '\n'); break;
		case 't': g_string_append_c(out, '\t'); break;
		case 'u': /* not in paths we read: keep it as it is */
			g_string_append(out, "\\u");
			break;
		case '\0':
			g_string_free(out, TRUE);
			return NULL;
		default: g_string_append_c(out, *p); break;
		}
	}
	if (*p != '"') {
		g_string_free(out, TRUE);
		return NULL;
	}
	*end = p + 1;
	return g_string_free(out, FALSE);
}

/* Walk the object at p: where a member is named key, set *ret_value to its
 * value and stop there; else return the end of the object. NULL if the
 * text is not an object. */
static const char *walk_object(const char *p, const char *key, const char **ret_value)
{
	p = skip_ws(p);
	if (*p != '{')
		return NULL;
	p = skip_ws(p + 1);
	while (*p == '"') {
		const char *end;
		g_autofree char *k = string_at(p, &end);
		if (!k)
			return NULL;
		p = skip_ws(end);
		if (*p != ':')
			return NULL;
		p = skip_ws(p + 1);
		if (key && strcmp(k, key) == 0) {
			*ret_value = p;
			return p;
		}
		p = ocijson_skip(p);
		if (!p)
			return NULL;
		p = skip_ws(p);
		if (*p != ',')
			break;
		p = skip_ws(p + 1);
		if (*p != '"') /* no trailing comma */
			return NULL;
	}
	return *p == '}' ? p + 1 : NULL;
}

const char *ocijson_skip(const char *p)
{
	p = skip_ws(p);
	if (*p == '"') {
		const char *end;
		g_autofree char *s = string_at(p, &end);
		return s ? end : NULL;
	}
	if (*p == '{')
		return walk_object(p, NULL, NULL);
	if (*p == '[') {
		p = skip_ws(p + 1);
		while (*p != ']') {
			p = ocijson_skip(p);
			if (!p)
				return NULL;
			p = skip_ws(p);
			if (*p == ',' && *skip_ws(p + 1) != ']') /* no trailing comma */
				p = skip_ws(p + 1);
			else if (*p != ']')
				return NULL;
		}
		return p + 1;
	}
	const char *start = p;
	while (*p && !strchr(",}] \t\r\n", *p))
		p++;
	return p > start ? p : NULL;
}

const char *ocijson_get(const char *p, const char *key)
{
	const char *value = NULL;
	return p && walk_object(p, key, &value) ? value : NULL;
}

char *ocijson_get_string(const char *p, const char *key)
{
	const char *end;
	const char *v = ocijson_get(p, key);
	return v ? string_at(v, &end) : NULL;
}

void ocijson_quote(GString *out, const char *s)
{
	g_string_append_c(out, '"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			g_string_append_c(out, '\\');
		if ((unsigned char)*s < 0x20)
			g_string_append_printf(out, "\\u%04x", (unsigned)*s);
		else
			g_string_append_c(out, *s);
	}
	g_string_append_c(out, '"');
}

/* Whether the list at p (at its '[') has an object whose "path" is path. */
static gboolean list_has_path(const char *p, const char *path)
{
	p = skip_ws(p + 1);
	while (p && *p && *p != ']') {
		g_autofree char *have = *p == '{' ? ocijson_get_string(p, "path") : NULL;
		if (have && strcmp(have, path) == 0)
			return TRUE;
		p = ocijson_skip(p);
		if (p && *(p = skip_ws(p)) == ',')
			p = skip_ws(p + 1);
	}
	return FALSE;
}

/* config with member (text) put first in the object whose '{' is at open. */
static char *insert_member(const char *config, const char *open, const char *member)
{
	gboolean empty = *skip_ws(open + 1) == '}';
	size_t at = (size_t)(open + 1 - config);
	return g_strdup_printf("%.*s%s%s%s", (int)at, config, member, empty ? "" : ",", config + at);
}

int ocijson_add_hook(const char *config, const char *stage, const char *entry, const char *path, char **ret)
{
	const char *root = skip_ws(config);
	if (*root != '{' || !ocijson_skip(root))
		return -EINVAL;
	g_autoptr(GString) member = g_string_new(NULL);
	const char *hooks = ocijson_get(root, "hooks");
	if (!hooks) {
		g_string_append(member, "\"hooks\":{");
		ocijson_quote(member, stage);
		g_string_append_printf(member, ":[%s]}", entry);
		*ret = insert_member(config, root, member->str);
		return 1;
	}
	if (*hooks != '{')
		return -EINVAL;
	const char *list = ocijson_get(hooks, stage);
	if (!list) {
		ocijson_quote(member, stage);
		g_string_append_printf(member, ":[%s]", entry);
		*ret = insert_member(config, hooks, member->str);
		return 1;
	}
	const char *end = ocijson_skip(list);
	if (*list != '[' || !end)
		return -EINVAL;
	if (list_has_path(list, path)) {
		*ret = NULL;
		return 0;
	}
	/* Before the closing bracket: after the last entry, if any. */
	size_t at = (size_t)(end - 1 - config);
	gboolean empty = *skip_ws(list + 1) == ']';
	*ret = g_strdup_printf("%.*s%s%s%s", (int)at, config, empty ? "" : ",", entry, config + at);
	return 1;
}

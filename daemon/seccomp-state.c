/* What the seccomp listener (sysinfo.c) reads from its peers: a runtime's
 * state, a caller's mappings. */
#include "seccomp-state.h"

#include <json-glib/json-glib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The fd named "seccompFd" among fds, by the state's "fds" list; the rest
 * closed. -1 if there is none. */
int seccomp_fd_of(const char *state, gsize len, GArray *fds)
{
	g_autoptr(JsonParser) parser = json_parser_new();
	int found = -1;
	JsonNode *root = json_parser_load_from_data(parser, state, (gssize)len, NULL) ? json_parser_get_root(parser)
										       : NULL;
	if (root && JSON_NODE_HOLDS_OBJECT(root)) {
		JsonObject *o = json_node_get_object(root);
		JsonNode *list = json_object_get_member(o, "fds");
		JsonArray *names = list && JSON_NODE_HOLDS_ARRAY(list) ? json_node_get_array(list) : NULL;
		for (guint i = 0; names && i < json_array_get_length(names) && i < fds->len; i++) {
			JsonNode *n = json_array_get_element(names, i);
			if (found < 0 && JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_STRING &&
			    strcmp(json_node_get_string(n), "seccompFd") == 0)
				found = g_array_index(fds, int, i);
		}
	}
	for (guint i = 0; i < fds->len; i++)
		if (g_array_index(fds, int, i) != found)
			close(g_array_index(fds, int, i));
	return found;
}

/* Are the len bytes at addr in mappings the process may write, as maps
 * (its /proc/<pid>/maps) says? /proc/<pid>/mem writes read-only private
 * pages as well (FOLL_FORCE), where the kernel's own sysinfo(2) fails
 * with EFAULT: such a call is left to the kernel. */
gboolean seccomp_writable(int maps, uint64_t addr, size_t len)
{
	int fd = dup(maps);
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
		return FALSE;
	}
	g_autofree char *line = NULL;
	size_t size = 0;
	uint64_t want = addr, end = addr + len; /* the first byte not yet found writable */
	while (want < end && getline(&line, &size, f) > 0) {
		unsigned long long from, to;
		char perms[5];
		if (sscanf(line, "%llx-%llx %4s", &from, &to, perms) != 3 || from > want)
			break; /* past want: a hole (the lines are in order) */
		if (to > want && perms[1] != 'w')
			break;
		if (to > want)
			want = to;
	}
	fclose(f);
	return want >= end;
}

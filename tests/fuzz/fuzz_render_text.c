/* RENDER (fs/cpuview.h: cpuview_render_cpuinfo or cpuview_render_stat,
 * set by meson.build): the host's text rewritten for a CPU map, for the
 * fixed maps of fuzz_common.c and one shaped by the last 10 bytes of the
 * input. */
#include "fuzz.h"

#include <errno.h>
#include <string.h>

static void render(const char *host, const struct cpu_map *m)
{
	GString *out = NULL;
	int r = RENDER(host, m, &out);
	FUZZ_CHECK(r == 0 || r == -EINVAL);
	if (r < 0) {
		FUZZ_CHECK(out == NULL);
		return;
	}
	FUZZ_CHECK(out != NULL);
	if (m->is_host)
		FUZZ_CHECK(strcmp(out->str, host) == 0);
	g_string_free(out, TRUE);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *host = fuzz_text(data, size);
	size_t n;
	struct cpu_map *const *maps = fuzz_fixed_maps(&n);
	for (size_t i = 0; i < n; i++)
		render(host, maps[i]);
	g_autoptr(cpu_map) m = fuzz_map_from_tail(data, size);
	render(host, m);
	g_free(host);
	return 0;
}

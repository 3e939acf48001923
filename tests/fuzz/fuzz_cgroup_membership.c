/* cgroup_parse_membership (fs/cgroup.h): the text of /proc/<pid>/cgroup,
 * for every combination of v1, v2 and absent cpu and cpuset hierarchies. */
#include "fuzz.h"
#include "cgroup.h"

#include <errno.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum cgroup_version versions[] = { CGROUP_NONE, CGROUP_V1, CGROUP_V2 };
	char *text = fuzz_text(data, size);

	for (size_t i = 0; i < G_N_ELEMENTS(versions); i++) {
		for (size_t j = 0; j < G_N_ELEMENTS(versions); j++) {
			struct cgroup_config cfg = {
				.cpu = { versions[i], -1, "/" },
				.cpuset = { versions[j], -1, "/" },
			};
			struct cgroup_paths p = { .cpu = (char *)"untouched", .cpuset = (char *)"untouched" };
			int r = cgroup_parse_membership(text, &cfg, &p);
			FUZZ_CHECK(r == 0 || r == -EINVAL);
			if (r < 0) {
				FUZZ_CHECK(strcmp(p.cpu, "untouched") == 0 && strcmp(p.cpuset, "untouched") == 0);
				continue;
			}
			FUZZ_CHECK(cfg.cpu.version != CGROUP_NONE || !p.cpu);
			FUZZ_CHECK(cfg.cpuset.version != CGROUP_NONE || !p.cpuset);
			FUZZ_CHECK(!p.cpu || p.cpu[0] == '/');
			FUZZ_CHECK(!p.cpuset || p.cpuset[0] == '/');
			FUZZ_CHECK(!p.cpu || strstr(text, p.cpu));
			cgroup_paths_clear(&p);
		}
	}
	g_free(text);
	return 0;
}

#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	/* A glib precondition failing (g_return_if_fail) is a bug too. */
	g_log_set_always_fatal(G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING);
	return 0;
}

void fuzz_fail(const char *file, int line, const char *what)
{
	fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what);
	abort();
}

char *fuzz_text(const uint8_t *data, size_t size)
{
	return g_strndup((const char *)data, size);
}

char *fuzz_exact(const uint8_t *data, size_t size)
{
	char *buf = malloc(size ? size : 1);
	FUZZ_CHECK(buf);
	if (size)
		memcpy(buf, data, size);
	return buf;
}

uint64_t fuzz_take(struct fuzz_tail *t, unsigned nbytes)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < nbytes && t->size > 0; i++) {
		v = v << 8 | t->data[t->size - 1];
		t->size--;
	}
	return v;
}

struct cpu_map *fuzz_map_of(const char *online, const char *cpuset, uint64_t quota, uint64_t period)
{
	struct cpuset on;
	struct cgroup_limits l = { 0 };
	FUZZ_CHECK(cpuset_parse_list(online, &on) == 0);
	if (cpuset) {
		l.has_cpuset = TRUE;
		FUZZ_CHECK(cpuset_parse_list(cpuset, &l.cpuset) == 0);
	}
	if (quota) {
		l.has_quota = TRUE;
		l.quota_us = quota;
		l.period_us = period;
	}
	return cpu_map_new(&on, &l, TRUE);
}

struct cpu_map *const *fuzz_fixed_maps(size_t *ret_n)
{
	static struct cpu_map *maps[12];
	static gsize done;
	if (g_once_init_enter(&done)) {
		size_t n = 0;
		maps[n++] = fuzz_map_of("0-3", NULL, 0, 0);             /* the host's text */
		maps[n++] = fuzz_map_of("0-7", "0", 0, 0);
		maps[n++] = fuzz_map_of("0-7", "1", 0, 0);
		maps[n++] = fuzz_map_of("0-7", "0,2", 0, 0);
		maps[n++] = fuzz_map_of("0-7", "1-3", 0, 0);
		maps[n++] = fuzz_map_of("0-7", "3,5-6", 0, 0);
		maps[n++] = fuzz_map_of("0-7", NULL, 150000, 100000);   /* quota: 2 CPUs */
		maps[n++] = fuzz_map_of("0-63", "1-62", 0, 0);
		maps[n++] = fuzz_map_of("0-8191", "31-33,4095,8191", 0, 0);
		maps[n++] = fuzz_map_of("0-8191", "8190", 0, 0);
		maps[n++] = fuzz_map_of("4-7", "0-5", 0, 0);            /* cpuset partly offline */
		maps[n++] = fuzz_map_of("", NULL, 0, 0);                /* no CPU online at all */
		FUZZ_CHECK(n == G_N_ELEMENTS(maps));
		g_once_init_leave(&done, 1);
	}
	*ret_n = G_N_ELEMENTS(maps);
	return maps;
}

struct cpu_map *fuzz_map_from_tail(const uint8_t *data, size_t size)
{
	/* 64 online CPUs from base, a cpuset mask over them, a quota in CPUs. */
	struct fuzz_tail t = { data, size };
	uint64_t mask = fuzz_take(&t, 8);
	unsigned base = (unsigned)fuzz_take(&t, 1) * 32;
	unsigned quota_cpus = (unsigned)fuzz_take(&t, 1) % 8;
	struct cpuset online;
	struct cgroup_limits l = { .has_cpuset = TRUE };

	cpuset_clear(&online);
	cpuset_clear(&l.cpuset);
	for (unsigned b = 0; b < 64; b++) {
		cpuset_add(&online, base + b);
		if ((mask >> b) & 1)
			cpuset_add(&l.cpuset, base + b);
	}
	if (quota_cpus) {
		l.has_quota = TRUE;
		l.quota_us = quota_cpus * 100000 - 50000;
		l.period_us = 100000;
	}
	return cpu_map_new(&online, &l, TRUE);
}

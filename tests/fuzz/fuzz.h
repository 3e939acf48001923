/* Shared by the libFuzzer harnesses of tests/fuzz (see README.md). */
#pragma once

#include "cpuview.h"

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

/* libFuzzer's entry points. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* A property the code promises: a violation aborts, which libFuzzer
 * reports as a crash and keeps the input. */
#define FUZZ_CHECK(cond)                                                                \
	do {                                                                            \
		if (!(cond))                                                            \
			fuzz_fail(__FILE__, __LINE__, #cond);                           \
	} while (0)

G_NORETURN void fuzz_fail(const char *file, int line, const char *what);

/* The input as the daemon hands kernel text to fs/: g_strndup of the
 * bytes read (so an embedded NUL ends the text). */
char *fuzz_text(const uint8_t *data, size_t size);

/* The input copied to a buffer of exactly size bytes, not NUL-terminated,
 * for the (text, len) parsers: AddressSanitizer then sees any read past len. */
char *fuzz_exact(const uint8_t *data, size_t size);

/* Integers taken off the end of the input (as LLVM's FuzzedDataProvider
 * does), so a text seed stays a text seed at its start. */
struct fuzz_tail {
	const uint8_t *data;
	size_t size;
};
uint64_t fuzz_take(struct fuzz_tail *t, unsigned nbytes);

/* CPU maps the renderers are run with: a fixed set (host, small, sparse,
 * large CPU numbers, quota-limited), built once, and one shaped by the
 * last bytes of the input. */
struct cpu_map *const *fuzz_fixed_maps(size_t *ret_n);
struct cpu_map *fuzz_map_from_tail(const uint8_t *data, size_t size);
/* A map for an online list and a cpuset list (NULL: none) and quota/period
 * (0: none); aborts if a list does not parse. */
struct cpu_map *fuzz_map_of(const char *online, const char *cpuset, uint64_t quota, uint64_t period);

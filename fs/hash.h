/* FNV-1a, 64 bits: a hash that is the same in every process and build, for
 * numbers the kernel keeps across daemons (fs/names.c; content classes are
 * keyed, fs/classhash.h). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define HASH_FNV_START UINT64_C(14695981039346656037)

/* Hash len bytes of data on top of h (HASH_FNV_START to begin). */
static inline uint64_t hash_fnv(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * UINT64_C(1099511628211);
	return h;
}

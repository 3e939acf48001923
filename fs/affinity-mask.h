/* sched_getaffinity(2)'s answer for a caller whose CPU view is in place
 * (the daemon's seccomp listener, daemon/affinity.c): which CPUs its mask
 * shows, and the mask as the kernel copies it. Pure. */
#pragma once

#include "cpuset.h"

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

/* The mask answered to a thread whose kernel mask is k, for a view of the
 * host CPUs v[0 .. n-1] (ascending): k ∩ v, topped up to n CPUs from
 * k \ v in ascending order; so n CPUs, all of them in k, and v itself for
 * a thread that may run on all of v. FALSE where |k| <= n (a cpuset of n
 * CPUs, a thread pinned to fewer): the kernel's answer stands. */
gboolean affinity_mask_for(const struct cpuset *k, const unsigned *v, unsigned n, struct cpuset *ret);

/* s as the kernel copies a cpumask to a caller: len bytes of
 * little-endian unsigned longs (CPU i is bit i % 8 of byte i / 8); CPUs
 * past 8 * len left out. */
void affinity_mask_bytes(const struct cpuset *s, uint8_t *buf, size_t len);
/* The CPUs of such bytes (len at most CPUSET_MAX / 8 of them read). */
void affinity_mask_parse(const uint8_t *buf, size_t len, struct cpuset *ret);

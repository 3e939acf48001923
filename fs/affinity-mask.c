/* sched_getaffinity(2)'s answer for a caller whose CPU view is in place
 * (affinity-mask.h). */
#include "affinity-mask.h"

#include <string.h>

gboolean affinity_mask_for(const struct cpuset *k, const unsigned *v, unsigned n, struct cpuset *ret)
{
	if (n == 0 || cpuset_count(k) <= n)
		return FALSE;
	cpuset_clear(ret);
	unsigned have = 0;
	for (unsigned i = 0; i < n; i++)
		if (v[i] < CPUSET_MAX && cpuset_has(k, v[i]) && !cpuset_has(ret, v[i])) {
			cpuset_add(ret, v[i]);
			have++;
		}
	/* Topped up from the rest of k, lowest first: a thread pinned
	 * partly outside the view keeps CPUs it may run on. */
	for (unsigned cpu = 0; cpu < CPUSET_MAX && have < n; cpu++)
		if (cpuset_has(k, cpu) && !cpuset_has(ret, cpu)) {
			cpuset_add(ret, cpu);
			have++;
		}
	return TRUE;
}

void affinity_mask_bytes(const struct cpuset *s, uint8_t *buf, size_t len)
{
	memset(buf, 0, len);
	for (size_t i = 0; i < len && i < CPUSET_MAX / 8; i++)
		buf[i] = (uint8_t)(s->bits[i / 8] >> (8 * (i % 8)));
}

void affinity_mask_parse(const uint8_t *buf, size_t len, struct cpuset *ret)
{
	cpuset_clear(ret);
	for (size_t i = 0; i < len && i < CPUSET_MAX / 8; i++)
		ret->bits[i / 8] |= (uint64_t)buf[i] << (8 * (i % 8));
}

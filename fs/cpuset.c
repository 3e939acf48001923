#include "cpuset.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void cpuset_clear(struct cpuset *s)
{
	memset(s, 0, sizeof(*s));
}

void cpuset_add(struct cpuset *s, unsigned cpu)
{
	if (cpu < CPUSET_MAX)
		s->bits[cpu / 64] |= UINT64_C(1) << (cpu % 64);
}

void cpuset_remove(struct cpuset *s, unsigned cpu)
{
	if (cpu < CPUSET_MAX)
		s->bits[cpu / 64] &= ~(UINT64_C(1) << (cpu % 64));
}

gboolean cpuset_has(const struct cpuset *s, unsigned cpu)
{
	return cpu < CPUSET_MAX && (s->bits[cpu / 64] >> (cpu % 64)) & 1;
}

unsigned cpuset_count(const struct cpuset *s)
{
	unsigned n = 0;
	for (size_t i = 0; i < G_N_ELEMENTS(s->bits); i++)
		n += (unsigned)__builtin_popcountll(s->bits[i]);
	return n;
}

void cpuset_intersect(struct cpuset *s, const struct cpuset *with)
{
	for (size_t i = 0; i < G_N_ELEMENTS(s->bits); i++)
		s->bits[i] &= with->bits[i];
}

gboolean cpuset_equal(const struct cpuset *a, const struct cpuset *b)
{
	return memcmp(a->bits, b->bits, sizeof(a->bits)) == 0;
}

unsigned cpuset_members(const struct cpuset *s, unsigned *out, unsigned max)
{
	unsigned n = 0;
	for (unsigned cpu = 0; cpu < CPUSET_MAX && n < max; cpu++)
		if (cpuset_has(s, cpu))
			out[n++] = cpu;
	return n;
}

static gboolean parse_cpu(const char *p, const char **end, unsigned *ret)
{
	char *e;
	if (!g_ascii_isdigit(*p))
		return FALSE;
	errno = 0;
	unsigned long v = strtoul(p, &e, 10);
	if (errno || v >= CPUSET_MAX)
		return FALSE;
	*end = e;
	*ret = (unsigned)v;
	return TRUE;
}

int cpuset_parse_list(const char *text, struct cpuset *ret)
{
	g_autofree char *copy = g_strstrip(g_strdup(text));
	struct cpuset s;
	const char *p = copy;

	cpuset_clear(&s);
	while (*p) {
		unsigned first, last;
		if (!parse_cpu(p, &p, &first))
			return -EINVAL;
		last = first;
		if (*p == '-' && (!parse_cpu(p + 1, &p, &last) || last < first))
			return -EINVAL;
		for (unsigned cpu = first; cpu <= last; cpu++)
			cpuset_add(&s, cpu);
		if (*p == ',' && p[1] != '\0')
			p++;
		else if (*p != '\0')
			return -EINVAL;
	}
	*ret = s;
	return 0;
}

int cpuset_parse_mask(const char *text, struct cpuset *ret)
{
	g_autofree char *copy = g_strstrip(g_strdup(text));
	g_auto(GStrv) words = g_strsplit(copy, ",", -1);
	guint n = g_strv_length(words);
	struct cpuset s;

	cpuset_clear(&s);
	if (n == 0 || n > CPUSET_MAX / 32)
		return -EINVAL;
	for (guint i = 0; i < n; i++) {
		guint64 word;
		if (strlen(words[i]) == 0 || strlen(words[i]) > 8 ||
		    !g_ascii_string_to_unsigned(words[i], 16, 0, G_MAXUINT32, &word, NULL))
			return -EINVAL;
		unsigned base = (n - 1 - i) * 32;
		for (unsigned b = 0; b < 32; b++)
			if ((word >> b) & 1)
				cpuset_add(&s, base + b);
	}
	*ret = s;
	return 0;
}

char *cpuset_format_list(const struct cpuset *s)
{
	GString *out = g_string_new(NULL);
	for (unsigned cpu = 0; cpu < CPUSET_MAX; cpu++) {
		if (!cpuset_has(s, cpu))
			continue;
		unsigned last = cpu;
		while (last + 1 < CPUSET_MAX && cpuset_has(s, last + 1))
			last++;
		if (out->len)
			g_string_append_c(out, ',');
		if (last == cpu)
			g_string_append_printf(out, "%u", cpu);
		else
			g_string_append_printf(out, "%u-%u", cpu, last);
		cpu = last;
	}
	return g_string_free(out, FALSE);
}

char *cpuset_format_mask(const struct cpuset *s, unsigned nwords)
{
	GString *out = g_string_new(NULL);
	for (unsigned i = nwords; i-- > 0;) {
		uint32_t word = 0;
		for (unsigned b = 0; b < 32; b++)
			if (cpuset_has(s, i * 32 + b))
				word |= UINT32_C(1) << b;
		g_string_append_printf(out, "%08x%s", word, i ? "," : "");
	}
	return g_string_free(out, FALSE);
}

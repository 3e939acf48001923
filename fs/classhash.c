/* Keyed content classes: SipHash-2-4 (Aumasson and Bernstein, 2012), as
 * its paper defines it. */
#include "classhash.h"

#include "hash.h"
#include "ino.h"

#include <glib.h>

#include <string.h>

static uint64_t key_words[2];
static gboolean unkeyed;

void classhash_set_key(const uint8_t key[CLASS_KEY_BYTES])
{
	memcpy(key_words, key, sizeof(key_words));
}

void classhash_set_unkeyed(void)
{
	unkeyed = TRUE;
}

/* The class daemons before keys gave the same parts: FNV-1a of kind (but
 * of the CPUs'), head and tail. */
static uint64_t unkeyed_class(const char *kind, const void *head, size_t head_len, const void *tail,
			      size_t tail_len)
{
	uint64_t h = HASH_FNV_START;
	if (strcmp(kind, "cpus:") != 0)
		h = hash_fnv(h, kind, strlen(kind));
	h = hash_fnv(hash_fnv(h, head, head_len), tail, tail_len) & INO_SERVED_CLASS_MASK;
	return h ? h : 1;
}

struct sip {
	uint64_t v[4];
	uint64_t tail; /* the bytes not yet in a word, little-endian */
	size_t len;    /* bytes taken in all */
};

static inline uint64_t rotl(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

static void sip_round(uint64_t *v)
{
	v[0] += v[1], v[1] = rotl(v[1], 13), v[1] ^= v[0], v[0] = rotl(v[0], 32);
	v[2] += v[3], v[3] = rotl(v[3], 16), v[3] ^= v[2];
	v[0] += v[3], v[3] = rotl(v[3], 21), v[3] ^= v[0];
	v[2] += v[1], v[1] = rotl(v[1], 17), v[1] ^= v[2], v[2] = rotl(v[2], 32);
}

static void sip_word(struct sip *s, uint64_t m)
{
	s->v[3] ^= m;
	sip_round(s->v);
	sip_round(s->v);
	s->v[0] ^= m;
}

static void sip_add(struct sip *s, const void *data, size_t n)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < n; i++) {
		s->tail |= (uint64_t)p[i] << (8 * (s->len % 8));
		if (++s->len % 8 == 0) {
			sip_word(s, s->tail);
			s->tail = 0;
		}
	}
}

static uint64_t sip_end(struct sip *s)
{
	sip_word(s, s->tail | (uint64_t)s->len << 56);
	s->v[2] ^= 0xff;
	for (int i = 0; i < 4; i++)
		sip_round(s->v);
	return s->v[0] ^ s->v[1] ^ s->v[2] ^ s->v[3];
}

static struct sip sip_start(void)
{
	return (struct sip){ .v = { key_words[0] ^ UINT64_C(0x736f6d6570736575),
				    key_words[1] ^ UINT64_C(0x646f72616e646f6d),
				    key_words[0] ^ UINT64_C(0x6c7967656e657261),
				    key_words[1] ^ UINT64_C(0x7465646279746573) } };
}

uint64_t classhash_siphash(const void *data, size_t len)
{
	struct sip s = sip_start();
	sip_add(&s, data, len);
	return sip_end(&s);
}

uint64_t classhash(const char *kind, const void *head, size_t head_len, const void *tail, size_t tail_len)
{
	if (unkeyed)
		return unkeyed_class(kind, head, head_len, tail, tail_len);
	struct sip s = sip_start();
	/* Each part with its length: no two inputs run together alike. */
	const uint64_t lens[3] = { strlen(kind), head_len, tail_len };
	sip_add(&s, lens, sizeof(lens));
	sip_add(&s, kind, lens[0]);
	if (head_len)
		sip_add(&s, head, head_len);
	if (tail_len)
		sip_add(&s, tail, tail_len);
	uint64_t h = sip_end(&s) & INO_SERVED_CLASS_MASK;
	return h ? h : 1;
}

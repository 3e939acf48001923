/* Content classes are SipHash-2-4 under a key: the paper's vectors, and
 * a tenant that names its cgroup cannot meet another's class without the
 * key (a pair of cgroup names whose unkeyed classes were one). */
#include "classhash.h"
#include "hash.h"
#include "ino.h"

#include <criterion/criterion.h>
#include <glib.h>
#include <string.h>

static void key_of_paper(void)
{
	uint8_t key[CLASS_KEY_BYTES];
	for (int i = 0; i < CLASS_KEY_BYTES; i++)
		key[i] = (uint8_t)i;
	classhash_set_key(key);
}

Test(classhash, paper_vectors)
{
	uint8_t msg[64];
	for (int i = 0; i < 64; i++)
		msg[i] = (uint8_t)i;
	key_of_paper();
	/* SipHash-2-4's paper, appendix A (15 bytes), and its vectors for 0
	 * and 8 bytes (a whole word, then the length-only last word). */
	cr_assert_eq(classhash_siphash(msg, 15), UINT64_C(0xa129ca6149be45e5));
	cr_assert_eq(classhash_siphash(msg, 0), UINT64_C(0x726fdb47dd0e0e31));
	cr_assert_eq(classhash_siphash(msg, 8), UINT64_C(0x93f5f5799a932462));
}

/* The memory class of the cgroup dir, as it was before classes were
 * keyed. */
static uint64_t unkeyed(const char *dir)
{
	uint64_t h = hash_fnv(hash_fnv(HASH_FNV_START, "memory:", 7), dir, strlen(dir)) & INO_SERVED_CLASS_MASK;
	return h ? h : 1;
}

Test(classhash, a_colliding_pair_of_names_is_two_classes_under_any_key)
{
	/* Found by a birthday search of 2e8 names (70 s). */
	const char *a = "cgprocfs-collide/chazh9ru85666", *b = "cgprocfs-collide/c9f2stqsk4fiv";
	cr_assert_eq(unkeyed(a), unkeyed(b), "the pair is no collision of the unkeyed classes");
	const uint8_t zeros[CLASS_KEY_BYTES] = { 0 }, other[CLASS_KEY_BYTES] = { 7, 1, 9, 3 };
	const uint8_t *keys[] = { zeros, other };
	for (size_t i = 0; i < G_N_ELEMENTS(keys); i++) {
		classhash_set_key(keys[i]);
		uint64_t ca = classhash("memory:", NULL, 0, a, strlen(a));
		uint64_t cb = classhash("memory:", NULL, 0, b, strlen(b));
		cr_assert_neq(ca, cb, "one class for %s and %s under key %zu", a, b, i);
		cr_assert(ca > 0 && ca <= INO_SERVED_CLASS_MASK);
	}
}

Test(classhash, the_key_decides_the_class)
{
	const uint8_t one[CLASS_KEY_BYTES] = { 1 }, two[CLASS_KEY_BYTES] = { 2 };
	classhash_set_key(one);
	uint64_t c1 = classhash("memory:", NULL, 0, "system.slice", 12);
	cr_assert_eq(c1, classhash("memory:", NULL, 0, "system.slice", 12), "not the same class twice");
	classhash_set_key(two);
	cr_assert_neq(c1, classhash("memory:", NULL, 0, "system.slice", 12));
	/* Parts run together differently are other classes. */
	cr_assert_neq(classhash("memory:", "ab", 2, "c", 1), classhash("memory:", "a", 1, "bc", 2));
}

Test(classhash, unkeyed_classes_are_those_of_daemons_before_keys)
{
	/* For views such a daemon mounted: the same inodes, binds kept. */
	const char *dir = "system.slice/x.service";
	classhash_set_unkeyed();
	cr_assert_eq(classhash("memory:", NULL, 0, dir, strlen(dir)), unkeyed(dir));
	const unsigned head[2] = { 0, 2 };
	const unsigned cpus[2] = { 0, 1 };
	uint64_t before = hash_fnv(hash_fnv(HASH_FNV_START, head, sizeof(head)), cpus, sizeof(cpus)) &
			  INO_SERVED_CLASS_MASK;
	cr_assert_eq(classhash("cpus:", head, sizeof(head), cpus, sizeof(cpus)), before ? before : 1,
		     "the CPUs' classes had no kind in them");
}

/* Content classes (fs/ino.h): which text a per-class inode holds, from
 * what decides it (a cgroup's path, a CPU list). A class is SipHash-2-4
 * of that under a key no tenant knows: a tenant that names its cgroups
 * cannot aim at another's class (an unkeyed hash it could, and read or
 * steer that one's figures). One key per mountpoint, kept by the daemons
 * that serve it one after another (daemon/classkey.c), so that the
 * inodes the kernel keeps keep their classes. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define CLASS_KEY_BYTES 16

/* The key from now on; until it is set, all zeros (the unit tests'). */
void classhash_set_key(const uint8_t key[CLASS_KEY_BYTES]);
/* No key from now on: classes as daemons before keys made them (FNV-1a
 * of the same parts), for views such a daemon mounted, whose inodes the
 * kernel keeps (a file bound on its own cannot be looked up again). */
void classhash_set_unkeyed(void);

/* The class of kind (a literal naming what the class is of: "memory:"),
 * head and tail (head_len and tail_len bytes; NULL if 0): of
 * INO_SERVED_CLASS_BITS, never 0. */
uint64_t classhash(const char *kind, const void *head, size_t head_len, const void *tail, size_t tail_len);
/* SipHash-2-4 of len bytes under the key, as its paper has it: for the
 * tests of its vectors. */
uint64_t classhash_siphash(const void *data, size_t len);

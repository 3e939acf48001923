/* Names that inode numbers carry (top-level /proc names, sysfs paths).
 * A name's number is a hash of it, the same in every daemon process, so
 * that the inodes the kernel cached stay right when another daemon takes
 * the view over (--replace, or after a crash). */
#pragma once

#include <stdint.h>

/* Bits of a name's number: it fits the inode layouts of fs/ino.h. */
#define NAMES_BITS 25

/* The number of name, in [1, 2^NAMES_BITS), remembering the name. Two
 * names with the same hash: the later one takes the next free number. */
uint64_t names_intern(const char *name);

/* The name of a number this process interned, or NULL. */
const char *names_lookup(uint64_t id);

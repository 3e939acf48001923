/* Directory listings shared between the handles that hold the same one:
 * the opens of a directory whose entries are the same (as view_readdir
 * made them: names, inodes, types) hold one copy, however many there are,
 * so that an open directory costs its handle, not its listing, unless
 * its entries differ from every other's. A listing stays in its set as
 * long as a handle holds it. */
#pragma once

#include <glib.h>
#include <stdint.h>

struct listings {
	GMutex lock;     /* guards set, and the refs of every listing in it */
	GHashTable *set; /* struct listing * (its own key), not owned */
};

struct listing {
	GArray *entries; /* of struct view_dirent; never changed */
	uint64_t ino;
	gsize bytes;     /* what entries hold, about */
	guint hash;
	guint refs;      /* under owner->lock */
	struct listings *owner;
};

void listings_init(struct listings *l);
/* Once no listing of l is held any more. */
void listings_clear(struct listings *l);

/* The listing of directory ino with entries (taken): the one of l with
 * the same entries, or a new one; a reference. */
struct listing *listings_share(struct listings *l, uint64_t ino, GArray *entries);
void listing_unref(struct listing *li);
/* About what entries (of struct view_dirent) hold, in bytes. */
gsize listing_bytes(const GArray *entries);

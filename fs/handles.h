/* Open files and directories of one session, by handle, counted per
 * tenant (pidns_tenant: a container, whatever pid namespaces it makes
 * below its own), so that one tenant holding opens without bound fails
 * alone: past HANDLES_TENANT_MAX handles, or HANDLES_TENANT_BYTES of what
 * its handles' objects hold (a directory's listing), its opens get EMFILE,
 * and others' open on; HANDLES_MAX and HANDLES_BYTES bound the session's
 * memory (ENFILE). An object several handles of one tenant share (one
 * listing of a directory, fs/listing.h) counts once for it. A handle
 * carries a tag of this table's, so that one made by another daemon,
 * which served the session before a handover, is never taken for one of
 * ours: its object is made again on first use (handles_adopt), as a new
 * open would make it, and counted as one, for the tenant of the caller
 * that uses it. */
#pragma once

#include <glib.h>
#include <stdint.h>

#define HANDLES_TENANT_MAX 16384
#define HANDLES_MAX (1 << 20)
#define HANDLES_TENANT_BYTES ((gsize)64 << 20)
#define HANDLES_BYTES ((gsize)1 << 30)
/* The bits of a handle its maker may use as it likes (a kind). */
#define HANDLES_KIND_SHIFT 39

typedef void (*handles_free_fn)(uint64_t fh, gpointer object);

struct handles {
	GMutex lock;        /* guards all below */
	GHashTable *table;  /* fh -> struct handle (handles.c) */
	GHashTable *counts; /* tenant -> struct tenant_count (handles.c) */
	GHashTable *held;   /* (tenant, object) -> how many of its handles hold it, for objects of bytes */
	gsize bytes;        /* of every object held, once each per tenant */
	uint64_t tag, serial;
	handles_free_fn free_object;
};

void handles_init(struct handles *h, handles_free_fn free_object);
/* Frees every object left. */
void handles_clear(struct handles *h);

/* A new handle (with kind's bits) of object, which holds bytes, for
 * tenant: 0 and *ret_fh, or -EMFILE (the tenant is at one of its bounds)
 * or -ENFILE (the session is at one of its); object is then freed. */
int handles_add(struct handles *h, gpointer object, gsize bytes, uint64_t kind, uint64_t tenant, uint64_t *ret_fh);
/* The object of fh, or NULL for a handle this table did not make. */
gpointer handles_get(struct handles *h, uint64_t fh);
/* Give a handle of another daemon's its object (holding bytes) for
 * tenant, or take the one a concurrent request gave it first (object
 * freed): 0 and *ret_object, or -EMFILE or -ENFILE as handles_add
 * (object freed). */
int handles_adopt(struct handles *h, uint64_t fh, gpointer object, gsize bytes, uint64_t tenant,
		  gpointer *ret_object);
/* Forget fh and free its object, if it has one here. */
void handles_remove(struct handles *h, uint64_t fh);
/* How many handles, and bytes, tenant holds. */
void handles_count(struct handles *h, uint64_t tenant, guint *ret_handles, gsize *ret_bytes);

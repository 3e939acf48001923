/* Open files and directories of one session, by handle, counted per
 * tenant (pidns_tenant: a container, whatever pid namespaces it makes
 * below its own), so that one tenant holding opens without bound fails
 * alone: past HANDLES_TENANT_MAX its opens get EMFILE, and others' open
 * on; HANDLES_MAX bounds the session's memory (ENFILE). A handle carries
 * a tag of this table's, so that one made by another daemon, which served
 * the session before a handover, is never taken for one of ours: its
 * object is made again on first use (handles_adopt), as a new open would
 * make it, counted for no tenant. */
#pragma once

#include <glib.h>
#include <stdint.h>

#define HANDLES_TENANT_MAX 16384
#define HANDLES_MAX (1 << 20)
/* The bits of a handle its maker may use as it likes (a kind). */
#define HANDLES_KIND_SHIFT 39

typedef void (*handles_free_fn)(uint64_t fh, gpointer object);

struct handles {
	GMutex lock;        /* guards all below */
	GHashTable *table;  /* fh -> struct handle (handles.c) */
	GHashTable *counts; /* tenant -> handles it holds */
	uint64_t tag, serial;
	handles_free_fn free_object;
};

void handles_init(struct handles *h, handles_free_fn free_object);
/* Frees every object left. */
void handles_clear(struct handles *h);

/* A new handle (with kind's bits) of object for tenant: 0 and *ret_fh, or
 * -EMFILE (the tenant holds HANDLES_TENANT_MAX) or -ENFILE (the session
 * holds HANDLES_MAX); object is then freed. */
int handles_add(struct handles *h, gpointer object, uint64_t kind, uint64_t tenant, uint64_t *ret_fh);
/* The object of fh, or NULL for a handle this table did not make. */
gpointer handles_get(struct handles *h, uint64_t fh);
/* Give a handle of another daemon's its object, or the one a concurrent
 * request gave it first (then object is freed). */
gpointer handles_adopt(struct handles *h, uint64_t fh, gpointer object);
/* Forget fh and free its object, if it has one here. */
void handles_remove(struct handles *h, uint64_t fh);

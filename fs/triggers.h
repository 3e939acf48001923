/* PSI triggers set through the view: a caller's write of "some 150000
 * 1000000" to proc/pressure/<name> is written by the daemon to the kernel
 * file of the caller's cgroup (or the host's), kept open as long as the
 * caller's fd, and polled here: one thread waits (epoll, EPOLLPRI) on every
 * trigger's kernel file, and when one fires it wakes the FUSE pollers of
 * the caller's fd (fuse_lowlevel_notify_poll). A FUSE POLL is answered at
 * once, never held: a caller asleep in poll() sleeps in its own kernel, not
 * in a request, and can be frozen.
 *
 * What each trigger is (its session, handle, inode and text) is kept in a
 * table in memory the daemon's keeper holds (daemon/inflight.c), so that a
 * daemon taking over after a crash or a handover wakes the pollers of the
 * fds opened before, and sets each trigger again when its fd is next
 * polled, read or written. */
#pragma once

#include <fuse_lowlevel.h>
#include <glib.h>
#include <poll.h>
#include <stdint.h>

/* A caller's triggers, counted per tenant (a container: pidns_tenant), and
 * the daemon's: past TRIGGERS_TENANT_MAX a tenant's trigger writes fail
 * with ENOSPC, and past TRIGGERS_MAX everyone's. Of those, the host's
 * tenant (the daemon's own pid namespace) has TRIGGERS_TENANT_MAX kept
 * for it: the containers together hold at most the others, so that the
 * host's own (systemd-oomd, psi-notify, lmkd) are set whatever they hold. */
#define TRIGGERS_TENANT_MAX 64
#define TRIGGERS_MAX 1024
/* The longest trigger the kernel takes from /proc/pressure/<name> (its
 * buffer: the last byte is made NUL). */
#define TRIGGER_TEXT_MAX 32

/* One trigger as the next daemon needs it; fh 0: a free record. In shared
 * memory: plain data, the same layout in every daemon. */
struct trigger_record {
	uint64_t fh;  /* published last (a record being written is 0) */
	uint64_t key; /* the session's (daemon/inflight.h: inflight_key) */
	uint64_t kh;  /* the kernel's poll handle of the fd, 0 before a poll that waits */
	uint64_t ino;
	char text[TRIGGER_TEXT_MAX]; /* NUL-terminated */
};

struct triggers;
struct trigger;

/* records: n records (NULL: none kept) this daemon fills; host_tenant:
 * the host's tenant (pidns_own). Starts the thread that waits on the
 * triggers; NULL if it cannot (said once). */
struct triggers *triggers_new(struct trigger_record *records, unsigned n, uint64_t host_tenant);
/* Stops the thread; the triggers left are closed, their records kept. */
void triggers_free(struct triggers *t);
/* Keep the records of the daemon before (from its table) as this one's. */
void triggers_inherit(struct triggers *t, const struct trigger_record *from, unsigned n);
/* fn(data, kh) for each kept record of key's session whose fd was polled. */
void triggers_each_polled(struct triggers *t, uint64_t key, void (*fn)(void *data, uint64_t kh), void *data);
/* The text of the kept record of (key, fh), if there is one: 0 or -ENOENT. */
int triggers_kept(struct triggers *t, uint64_t key, uint64_t fh, char ret_text[TRIGGER_TEXT_MAX]);

/* Whether a trigger of tenant's would be taken now: 0, or -ENOSPC past
 * a limit (told, at most once a minute). Before a trigger is set: one
 * refused after costs the kernel its making and its end. */
int triggers_admit(struct triggers *t, uint64_t tenant);
/* Watch fd (taken), a kernel pressure file with text written to it, for
 * the handle fh of key's session, a caller of tenant's: 0 and *ret, or
 * -ENOSPC past a limit (fd closed). */
int triggers_add(struct triggers *t, int fd, uint64_t tenant, uint64_t key, uint64_t fh, uint64_t ino,
		 const char *text, struct trigger **ret);
/* Close the trigger (NULL: nothing); its record stays. Returns once no
 * poller is being woken (through its session, which may go next). */
void triggers_remove(struct trigger *tr);
/* The fd (key, fh) was released: its record goes. */
void triggers_released(struct triggers *t, uint64_t key, uint64_t fh);

/* A FUSE POLL of tr's fd: its events as the kernel's file answers them
 * (POLLPRI once per firing); ph (taken, NULL: none) is woken at the next.
 * kh: the kernel's handle of the fd, 0 if not known. */
unsigned triggers_poll(struct triggers *t, struct trigger *tr, struct fuse_pollhandle *ph, uint64_t kh);

/* What the kernel's pressure file answers a poll of an fd with no trigger,
 * and what any other file answers. */
#define TRIGGERS_NONE_EVENTS (POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM | POLLERR | POLLPRI)
#define TRIGGERS_FILE_EVENTS (POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM)

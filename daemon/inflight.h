/* The requests a daemon has taken from the kernel and not answered yet,
 * kept in memory it shares with its keeper (a memfd the keeper holds), so
 * that a daemon taking over from the keeper of one that died answers
 * them. Linux 6.9 and later resend them on request (session_resend);
 * before, the kernel keeps them as taken, and their callers would wait
 * until killed. Each is kept whole in a slot (a request longer than a
 * slot, its header only: it is answered EIO); a daemon with every slot
 * in use keeps no more until one is answered. Only requests that get an
 * answer are kept (not FORGET, INTERRUPT, NOTIFY_REPLY). The same memfd
 * keeps the PSI triggers of open fds, for the next daemon to set again. */
#pragma once

#include "triggers.h"

#include <glib.h>
#include <linux/fuse.h>
#include <linux/seccomp.h>

struct inflight;

/* This daemon's: NULL if no memfd could be made (said once). */
struct inflight *inflight_new(void);
/* A dead daemon's, from its keeper: takes fd; NULL if fd is not one. */
struct inflight *inflight_adopt(int fd);
void inflight_free(struct inflight *f);
/* The memfd, for the keeper (-1 for NULL). */
int inflight_fd(const struct inflight *f);

/* The records of PSI triggers kept in f's memfd (fs/triggers.h), and
 * how many: none (NULL) in a table of a daemon before triggers. */
struct trigger_record *inflight_triggers(struct inflight *f, unsigned *ret_n);

/* The key of a session: its pid namespace's inode, 0 for the host's
 * (ns_fd -1); the same in every daemon. */
guint64 inflight_key(int ns_fd);
/* req (len bytes, a request as read from /dev/fuse) was taken for the
 * session of key; f may be NULL. */
void inflight_taken(struct inflight *f, guint64 key, const void *req, size_t len);
/* The request unique of key's session was answered (by this thread,
 * mostly). unique counts from the same start on every connection, so a
 * record is the pair: another session's request of the same unique is
 * still in hand. */
void inflight_answered(struct inflight *f, guint64 key, guint64 unique);

/* Each request of key's session still unanswered in f: fn(data, req,
 * len), len the whole request's, or 0 if only its header was kept. */
typedef void (*inflight_fn)(void *data, const struct fuse_in_header *req, size_t len);
void inflight_each(struct inflight *f, guint64 key, inflight_fn fn, void *data);

/* The seccomp listener's notifications in hand (daemon/sysinfo.c), kept
 * in the same memfd: the kernel keeps a notification taken as taken, so
 * a caller whose notification a daemon took before it died would wait
 * for as long as the notification fd is open (the keeper holds it). More
 * than the listener's answerers. */
#define INFLIGHT_CALLS 16
/* req was taken: its slot, to give inflight_call_answered, or -1 (f NULL,
 * a table before calls, or every slot in use). */
int inflight_call_taken(struct inflight *f, const struct seccomp_notif *req);
void inflight_call_answered(struct inflight *f, int slot);
/* The notifications a dead daemon kept in f, into ret: how many; each is
 * freed in f. */
unsigned inflight_calls_take(struct inflight *f, struct seccomp_notif ret[INFLIGHT_CALLS]);
/* A notification is about to be taken from an fd whose next one should
 * have id next (0: not known yet): a slot, which inflight_call_taken_in
 * fills once it is, or -1. A daemon that dies in between (SIGKILLed as
 * its ioctl returns) leaves the id for the next one to look for. */
int inflight_call_receiving(struct inflight *f, guint64 next);
void inflight_call_taken_in(struct inflight *f, int slot, const struct seccomp_notif *req);
/* The calls a dead daemon began to take in f and did not note: each id
 * left, and the few after it, that one of fds (n) still holds as taken
 * is let through to the kernel (CONTINUE; the call's own arguments are
 * gone with the daemon). How many; the slots are freed in f. */
unsigned inflight_let_lost_through(struct inflight *f, const int *fds, unsigned n);

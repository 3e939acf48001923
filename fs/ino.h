/* The inode-number layout of the view: pure arithmetic, no state. The
 * numbers carry all that is needed to serve a node, so the daemon keeps no
 * inode table and FUSE forget has nothing to do. Two processes give the same
 * number for the same node (the handover to another daemon depends on it):
 * nothing here depends on the process, and names are numbered by fs/names.
 *
 *   bits 60-63  kind (the view's node kinds, fs/view-internal.h)
 *   pid layout    bits 38-59 pid, 30-37 entry name index, 0-29 tag (the low
 *                 bits of the process's start time, or a per-lookup
 *                 generation for magic links)
 *   cpu layout    bits 38-59 content class (short), 25-37 the caller's CPU
 *                 number, 0-24 the names.h number of a path inside its
 *                 directory (0: the directory)
 *   named layout  bits 0-59 a row of the static table or the names.h
 *                 number of a path (a number beyond those names nothing)
 *   served layout bits 52-59 a row of the static table, 0-51 content class
 *
 * The content class tells apart versions of one file served to different
 * callers: a file gets one inode per class, so that the page cache of an
 * inode only ever holds one class's text. Served files (the served layout)
 * number their classes by a hash of what decides the text (e.g. the CPUs a
 * caller sees), the same in every daemon; class 0 is "the same for every
 * caller". The cpu layout has room for 22 bits of class only: a short
 * class, given out by the CPU view (cpuview_short_class) to the first class
 * that wants it; class 0 there is "rendered per open for its caller". */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#define INO_KIND_BITS 4
#define INO_PID_BITS 22
#define INO_ENTRY_BITS 8
#define INO_TAG_BITS 30
#define INO_CPU_BITS 13
#define INO_CPU_CLASS_BITS 22
#define INO_ID_BITS 25
#define INO_ROW_BITS 8
#define INO_SERVED_CLASS_BITS 52

#define INO_KIND_MAX ((1u << INO_KIND_BITS) - 1)
#define INO_PID_MAX ((pid_t)((1u << INO_PID_BITS) - 1))
#define INO_ENTRY_MAX ((1u << INO_ENTRY_BITS) - 1)
#define INO_CPU_MAX ((1u << INO_CPU_BITS) - 1)
#define INO_CPU_CLASS_MAX ((UINT32_C(1) << INO_CPU_CLASS_BITS) - 1)
#define INO_ROW_MAX ((1u << INO_ROW_BITS) - 1)
#define INO_SERVED_CLASS_MASK ((UINT64_C(1) << INO_SERVED_CLASS_BITS) - 1)

/* Out-of-range fields are cut to their bits. */
uint64_t ino_pid_make(unsigned kind, pid_t pid, unsigned entry, uint64_t tag);
uint64_t ino_cpu_make(unsigned kind, unsigned cpu, uint32_t cls, uint64_t sub);
uint64_t ino_named_make(unsigned kind, uint64_t id);
uint64_t ino_served_make(unsigned kind, unsigned row, uint64_t class_id);

unsigned ino_kind(uint64_t ino);

/* Fields of the pid layout. */
pid_t ino_pid(uint64_t ino);
unsigned ino_entry(uint64_t ino);
uint64_t ino_tag(uint64_t ino);
/* The tag of a process that started at start_time (clock ticks). */
uint64_t ino_process_tag(uint64_t start_time);

/* Fields of the cpu layout. */
unsigned ino_cpu(uint64_t ino);
uint32_t ino_cpu_class(uint64_t ino);
uint64_t ino_sub(uint64_t ino);

/* Fields of the named layout. */
uint64_t ino_id(uint64_t ino);

/* Fields of the served layout. */
unsigned ino_served_row(uint64_t ino);
uint64_t ino_served_class(uint64_t ino);

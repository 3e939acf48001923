#include "ino.h"

#include "names.h"

#include <glib.h>

#define KIND_SHIFT (64 - INO_KIND_BITS)
#define PID_SHIFT (INO_TAG_BITS + INO_ENTRY_BITS)
#define ENTRY_SHIFT INO_TAG_BITS
#define CPU_SHIFT INO_ID_BITS
#define CPU_CLASS_SHIFT (INO_ID_BITS + INO_CPU_BITS)
#define MASK(bits) ((UINT64_C(1) << (bits)) - 1)

/* The layouts fill the bits below the kind, and no more. */
G_STATIC_ASSERT(PID_SHIFT + INO_PID_BITS == KIND_SHIFT);
G_STATIC_ASSERT(CPU_CLASS_SHIFT + INO_CPU_CLASS_BITS == KIND_SHIFT);
G_STATIC_ASSERT(INO_SERVED_CLASS_BITS + INO_ROW_BITS == KIND_SHIFT);
/* A names.h number fits where a layout carries one. */
G_STATIC_ASSERT(NAMES_BITS <= INO_ID_BITS);

uint64_t ino_pid_make(unsigned kind, pid_t pid, unsigned entry, uint64_t tag)
{
	return (uint64_t)kind << KIND_SHIFT | ((uint64_t)pid & MASK(INO_PID_BITS)) << PID_SHIFT |
	       ((uint64_t)entry & MASK(INO_ENTRY_BITS)) << ENTRY_SHIFT | (tag & MASK(INO_TAG_BITS));
}

uint64_t ino_cpu_make(unsigned kind, unsigned cpu, uint32_t cls, uint64_t sub)
{
	return (uint64_t)kind << KIND_SHIFT | ((uint64_t)cls & MASK(INO_CPU_CLASS_BITS)) << CPU_CLASS_SHIFT |
	       ((uint64_t)cpu & MASK(INO_CPU_BITS)) << CPU_SHIFT |
	       (sub & MASK(INO_ID_BITS));
}

uint64_t ino_named_make(unsigned kind, uint64_t id)
{
	return (uint64_t)kind << KIND_SHIFT | (id & MASK(KIND_SHIFT));
}

unsigned ino_kind(uint64_t ino) { return (unsigned)(ino >> KIND_SHIFT); }

pid_t ino_pid(uint64_t ino) { return (pid_t)((ino >> PID_SHIFT) & MASK(INO_PID_BITS)); }
unsigned ino_entry(uint64_t ino) { return (unsigned)((ino >> ENTRY_SHIFT) & MASK(INO_ENTRY_BITS)); }
uint64_t ino_tag(uint64_t ino) { return ino & MASK(INO_TAG_BITS); }
uint64_t ino_process_tag(uint64_t start_time) { return start_time & MASK(INO_TAG_BITS); }

unsigned ino_cpu(uint64_t ino) { return (unsigned)((ino >> CPU_SHIFT) & MASK(INO_CPU_BITS)); }
uint32_t ino_cpu_class(uint64_t ino) { return (uint32_t)((ino >> CPU_CLASS_SHIFT) & MASK(INO_CPU_CLASS_BITS)); }
uint64_t ino_sub(uint64_t ino) { return ino & MASK(INO_ID_BITS); }

uint64_t ino_id(uint64_t ino) { return ino & MASK(KIND_SHIFT); }

uint64_t ino_served_make(unsigned kind, unsigned row, uint64_t class_id)
{
	return (uint64_t)kind << KIND_SHIFT | ((uint64_t)row & MASK(INO_ROW_BITS)) << INO_SERVED_CLASS_BITS |
	       (class_id & MASK(INO_SERVED_CLASS_BITS));
}

unsigned ino_served_row(uint64_t ino) { return (unsigned)((ino >> INO_SERVED_CLASS_BITS) & MASK(INO_ROW_BITS)); }
uint64_t ino_served_class(uint64_t ino) { return ino & MASK(INO_SERVED_CLASS_BITS); }

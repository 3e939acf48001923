/* Prometheus text for .cgprocfs/stats: one helper for every module. */
#pragma once

#include <glib.h>

/* "# HELP name help\n# TYPE name type\n" (type: "counter" or "gauge"). */
void metrics_header(GString *out, const char *name, const char *type, const char *help);
/* One sample: "name{labels} value\n" (labels NULL or "" for none). */
void metrics_sample(GString *out, const char *name, const char *labels, guint64 value);
/* Header and one unlabelled sample. */
void metrics_u64(GString *out, const char *name, const char *type, const char *help, guint64 value);
/* Header and one unlabelled sample in seconds (a counter). */
void metrics_seconds(GString *out, const char *name, const char *help, double seconds);

#include "metrics.h"

void metrics_header(GString *out, const char *name, const char *type, const char *help)
{
	g_string_append_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void metrics_sample(GString *out, const char *name, const char *labels, guint64 value)
{
	if (labels && *labels)
		g_string_append_printf(out, "%s{%s} %" G_GUINT64_FORMAT "\n", name, labels, value);
	else
		g_string_append_printf(out, "%s %" G_GUINT64_FORMAT "\n", name, value);
}

void metrics_u64(GString *out, const char *name, const char *type, const char *help, guint64 value)
{
	metrics_header(out, name, type, help);
	metrics_sample(out, name, NULL, value);
}

void metrics_seconds(GString *out, const char *name, const char *help, double seconds)
{
	metrics_header(out, name, "counter", help);
	g_string_append_printf(out, "%s %.6f\n", name, seconds);
}

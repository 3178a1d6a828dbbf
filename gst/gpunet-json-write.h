/* gpunet-json-write.h: header-only JSON writing helpers (GLib) shared by the
 * element's json-output records and gpunet-tag's JSON lines: RFC 8259 strings (valid
 * UTF-8, every control character escaped) and locale-independent numbers. */
#ifndef __GPUNET_JSON_WRITE_H__
#define __GPUNET_JSON_WRITE_H__

#include <math.h>

#include <glib.h>

G_BEGIN_DECLS

/* Appends `str` as a quoted JSON string: quote and backslash escaped, control
 * characters as \b \f \n \r \t or \u00XX, everything else (UTF-8 included) as
 * it is. Invalid UTF-8 (labels come from user files) becomes U+FFFD; NULL
 * becomes "". */
static inline void
gpunet_json_write_string (GString * out, const gchar * str)
{
  gchar *valid = str ? g_utf8_make_valid (str, -1) : NULL;
  const gchar *s;

  g_string_append_c (out, '"');
  for (s = valid; s && *s; s++) {
    guchar c = (guchar) * s;

    switch (c) {
      case '"':
        g_string_append (out, "\\\"");
        break;
      case '\\':
        g_string_append (out, "\\\\");
        break;
      case '\b':
        g_string_append (out, "\\b");
        break;
      case '\f':
        g_string_append (out, "\\f");
        break;
      case '\n':
        g_string_append (out, "\\n");
        break;
      case '\r':
        g_string_append (out, "\\r");
        break;
      case '\t':
        g_string_append (out, "\\t");
        break;
      default:
        if (c < 0x20)
          g_string_append_printf (out, "\\u%04x", c);
        else
          g_string_append_c (out, (gchar) c);
        break;
    }
  }
  g_string_append_c (out, '"');
  g_free (valid);
}

/* Appends `v` formatted with the printf `format` ("%.6f", "%.9g") in the C
 * locale, or null when it is NaN or infinite (JSON has no such numbers). */
static inline void
gpunet_json_write_number (GString * out, gdouble v, const gchar * format)
{
  gchar buf[G_ASCII_DTOSTR_BUF_SIZE];

  if (!isfinite (v))
    g_string_append (out, "null");
  else
    g_string_append (out, g_ascii_formatd (buf, sizeof buf, format, v));
}

G_END_DECLS

#endif /* __GPUNET_JSON_WRITE_H__ */

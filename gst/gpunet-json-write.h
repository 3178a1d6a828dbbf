/* gpunet-json-write.h: header-only JSON writing helpers shared by the element's
 * json-output records and gpunet-tag's JSON lines.  Strings are written by json-glib's
 * generator; numbers keep the fixed precision the records document (scores "%.9g",
 * seconds "%.6f"), which json-glib cannot give (it prints every double as "%.17g"),
 * so they are formatted here in the C locale. */
#ifndef __GPUNET_JSON_WRITE_H__
#define __GPUNET_JSON_WRITE_H__

#include <math.h>

#include <glib.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

/* Appends `str` as a quoted JSON string through json-glib (quote, backslash and
 * control characters escaped, UTF-8 as it is).  Invalid UTF-8 (labels come from user
 * files) becomes U+FFFD first; NULL becomes "".  json-glib 1.6 leaves U+001F raw,
 * which RFC 8259 forbids: it is escaped here. */
static inline void
gpunet_json_write_string (GString * out, const gchar * str)
{
  /* one generator per thread, made on its first string: records write several strings
   * per frame, and a GObject each cost more than the escaping itself */
  static GPrivate gen_key = G_PRIVATE_INIT (g_object_unref);
  gchar *valid = g_utf8_make_valid (str ? str : "", -1);
  JsonNode *node = json_node_init_string (json_node_alloc (), valid);
  JsonGenerator *gen = g_private_get (&gen_key);
  gsize i;

  if (gen == NULL) {
    gen = json_generator_new ();
    g_private_set (&gen_key, gen);
  }

  i = out->len;
  json_generator_set_root (gen, node);
  json_generator_to_gstring (gen, out);
  for (; i < out->len; i++) {
    if (out->str[i] == 0x1f) {
      out->str[i] = '\\';
      g_string_insert (out, (gssize) i + 1, "u001f");
      i += 5;
    }
  }
  json_node_unref (node);
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

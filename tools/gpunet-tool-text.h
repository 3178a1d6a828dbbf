/* gpunet-tool-text.h: how the GLib-based tools print text.  GLib's own messages (an
 * option it cannot parse, a file error) hold typographic quotes, and g_print /
 * g_printerr convert every string to the locale's charset: in the C locale (or
 * without setlocale, as in any program that never calls it) each quote came out
 * as '?'.  gpunet_tool_text_init reads the charset from the environment (LC_CTYPE
 * only: numbers keep the C locale's decimal point) and prints through handlers that
 * write UTF-8 as is where the terminal takes it, and elsewhere replace the quotes
 * with ASCII ones before the conversion.  GLib only, header only. */
#ifndef GPUNET_TOOL_TEXT_H
#define GPUNET_TOOL_TEXT_H

#include <locale.h>
#include <stdio.h>
#include <string.h>

#include <glib.h>

/* `s` with the typographic quotes, dashes and ellipsis of GLib's and GStreamer's
 * messages as ASCII, newly allocated. */
static inline gchar *
gpunet_tool_text_ascii_quotes (const gchar * s)
{
  static const struct { const char *from, *to; } map[] = {
    {"\xe2\x80\x9c", "\""}, {"\xe2\x80\x9d", "\""}, {"\xe2\x80\x98", "'"},
    {"\xe2\x80\x99", "'"}, {"\xe2\x80\x93", "-"}, {"\xe2\x80\x94", "-"},
    {"\xe2\x80\xa6", "..."},
  };
  GString *out = g_string_sized_new (strlen (s));

  while (*s) {
    gsize i;

    for (i = 0; i < G_N_ELEMENTS (map); i++) {
      gsize n = strlen (map[i].from);

      if (strncmp (s, map[i].from, n) == 0) {
        g_string_append (out, map[i].to);
        s += n;
        break;
      }
    }
    if (i == G_N_ELEMENTS (map))
      g_string_append_c (out, *s++);
  }
  return g_string_free (out, FALSE);
}

static inline void
gpunet_tool_text_write_ (FILE * f, const gchar * s)
{
  const gchar *charset;

  if (g_get_charset (&charset)) {
    fputs (s, f);               /* a UTF-8 locale: as is */
  } else {
    gchar *a = gpunet_tool_text_ascii_quotes (s);
    gchar *l = g_convert_with_fallback (a, -1, charset, "UTF-8", "?", NULL, NULL,
        NULL);

    fputs (l ? l : a, f);
    g_free (l);
    g_free (a);
  }
  fflush (f);
}

static inline void
gpunet_tool_text_print_ (const gchar * s)
{
  gpunet_tool_text_write_ (stdout, s);
}

static inline void
gpunet_tool_text_printerr_ (const gchar * s)
{
  gpunet_tool_text_write_ (stderr, s);
}

/* Call first in main(). */
static inline void
gpunet_tool_text_init (void)
{
  setlocale (LC_CTYPE, "");
  g_set_print_handler (gpunet_tool_text_print_);
  g_set_printerr_handler (gpunet_tool_text_printerr_);
}

#endif

/* gpunet-cameras-config.c: the service's configuration.  A GKeyFile with one
 * [service] group (engine, health and output keys, the long options' names) and
 * one group per camera (the group's name is the camera's name; keys uri,
 * interval, roi).  Every error names the file, the line and the key. */
#include <stdlib.h>
#include <string.h>

#include "gpunet-cameras.h"

const gdouble cam_bucket_bounds_ms[CAM_N_BUCKETS] = {
  5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000
};

CamConfig *
cam_config_new_defaults (void)
{
  CamConfig *c = g_new0 (CamConfig, 1);

  c->model = g_strdup ("gpunet-0");
  c->backend = g_strdup ("auto");
  c->batch_size = 1;
  c->stall_timeout = 10;
  c->reconnect_min = 1;
  c->reconnect_max = 30;
  c->max_retries = 0;
  c->mqtt_port = 1883;
  c->mqtt_qos = 0;
  c->mqtt_queue = 1000;
  c->mqtt_prefix = g_strdup ("gpunet");
  c->metrics_port = 0;
  c->metrics_address = g_strdup ("127.0.0.1");
  c->cameras = g_ptr_array_new_with_free_func ((GDestroyNotify) cam_spec_free);
  return c;
}

void
cam_spec_free (CamSpec * s)
{
  if (s == NULL)
    return;
  g_free (s->name);
  g_free (s->uri);
  g_free (s);
}

CamSpec *
cam_spec_copy (const CamSpec * s)
{
  CamSpec *c = g_memdup2 (s, sizeof *s);

  c->name = g_strdup (s->name);
  c->uri = g_strdup (s->uri);
  return c;
}

gboolean
cam_spec_equal (const CamSpec * a, const CamSpec * b)
{
  return g_strcmp0 (a->name, b->name) == 0 && g_strcmp0 (a->uri, b->uri) == 0
      && a->interval == b->interval && a->has_roi == b->has_roi
      && (!a->has_roi || memcmp (a->roi, b->roi, sizeof a->roi) == 0);
}

void
cam_config_free (CamConfig * c)
{
  if (c == NULL)
    return;
  g_free (c->model);
  g_free (c->checkpoint);
  g_free (c->backend);
  g_free (c->when_busy);
  g_free (c->json_output);
  g_free (c->json_dir);
  g_free (c->mqtt_host);
  g_free (c->mqtt_prefix);
  g_free (c->mqtt_client_id);
  g_free (c->metrics_address);
  g_ptr_array_unref (c->cameras);
  g_free (c);
}

static gboolean
valid_name (const gchar * n)
{
  /* it becomes an MQTT topic level, a file name and a label value */
  if (n == NULL || *n == '\0' || strlen (n) > 64)
    return FALSE;
  for (; *n; n++)
    if (!g_ascii_isalnum (*n) && *n != '-' && *n != '_' && *n != '.')
      return FALSE;
  return TRUE;
}

static const gchar *
uri_problem (const gchar * uri)
{
  static const gchar *schemes[] = { "rtsp", "rtsps", "rtspt", "http", "https",
    "file", "v4l2", NULL
  };
  gchar *scheme;
  gboolean ok = FALSE;

  if (!gst_uri_is_valid (uri))
    return "is not a URI (rtsp://, http://, file:///path or v4l2:///dev/videoN)";
  scheme = gst_uri_get_protocol (uri);
  for (gint i = 0; schemes[i]; i++)
    ok |= g_ascii_strcasecmp (scheme, schemes[i]) == 0;
  g_free (scheme);
  if (!ok)
    return "has a scheme this service does not open (rtsp, http, https, file, "
        "v4l2)";
  if (g_str_has_prefix (uri, "v4l2://") && !g_str_has_prefix (uri, "v4l2:///dev/"))
    return "names no device: write v4l2:///dev/videoN";
  return NULL;
}

static gboolean
parse_roi (const gchar * v, gint roi[4])
{
  gchar **p = g_strsplit (v, ",", -1);
  gboolean ok = g_strv_length (p) == 4;

  for (gint i = 0; ok && i < 4; i++) {
    gchar *end;
    gint64 x = g_ascii_strtoll (g_strstrip (p[i]), &end, 10);

    ok = *p[i] != '\0' && *end == '\0' && x >= 0 && x <= 65535
        && (i < 2 || x > 0);
    roi[i] = (gint) x;
  }
  g_strfreev (p);
  return ok;
}

/* line numbers of "group\037key" and of "group" (key "") */
static GHashTable *
scan_lines (const gchar * file, const gchar * text, gchar ** error)
{
  GHashTable *lines = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
      NULL);
  gchar **ls = g_strsplit (text, "\n", -1), *group = NULL;

  for (gint i = 0; ls[i]; i++) {
    gchar *l = g_strstrip (ls[i]);
    gchar *eq;

    if (*l == '\0' || *l == '#' || *l == ';')
      continue;
    if (*l == '[') {
      if (l[strlen (l) - 1] != ']' || strlen (l) < 3) {
        *error = g_strdup_printf ("%s:%d: '%s' is not a [group] line: write "
            "[service] or [camera-name]", file, i + 1, l);
        goto fail;
      }
      g_free (group);
      group = g_strndup (l + 1, strlen (l) - 2);
      if (g_hash_table_contains (lines, group)) {
        *error = g_strdup_printf ("%s:%d: group [%s] appears twice: give each "
            "camera its own name", file, i + 1, group);
        goto fail;
      }
      g_hash_table_insert (lines, g_strdup (group), GINT_TO_POINTER (i + 1));
      continue;
    }
    eq = strchr (l, '=');
    if (eq == NULL || eq == l) {
      *error = g_strdup_printf ("%s:%d: '%s' is not a key=value line, a [group] "
          "or a # comment", file, i + 1, l);
      goto fail;
    }
    if (group == NULL) {
      *error = g_strdup_printf ("%s:%d: key '%.*s' comes before any [group]: "
          "put it under [service] or a [camera-name] group", file, i + 1,
          (int) (eq - l), l);
      goto fail;
    }
    *eq = '\0';
    g_hash_table_insert (lines, g_strdup_printf ("%s\037%s", group,
            g_strstrip (l)), GINT_TO_POINTER (i + 1));
  }
  g_free (group);
  g_strfreev (ls);
  return lines;
fail:
  g_free (group);
  g_strfreev (ls);
  g_hash_table_unref (lines);
  return NULL;
}

static gint
line_of (GHashTable * lines, const gchar * group, const gchar * key)
{
  gchar *k = g_strdup_printf ("%s\037%s", group, key);
  gint l = GPOINTER_TO_INT (g_hash_table_lookup (lines, k));

  g_free (k);
  return l ? l : GPOINTER_TO_INT (g_hash_table_lookup (lines, group));
}

typedef enum
{ K_STR, K_INT, K_DOUBLE } KType;
typedef struct
{
  const gchar *key;
  KType type;
  gsize offset;
  gdouble min, max;
} KeyDef;

#define O(f) G_STRUCT_OFFSET (CamConfig, f)
static const KeyDef service_keys[] = {
  {"model", K_STR, O (model), 0, 0},
  {"checkpoint", K_STR, O (checkpoint), 0, 0},
  {"backend", K_STR, O (backend), 0, 0},
  {"when-busy", K_STR, O (when_busy), 0, 0},
  {"n-threads", K_INT, O (n_threads), 0, 1024},
  {"batch-size", K_INT, O (batch_size), 1, 64},
  {"stall-timeout", K_DOUBLE, O (stall_timeout), 0.1, 86400},
  {"reconnect-min", K_DOUBLE, O (reconnect_min), 0.01, 86400},
  {"reconnect-max", K_DOUBLE, O (reconnect_max), 0.01, 86400},
  {"max-retries", K_INT, O (max_retries), 0, 1000000},
  {"json-output", K_STR, O (json_output), 0, 0},
  {"json-dir", K_STR, O (json_dir), 0, 0},
  {"mqtt-host", K_STR, O (mqtt_host), 0, 0},
  {"mqtt-port", K_INT, O (mqtt_port), 1, 65535},
  {"mqtt-prefix", K_STR, O (mqtt_prefix), 0, 0},
  {"mqtt-client-id", K_STR, O (mqtt_client_id), 0, 0},
  {"mqtt-qos", K_INT, O (mqtt_qos), 0, 1},
  {"mqtt-queue", K_INT, O (mqtt_queue), 1, 10000000},
  {"metrics-port", K_INT, O (metrics_port), 0, 65535},
  {"metrics-address", K_STR, O (metrics_address), 0, 0},
};
#undef O

gboolean
cam_config_check_ranges (const CamConfig * cfg, gchar ** error)
{
  for (guint j = 0; j < G_N_ELEMENTS (service_keys); j++) {
    const KeyDef *d = &service_keys[j];
    gdouble x;

    if (d->type == K_STR)
      continue;
    x = d->type == K_INT ? *(const gint *) G_STRUCT_MEMBER_P (cfg, d->offset)
        : *(const gdouble *) G_STRUCT_MEMBER_P (cfg, d->offset);
    if (!(x >= d->min && x <= d->max)) {
      *error = g_strdup_printf ("--%s %g is out of range: give %s from %g to %g",
          d->key, x, d->type == K_INT ? "an integer" : "a number", d->min, d->max);
      return FALSE;
    }
  }
  return TRUE;
}

static gboolean
load_service (CamConfig * cfg, GKeyFile * kf, GHashTable * lines,
    const gchar * file, gchar ** error)
{
  gchar **keys = g_key_file_get_keys (kf, "service", NULL, NULL);
  gboolean ok = TRUE;

  for (gint i = 0; ok && keys && keys[i]; i++) {
    const KeyDef *d = NULL;
    gchar *v = g_key_file_get_string (kf, "service", keys[i], NULL);
    gint line = line_of (lines, "service", keys[i]);

    for (guint j = 0; j < G_N_ELEMENTS (service_keys); j++)
      if (strcmp (service_keys[j].key, keys[i]) == 0)
        d = &service_keys[j];
    if (d == NULL) {
      *error = g_strdup_printf ("%s:%d: key '%s' is not a [service] key (see "
          "gpunet-cameras --help for the list)", file, line, keys[i]);
      ok = FALSE;
    } else if (d->type == K_STR) {
      gchar **slot = G_STRUCT_MEMBER_P (cfg, d->offset);

      g_free (*slot);
      *slot = g_strdup (v);
    } else {
      gchar *end;
      gdouble x = g_ascii_strtod (v, &end);

      if (*v == '\0' || *end != '\0' || !(x >= d->min && x <= d->max)
          || (d->type == K_INT && x != (gint) x)) {
        *error = g_strdup_printf ("%s:%d: key '%s': '%s' is not %s from %g to "
            "%g", file, line, keys[i], v, d->type == K_INT ? "an integer" :
            "a number", d->min, d->max);
        ok = FALSE;
      } else if (d->type == K_INT) {
        *(gint *) G_STRUCT_MEMBER_P (cfg, d->offset) = (gint) x;
      } else {
        *(gdouble *) G_STRUCT_MEMBER_P (cfg, d->offset) = x;
      }
    }
    g_free (v);
  }
  g_strfreev (keys);
  return ok;
}

static gboolean
load_camera (CamConfig * cfg, GKeyFile * kf, GHashTable * lines,
    const gchar * file, const gchar * group, gchar ** error)
{
  gchar **keys = g_key_file_get_keys (kf, group, NULL, NULL);
  CamSpec *s = g_new0 (CamSpec, 1);
  gboolean ok = TRUE;

  s->name = g_strdup (group);
  if (!valid_name (group)) {
    *error = g_strdup_printf ("%s:%d: camera [%s]: a camera name is 1-64 of "
        "A-Z a-z 0-9 - _ . (it becomes an MQTT topic level and a file name)",
        file, line_of (lines, group, ""), group);
    ok = FALSE;
  }
  for (gint i = 0; ok && keys && keys[i]; i++) {
    gchar *v = g_key_file_get_string (kf, group, keys[i], NULL);
    gint line = line_of (lines, group, keys[i]);
    const gchar *why;

    if (strcmp (keys[i], "uri") == 0) {
      if ((why = uri_problem (v)) != NULL) {
        *error = g_strdup_printf ("%s:%d: key 'uri': '%s' %s", file, line, v,
            why);
        ok = FALSE;
      }
      s->uri = g_strdup (v);
    } else if (strcmp (keys[i], "interval") == 0) {
      gchar *end;
      gint64 x = g_ascii_strtoll (v, &end, 10);

      if (*v == '\0' || *end != '\0' || x < 0 || x > 10000) {
        *error = g_strdup_printf ("%s:%d: key 'interval': '%s' is not a whole "
            "number of frames from 0 to 10000", file, line, v);
        ok = FALSE;
      }
      s->interval = (guint) x;
    } else if (strcmp (keys[i], "roi") == 0) {
      if (!parse_roi (v, s->roi)) {
        *error = g_strdup_printf ("%s:%d: key 'roi': '%s' is not x,y,width,"
            "height in pixels (four whole numbers, width and height > 0)",
            file, line, v);
        ok = FALSE;
      }
      s->has_roi = TRUE;
    } else {
      *error = g_strdup_printf ("%s:%d: key '%s' is not a camera key (uri, "
          "interval, roi)", file, line, keys[i]);
      ok = FALSE;
    }
    g_free (v);
  }
  if (ok && s->uri == NULL) {
    *error = g_strdup_printf ("%s:%d: camera [%s] has no key 'uri'", file,
        line_of (lines, group, ""), group);
    ok = FALSE;
  }
  g_strfreev (keys);
  if (ok)
    g_ptr_array_add (cfg->cameras, s);
  else
    cam_spec_free (s);
  return ok;
}

gboolean
cam_config_load (CamConfig * cfg, const gchar * file, gchar ** error)
{
  gchar *text = NULL, **groups = NULL;
  GError *err = NULL;
  GKeyFile *kf = NULL;
  GHashTable *lines = NULL;
  gboolean ok = FALSE;

  if (!g_file_get_contents (file, &text, NULL, &err)) {
    *error = g_strdup_printf ("%s: %s", file, err->message);
    goto out;
  }
  if ((lines = scan_lines (file, text, error)) == NULL)
    goto out;
  kf = g_key_file_new ();
  if (!g_key_file_load_from_data (kf, text, -1, G_KEY_FILE_NONE, &err)) {
    *error = g_strdup_printf ("%s: %s", file, err->message);
    goto out;
  }
  groups = g_key_file_get_groups (kf, NULL);
  ok = TRUE;
  for (gint i = 0; ok && groups[i]; i++) {
    if (strcmp (groups[i], "service") == 0)
      ok = load_service (cfg, kf, lines, file, error);
    else
      ok = load_camera (cfg, kf, lines, file, groups[i], error);
  }
out:
  g_clear_error (&err);
  g_strfreev (groups);
  if (kf)
    g_key_file_free (kf);
  if (lines)
    g_hash_table_unref (lines);
  g_free (text);
  return ok;
}

gboolean
cam_config_add_arg (CamConfig * cfg, const gchar * arg, gchar ** error)
{
  const gchar *eq = strstr (arg, "=");
  const gchar *colon = strstr (arg, "://");
  CamSpec *s = g_new0 (CamSpec, 1);
  const gchar *why;

  if (eq && (colon == NULL || eq < colon)) {
    s->name = g_strndup (arg, eq - arg);
    s->uri = g_strdup (eq + 1);
  } else {
    s->name = g_strdup_printf ("cam%u", cfg->cameras->len);
    s->uri = g_strdup (arg);
  }
  if (!valid_name (s->name)) {
    *error = g_strdup_printf ("--camera '%s': a camera name is 1-64 of A-Z a-z "
        "0-9 - _ .", arg);
  } else if ((why = uri_problem (s->uri)) != NULL) {
    *error = g_strdup_printf ("--camera '%s': '%s' %s", arg, s->uri, why);
  } else {
    for (guint i = 0; i < cfg->cameras->len; i++)
      if (strcmp (((CamSpec *) cfg->cameras->pdata[i])->name, s->name) == 0) {
        *error = g_strdup_printf ("--camera '%s': the name '%s' is taken",
            arg, s->name);
        cam_spec_free (s);
        return FALSE;
      }
    g_ptr_array_add (cfg->cameras, s);
    return TRUE;
  }
  cam_spec_free (s);
  return FALSE;
}

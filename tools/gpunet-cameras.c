/* gpunet-cameras: a service for N cameras in one process sharing one engine
 * (docs/cameras.md).  This file owns the command line, the service's life cycle
 * (start, SIGHUP reload, SIGTERM drain) and the fan-out of every record and health
 * event to the outputs: JSON lines, MQTT and the Prometheus endpoint.
 * Exit: 0 after SIGTERM/SIGINT, 1 when it cannot start, 2 usage or bad config. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib-unix.h>
#include <json-glib/json-glib.h>

#include "gpunet-cameras.h"
#include "gpunet-plugin-find.h"
#include "gpunet-tool-text.h"

/* what the command line set (NULL / -1: not set) */
static gchar *o_config, *o_model, *o_checkpoint, *o_backend, *o_when_busy,
    *o_json, *o_json_dir, *o_mqtt_host, *o_mqtt_prefix, *o_mqtt_id,
    *o_metrics_address, *o_plugin_path;
static gchar **o_cameras;
/* not given: G_MININT and -G_MAXDOUBLE (a negative or NaN value given is refused by
 * the range check, not ignored) */
static gint o_threads = G_MININT, o_batch = G_MININT, o_retries = G_MININT,
    o_mqtt_port = G_MININT, o_mqtt_qos = G_MININT, o_mqtt_queue = G_MININT,
    o_metrics_port = G_MININT;
static gdouble o_stall = -G_MAXDOUBLE, o_rmin = -G_MAXDOUBLE, o_rmax = -G_MAXDOUBLE;
static gboolean o_check;

static GOptionEntry entries[] = {
  {"config", 'c', 0, G_OPTION_ARG_FILENAME, &o_config,
      "GKeyFile with [service] and one [NAME] group per camera", "FILE"},
  {"camera", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o_cameras,
      "A camera NAME=URI (repeatable; also positional URIs)", "NAME=URI"},
  {"model", 0, 0, G_OPTION_ARG_STRING, &o_model,
      "Built-in model or architecture JSON (default gpunet-0)", "NAME"},
  {"checkpoint", 0, 0, G_OPTION_ARG_FILENAME, &o_checkpoint,
      "Weights file (required)", "FILE"},
  {"backend", 0, 0, G_OPTION_ARG_STRING, &o_backend, "auto, cpu or cuda", "B"},
  {"n-threads", 0, 0, G_OPTION_ARG_INT, &o_threads,
      "CPU threads of the engine (0 = all cores)", "T"},
  {"batch-size", 0, 0, G_OPTION_ARG_INT, &o_batch,
      "Most images per engine pass (default 1)", "N"},
  {"when-busy", 0, 0, G_OPTION_ARG_STRING, &o_when_busy,
      "wait, skip or auto (when the element has the property)", "MODE"},
  {"stall-timeout", 0, 0, G_OPTION_ARG_DOUBLE, &o_stall,
      "Seconds without a frame before a camera is stalled (default 10)", "S"},
  {"reconnect-min", 0, 0, G_OPTION_ARG_DOUBLE, &o_rmin,
      "First back-off in seconds (default 1), doubled per failed try", "S"},
  {"reconnect-max", 0, 0, G_OPTION_ARG_DOUBLE, &o_rmax,
      "Longest back-off in seconds (default 30)", "S"},
  {"max-retries", 0, 0, G_OPTION_ARG_INT, &o_retries,
      "Failed tries in a row before a camera is down (0 = never, default)", "N"},
  {"json-output", 0, 0, G_OPTION_ARG_FILENAME, &o_json,
      "Append every record and event as a JSON line to FILE", "FILE"},
  {"json-dir", 0, 0, G_OPTION_ARG_FILENAME, &o_json_dir,
      "Append each camera's lines to DIR/NAME.jsonl", "DIR"},
  {"mqtt-host", 0, 0, G_OPTION_ARG_STRING, &o_mqtt_host,
      "Publish to this MQTT broker", "HOST"},
  {"mqtt-port", 0, 0, G_OPTION_ARG_INT, &o_mqtt_port, "Broker port (1883)",
      "PORT"},
  {"mqtt-prefix", 0, 0, G_OPTION_ARG_STRING, &o_mqtt_prefix,
      "Topic prefix (default gpunet)", "P"},
  {"mqtt-client-id", 0, 0, G_OPTION_ARG_STRING, &o_mqtt_id,
      "Client id (default gpunet-cameras-PID)", "ID"},
  {"mqtt-qos", 0, 0, G_OPTION_ARG_INT, &o_mqtt_qos, "0 or 1 (default 0)", "Q"},
  {"mqtt-queue", 0, 0, G_OPTION_ARG_INT, &o_mqtt_queue,
      "Messages kept while the broker is away (default 1000)", "N"},
  {"metrics-port", 0, 0, G_OPTION_ARG_INT, &o_metrics_port,
      "Serve Prometheus metrics on this port (0 = off)", "PORT"},
  {"metrics-address", 0, 0, G_OPTION_ARG_STRING, &o_metrics_address,
      "Address to serve metrics on (default 127.0.0.1)", "IP"},
  {"plugin-path", 0, 0, G_OPTION_ARG_FILENAME, &o_plugin_path,
      "Directory of the gpunet plugin", "DIR"},
  {"check-config", 0, 0, G_OPTION_ARG_NONE, &o_check,
      "Read the configuration, report and exit", NULL},
  {NULL}
};

static gchar **o_rest;

#define SET_STR(f, o) if (o) { g_free (cfg->f); cfg->f = g_strdup (o); }
#define SET_NUM(f, o) if (o != G_MININT) cfg->f = o
#define SET_DOUBLE(f, o) if (o != -G_MAXDOUBLE) cfg->f = o

/* defaults, then the file, then the command line */
static CamConfig *
make_config (gchar ** error)
{
  CamConfig *cfg = cam_config_new_defaults ();

  if (o_config && !cam_config_load (cfg, o_config, error))
    goto fail;
  SET_STR (model, o_model);
  SET_STR (checkpoint, o_checkpoint);
  SET_STR (backend, o_backend);
  SET_STR (when_busy, o_when_busy);
  SET_STR (json_output, o_json);
  SET_STR (json_dir, o_json_dir);
  SET_STR (mqtt_host, o_mqtt_host);
  SET_STR (mqtt_prefix, o_mqtt_prefix);
  SET_STR (mqtt_client_id, o_mqtt_id);
  SET_STR (metrics_address, o_metrics_address);
  SET_NUM (n_threads, o_threads);
  SET_NUM (batch_size, o_batch);
  SET_NUM (max_retries, o_retries);
  SET_NUM (mqtt_port, o_mqtt_port);
  SET_NUM (mqtt_qos, o_mqtt_qos);
  SET_NUM (mqtt_queue, o_mqtt_queue);
  SET_NUM (metrics_port, o_metrics_port);
  SET_DOUBLE (stall_timeout, o_stall);
  SET_DOUBLE (reconnect_min, o_rmin);
  SET_DOUBLE (reconnect_max, o_rmax);
  for (gint i = 0; o_cameras && o_cameras[i]; i++)
    if (!cam_config_add_arg (cfg, o_cameras[i], error))
      goto fail;
  for (gint i = 0; o_rest && o_rest[i]; i++)
    if (!cam_config_add_arg (cfg, o_rest[i], error))
      goto fail;
  if (cfg->checkpoint == NULL) {
    *error = g_strdup ("no weights: give --checkpoint FILE or checkpoint= in "
        "[service]");
    goto fail;
  }
  if (cfg->cameras->len == 0) {
    *error = g_strdup ("no camera: give --camera NAME=URI or a [NAME] group "
        "with uri= in the --config file");
    goto fail;
  }
  if (!cam_config_check_ranges (cfg, error))
    goto fail;
  if (cfg->mqtt_qos < 0 || cfg->mqtt_qos > 1 || cfg->batch_size < 1
      || cfg->batch_size > 64 || cfg->stall_timeout <= 0
      || cfg->reconnect_min <= 0 || cfg->reconnect_max < cfg->reconnect_min
      || cfg->mqtt_queue < 1 || cfg->metrics_port > 65535) {
    *error = g_strdup ("out of range: --mqtt-qos 0..1, --batch-size 1..64, "
        "--stall-timeout > 0, 0 < --reconnect-min <= --reconnect-max, "
        "--mqtt-queue >= 1, --metrics-port 0..65535");
    goto fail;
  }
  if (cfg->when_busy && strcmp (cfg->when_busy, "wait") != 0
      && strcmp (cfg->when_busy, "skip") != 0
      && strcmp (cfg->when_busy, "auto") != 0) {
    *error = g_strdup_printf ("when-busy '%s': write wait, skip or auto",
        cfg->when_busy);
    goto fail;
  }
  return cfg;
fail:
  cam_config_free (cfg);
  return NULL;
}

static gchar *
now_iso (void)
{
  GDateTime *d = g_date_time_new_now_utc ();
  gchar *s = g_date_time_format_iso8601 (d);

  g_date_time_unref (d);
  return s;
}

static gchar *
to_line (JsonBuilder * b)
{
  JsonGenerator *g = json_generator_new ();
  JsonNode *n = json_builder_get_root (b);
  gchar *s;

  json_generator_set_root (g, n);
  s = json_generator_to_data (g, NULL);
  json_node_unref (n);
  g_object_unref (g);
  return s;
}

void
service_state_event (Service * svc, Camera * cam)
{
  JsonBuilder *b = json_builder_new ();
  gchar *t = now_iso (), *line;

  json_builder_begin_object (b);
  json_builder_set_member_name (b, "time");
  json_builder_add_string_value (b, t);
  json_builder_set_member_name (b, "camera");
  json_builder_add_string_value (b, cam->spec->name);
  json_builder_set_member_name (b, "event");
  json_builder_add_string_value (b, "state");
  json_builder_set_member_name (b, "state");
  json_builder_add_string_value (b, cam_state_name (cam->state));
  json_builder_set_member_name (b, "reason");
  if (cam->reason)
    json_builder_add_string_value (b, cam->reason);
  else
    json_builder_add_null_value (b);
  json_builder_set_member_name (b, "reconnects");
  json_builder_add_int_value (b, (gint64) cam->reconnects);
  json_builder_end_object (b);
  line = to_line (b);
  svc->events++;
  printf ("%s\n", line);
  fflush (stdout);
  cam_json_write (svc->json, cam->spec->name, line);
  cam_mqtt_publish (svc->mqtt, cam->spec->name, "state", line, TRUE);
  g_free (line);
  g_free (t);
  g_object_unref (b);
}

static void
add_array (JsonBuilder * b, const GstStructure * s, const gchar * field)
{
  const GValue *arr = gst_structure_get_value (s, field);

  json_builder_set_member_name (b, field);
  json_builder_begin_array (b);
  for (guint i = 0; arr && GST_VALUE_HOLDS_ARRAY (arr)
      && i < gst_value_array_get_size (arr); i++) {
    const GValue *v = gst_value_array_get_value (arr, i);

    if (G_VALUE_HOLDS_INT (v))
      json_builder_add_int_value (b, g_value_get_int (v));
    else if (G_VALUE_HOLDS_DOUBLE (v))
      json_builder_add_double_value (b, g_value_get_double (v));
    else if (G_VALUE_HOLDS_STRING (v))
      json_builder_add_string_value (b, g_value_get_string (v));
  }
  json_builder_end_array (b);
}

void
service_record (Service * svc, Camera * cam, const GstStructure * s)
{
  JsonBuilder *b = json_builder_new ();
  gchar *t = now_iso (), *line;
  gboolean inferred = TRUE;
  gint id = -1, roi = -1;
  gdouble conf = 0;
  guint64 frame = 0, pts = 0;

  gst_structure_get_boolean (s, "inferred", &inferred);
  gst_structure_get_int (s, "label-id", &id);
  gst_structure_get_int (s, "roi-id", &roi);
  gst_structure_get_double (s, "confidence", &conf);
  gst_structure_get_uint64 (s, "frame", &frame);
  gst_structure_get_uint64 (s, "timestamp", &pts);
  if (inferred)
    cam->classified++;
  else
    cam->carried++;
  cam->records++;

  json_builder_begin_object (b);
  json_builder_set_member_name (b, "time");
  json_builder_add_string_value (b, t);
  json_builder_set_member_name (b, "camera");
  json_builder_add_string_value (b, cam->spec->name);
  json_builder_set_member_name (b, "event");
  json_builder_add_string_value (b, "class");
  json_builder_set_member_name (b, "frame");
  json_builder_add_int_value (b, (gint64) frame);
  json_builder_set_member_name (b, "pts");
  json_builder_add_int_value (b, (gint64) pts);
  json_builder_set_member_name (b, "roi-id");
  json_builder_add_int_value (b, roi);
  json_builder_set_member_name (b, "model");
  json_builder_add_string_value (b, gst_structure_get_string (s, "model"));
  json_builder_set_member_name (b, "label");
  json_builder_add_string_value (b, gst_structure_get_string (s, "label"));
  json_builder_set_member_name (b, "label-id");
  json_builder_add_int_value (b, id);
  json_builder_set_member_name (b, "confidence");
  json_builder_add_double_value (b, conf);
  json_builder_set_member_name (b, "inferred");
  json_builder_add_boolean_value (b, inferred);
  add_array (b, s, "ids");
  add_array (b, s, "labels");
  add_array (b, s, "scores");
  json_builder_end_object (b);
  line = to_line (b);
  cam_json_write (svc->json, cam->spec->name, line);
  cam_mqtt_publish (svc->mqtt, cam->spec->name, "class", line, FALSE);
  g_free (line);
  g_free (t);
  g_object_unref (b);
}

static void
start_cameras (Service * svc)
{
  for (guint i = 0; i < svc->cfg->cameras->len; i++) {
    CamSpec *s = svc->cfg->cameras->pdata[i];

    g_hash_table_insert (svc->cameras, g_strdup (s->name), camera_start (svc,
            s));
  }
}

static gboolean
on_hup (gpointer user)
{
  Service *svc = user;
  gchar *error = NULL;
  CamConfig *cfg = make_config (&error);
  GHashTableIter it;
  gpointer k, v;
  guint added = 0, removed = 0, changed = 0;

  if (cfg == NULL) {
    fprintf (stderr, "{\"event\":\"reload-failed\",\"error\":\"%s\"}\n"
        "gpunet-cameras: SIGHUP: the new configuration is not used: %s; "
        "the running one stays\n", error, error);
    g_free (error);
    return G_SOURCE_CONTINUE;
  }
  /* removed or changed cameras stop */
  g_hash_table_iter_init (&it, svc->cameras);
  while (g_hash_table_iter_next (&it, &k, &v)) {
    Camera *cam = v;
    CamSpec *n = NULL;

    for (guint i = 0; i < cfg->cameras->len; i++)
      if (strcmp (((CamSpec *) cfg->cameras->pdata[i])->name, k) == 0)
        n = cfg->cameras->pdata[i];
    if (n && cam_spec_equal (n, cam->spec))
      continue;
    n ? changed++ : removed++;
    camera_stop (cam);
    g_hash_table_iter_remove (&it);
  }
  /* the engine and output keys are the running ones: they take effect on a
   * restart; only the camera list is reloaded */
  g_ptr_array_unref (svc->cfg->cameras);
  svc->cfg->cameras = g_ptr_array_ref (cfg->cameras);
  for (guint i = 0; i < cfg->cameras->len; i++) {
    CamSpec *s = cfg->cameras->pdata[i];

    if (g_hash_table_contains (svc->cameras, s->name))
      continue;
    added++;
    g_hash_table_insert (svc->cameras, g_strdup (s->name), camera_start (svc,
            s));
  }
  fprintf (stderr, "gpunet-cameras: SIGHUP: reloaded: %u added, %u removed, "
      "%u restarted with a new setting, %u untouched\n", added - changed,
      removed, changed, g_hash_table_size (svc->cameras) - added);
  cam_config_free (cfg);
  return G_SOURCE_CONTINUE;
}

/* Loads the model once as the cameras will (the element, started alone): FALSE
 * with the element's sentence in *error (g_free) when it does not load. */
static gboolean
check_model (const CamConfig * cfg, gchar ** error)
{
  gchar *desc = g_strdup_printf ("gpunetclassify model=\"%s\" checkpoint=\"%s\" "
      "backend=%s n-threads=%d ! fakesink", cfg->model, cfg->checkpoint,
      cfg->backend, cfg->n_threads);
  GError *err = NULL;
  GstElement *pipe = gst_parse_launch (desc, &err);
  gboolean ok = FALSE;

  g_free (desc);
  if (pipe == NULL) {
    *error = g_strdup (err->message);
    g_clear_error (&err);
    return FALSE;
  }
  g_clear_error (&err);
  if (gst_element_set_state (pipe, GST_STATE_PAUSED) == GST_STATE_CHANGE_FAILURE) {
    GstBus *bus = gst_element_get_bus (pipe);
    GstMessage *m = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);

    if (m) {
      gst_message_parse_error (m, &err, NULL);
      *error = g_strdup (err->message);
      g_clear_error (&err);
      gst_message_unref (m);
    } else {
      *error = g_strdup ("the model did not load");
    }
    gst_object_unref (bus);
  } else {
    ok = TRUE;
  }
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (pipe);
  return ok;
}

static gboolean
on_term (gpointer user)
{
  Service *svc = user;

  if (!svc->stopping)
    g_main_loop_quit (svc->loop);
  svc->stopping = TRUE;
  return G_SOURCE_CONTINUE;
}

/* SIGTERM: every pipeline gets EOS so the frames in the engine come out; their
 * records are written before the outputs close (at most 3 s in all) */
static void
drain (Service * svc)
{
  GHashTableIter it;
  gpointer v;
  gint64 end = g_get_monotonic_time () + 3 * G_USEC_PER_SEC;

  g_hash_table_iter_init (&it, svc->cameras);
  while (g_hash_table_iter_next (&it, NULL, &v)) {
    Camera *cam = v;

    if (cam->pipe && cam->bus_watch) {
      g_source_remove (cam->bus_watch);
      cam->bus_watch = 0;
      gst_element_send_event (cam->pipe, gst_event_new_eos ());
    }
  }
  g_hash_table_iter_init (&it, svc->cameras);
  while (g_hash_table_iter_next (&it, NULL, &v)) {
    Camera *cam = v;
    GstBus *bus;
    gboolean done = FALSE;

    if (cam->pipe == NULL)
      continue;
    bus = gst_element_get_bus (cam->pipe);
    while (!done) {
      gint64 left = end - g_get_monotonic_time ();
      GstMessage *m = left > 0 ? gst_bus_timed_pop_filtered (bus,
          left * GST_USECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR |
          GST_MESSAGE_ELEMENT) : NULL;

      if (m == NULL)
        break;
      if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_ELEMENT) {
        const GstStructure *s = gst_message_get_structure (m);

        if (gst_structure_has_name (s, "gpunetclassify"))
          service_record (svc, cam, s);
      } else {
        done = TRUE;
      }
      gst_message_unref (m);
    }
    gst_object_unref (bus);
  }
}

int
main (int argc, char **argv)
{
  GOptionEntry rest[] = {
    {G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_STRING_ARRAY, &o_rest, NULL,
        "[NAME=]URI..."},
    {NULL}
  };
  GOptionContext *ctx = g_option_context_new ("[NAME=]URI...");
  GError *err = NULL;
  gchar *error = NULL;
  Service svc = { 0 };
  GHashTableIter it;
  gpointer v;

  gpunet_tool_text_init ();     /* GLib's quotes as ASCII in the C locale */
  g_option_context_set_summary (ctx, "Classifies N cameras with one shared "
      "GPUNet engine, reconnects them, and publishes results and health as "
      "JSON lines, MQTT and Prometheus metrics (docs/cameras.md).");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_add_main_entries (ctx, rest, NULL);
  g_option_context_add_group (ctx, gst_init_get_option_group ());
  if (!g_option_context_parse (ctx, &argc, &argv, &err)) {
    g_printerr ("gpunet-cameras: %s (see --help)\n", err->message);
    return 2;
  }
  g_option_context_free (ctx);
  svc.cfg = make_config (&error);
  if (svc.cfg == NULL) {
    fprintf (stderr, "gpunet-cameras: %s; not starting\n", error);
    return 2;
  }
  if (o_check) {
    printf ("configuration ok: %u cameras\n", svc.cfg->cameras->len);
    return 0;
  }
  if (!gpunet_plugin_find_built (o_plugin_path)) {
    fprintf (stderr, "gpunet-cameras: the GStreamer element 'gpunetclassify' "
        "is not available: install the gpunet plugin or give --plugin-path\n");
    return 1;
  }
  if (svc.cfg->when_busy) {
    GstElement *e = gst_element_factory_make ("gpunetclassify", NULL);

    if (!g_object_class_find_property (G_OBJECT_GET_CLASS (e), "when-busy"))
      fprintf (stderr, "gpunet-cameras: this gpunetclassify has no "
          "'when-busy' property; when-busy=%s is not applied\n",
          svc.cfg->when_busy);
    gst_object_unref (gst_object_ref_sink (e));
  }
  /* a model that does not load fails every camera the same way: say it once,
   * before anything starts or is written */
  if (!check_model (svc.cfg, &error)) {
    g_printerr ("gpunet-cameras: %s; not starting\n", error);
    g_free (error);
    return 2;
  }
  if ((svc.cfg->json_output || svc.cfg->json_dir)
      && (svc.json = cam_json_open (svc.cfg->json_output, svc.cfg->json_dir,
              &error)) == NULL)
    goto fail;
  if (svc.cfg->mqtt_host
      && (svc.mqtt = cam_mqtt_new (svc.cfg, &error)) == NULL)
    goto fail;
  svc.cameras = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  if (svc.cfg->metrics_port > 0
      && (svc.metrics = cam_metrics_new (&svc, svc.cfg->metrics_address,
              svc.cfg->metrics_port, &error)) == NULL)
    goto fail;
  svc.config_file = o_config;
  svc.loop = g_main_loop_new (NULL, FALSE);
  /* a JSON output that is a FIFO or pipe whose reader went away: a failed write
   * (an error event, a counted loss), not a SIGPIPE that ends the service */
  signal (SIGPIPE, SIG_IGN);
  g_unix_signal_add (SIGTERM, on_term, &svc);
  g_unix_signal_add (SIGINT, on_term, &svc);
  g_unix_signal_add (SIGHUP, on_hup, &svc);
  start_cameras (&svc);
  fprintf (stderr, "gpunet-cameras: %u cameras started%s\n",
      svc.cfg->cameras->len, svc.metrics ? "; metrics served" : "");
  g_main_loop_run (svc.loop);

  drain (&svc);
  g_hash_table_iter_init (&it, svc.cameras);
  while (g_hash_table_iter_next (&it, NULL, &v)) {
    camera_stop (v);
    g_hash_table_iter_remove (&it);
  }
  camera_join_pending (5000);
  cam_mqtt_close (svc.mqtt);
  cam_json_close (svc.json);
  cam_metrics_close (svc.metrics);
  g_hash_table_unref (svc.cameras);
  g_main_loop_unref (svc.loop);
  cam_config_free (svc.cfg);
  fprintf (stderr, "gpunet-cameras: stopped; outputs closed\n");
  return 0;
fail:
  fprintf (stderr, "gpunet-cameras: %s\n", error);
  cam_json_close (svc.json);
  cam_mqtt_close (svc.mqtt);
  return 1;
}

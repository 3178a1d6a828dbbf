/* gpunet-cameras-metrics.c: the Prometheus text endpoint (GET /metrics), served
 * with libsoup 3 on the main loop.  Every figure is read when scraped; names and
 * meanings are listed in docs/cameras.md. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <libsoup/soup.h>

#include "gpunet-cameras.h"

static void
help (GString * t, const gchar * name, const gchar * type, const gchar * text)
{
  g_string_append_printf (t, "# HELP %s %s\n# TYPE %s %s\n", name, text, name,
      type);
}

static gint
by_name (gconstpointer a, gconstpointer b)
{
  const Camera *x = *(Camera * const *) a, *y = *(Camera * const *) b;
  return strcmp (x->spec->name, y->spec->name);
}

static guint64
rss_bytes (void)
{
  gchar *s = NULL;
  guint64 pages = 0;

  if (g_file_get_contents ("/proc/self/statm", &s, NULL, NULL))
    sscanf (s, "%*u %" G_GUINT64_FORMAT, &pages);
  g_free (s);
  return pages * (guint64) sysconf (_SC_PAGESIZE);
}

#define PER_CAM(NAME, TYPE, TEXT, FMT, EXPR) do { \
  help (t, NAME, TYPE, TEXT); \
  for (guint i = 0; i < cams->len; i++) { \
    Camera *c = cams->pdata[i]; \
    g_string_append_printf (t, NAME "{camera=\"%s\"} " FMT "\n", \
        c->spec->name, EXPR); \
  } } while (0)

gchar *
cam_metrics_text (Service * svc)
{
  GString *t = g_string_new (NULL);
  GPtrArray *cams = g_ptr_array_new ();
  GHashTableIter it;
  gpointer v;
  guint64 sent, dropped, queued;
  gboolean conn;
  gdouble occ = -1, pass = -1;

  g_hash_table_iter_init (&it, svc->cameras);
  while (g_hash_table_iter_next (&it, NULL, &v))
    g_ptr_array_add (cams, v);
  g_ptr_array_sort (cams, by_name);

  PER_CAM ("gpunet_camera_frames_total", "counter",
      "Frames that reached the classifier", "%" G_GUINT64_FORMAT,
      (guint64) __atomic_load_n (&c->cnt->frames_in, __ATOMIC_RELAXED));
  PER_CAM ("gpunet_camera_classified_total", "counter",
      "Records the engine computed (inferred=true)", "%" G_GUINT64_FORMAT,
      c->classified);
  PER_CAM ("gpunet_camera_carried_total", "counter",
      "Records carried from an earlier frame (inferred=false: interval or skip)",
      "%" G_GUINT64_FORMAT, c->carried);
  PER_CAM ("gpunet_camera_skipped_total", "counter",
      "Frames the element passed on without waiting for the engine "
      "(when-busy=skip; 0 without element stats)", "%" G_GUINT64_FORMAT,
      c->skipped);
  PER_CAM ("gpunet_camera_failed_total", "counter",
      "Frames whose classification failed (element stats)",
      "%" G_GUINT64_FORMAT, c->failed);
  PER_CAM ("gpunet_camera_dropped_total", "counter",
      "Frames the element dropped (element stats)", "%" G_GUINT64_FORMAT,
      c->dropped);
  PER_CAM ("gpunet_camera_latency_p50_ms", "gauge",
      "Median latency of the element's last 1024 frames (element stats)",
      "%.3f", c->p50_ms);
  PER_CAM ("gpunet_camera_latency_p99_ms", "gauge",
      "99th percentile latency of the element's last 1024 frames (element "
      "stats)", "%.3f", c->p99_ms);
  PER_CAM ("gpunet_camera_reconnects_total", "counter",
      "Times the camera's pipeline was rebuilt after an error or a stall",
      "%" G_GUINT64_FORMAT, c->reconnects);
  PER_CAM ("gpunet_camera_damaged_total", "counter",
      "Stream damage seen: gaps (DISCONT) at the depayloader or decoder and "
      "buffers marked corrupted", "%" G_GUINT64_FORMAT,
      (guint64) __atomic_load_n (&c->cnt->damaged, __ATOMIC_RELAXED));
  PER_CAM ("gpunet_camera_warnings_total", "counter",
      "Warning messages the camera's pipeline posted", "%" G_GUINT64_FORMAT,
      c->warnings);
  PER_CAM ("gpunet_camera_fps", "gauge",
      "Frames per second reaching the classifier (last second)", "%.3f",
      c->fps);
  PER_CAM ("gpunet_camera_queue_depth", "gauge",
      "Frames of this camera queued in the engine (element stats)", "%u",
      c->queue_depth);

  help (t, "gpunet_camera_state", "gauge",
      "1 for the camera's current health state, 0 for the others");
  for (guint i = 0; i < cams->len; i++)
    for (gint s = CAM_STARTING; s <= CAM_DOWN; s++)
      g_string_append_printf (t, "gpunet_camera_state{camera=\"%s\",state="
          "\"%s\"} %d\n", ((Camera *) cams->pdata[i])->spec->name,
          cam_state_name (s), ((Camera *) cams->pdata[i])->state == (CamState) s);

  help (t, "gpunet_camera_latency_ms", "histogram",
      "Milliseconds from a frame entering the classifier to leaving it");
  for (guint i = 0; i < cams->len; i++) {
    Camera *c = cams->pdata[i];

    g_mutex_lock (&c->cnt->lock);
    for (gint b = 0; b < CAM_N_BUCKETS; b++)
      g_string_append_printf (t, "gpunet_camera_latency_ms_bucket{camera=\"%s\","
          "le=\"%g\"} %" G_GUINT64_FORMAT "\n", c->spec->name,
          cam_bucket_bounds_ms[b], c->cnt->lat_buckets[b]);
    g_string_append_printf (t, "gpunet_camera_latency_ms_bucket{camera=\"%s\","
        "le=\"+Inf\"} %" G_GUINT64_FORMAT "\n", c->spec->name,
        c->cnt->lat_count);
    g_string_append_printf (t, "gpunet_camera_latency_ms_sum{camera=\"%s\"} "
        "%.3f\n", c->spec->name, c->cnt->lat_sum_ms);
    g_string_append_printf (t, "gpunet_camera_latency_ms_count{camera=\"%s\"} "
        "%" G_GUINT64_FORMAT "\n", c->spec->name, c->cnt->lat_count);
    g_mutex_unlock (&c->cnt->lock);
    if (c->have_element_stats) {
      occ = MAX (occ, c->batch_occupancy);
      pass = MAX (pass, c->pass_ms);
    }
  }
  if (occ >= 0) {
    help (t, "gpunet_engine_batch_occupancy", "gauge",
        "Mean images per engine pass divided by batch-size (element stats)");
    g_string_append_printf (t, "gpunet_engine_batch_occupancy %.4f\n", occ);
  }
  if (pass >= 0) {
    help (t, "gpunet_engine_pass_ms", "gauge",
        "Mean milliseconds of one engine pass (element stats)");
    g_string_append_printf (t, "gpunet_engine_pass_ms %.3f\n", pass);
  }
  help (t, "gpunet_process_resident_bytes", "gauge",
      "Resident memory of the service process");
  g_string_append_printf (t, "gpunet_process_resident_bytes %" G_GUINT64_FORMAT
      "\n", rss_bytes ());
  help (t, "gpunet_events_total", "counter", "Health events emitted");
  g_string_append_printf (t, "gpunet_events_total %" G_GUINT64_FORMAT "\n",
      svc->events);
  help (t, "gpunet_json_lines_total", "counter", "JSON lines written");
  g_string_append_printf (t, "gpunet_json_lines_total %" G_GUINT64_FORMAT "\n",
      cam_json_written (svc->json));
  help (t, "gpunet_json_lost_total", "counter",
      "JSON lines that could not be written (disk full, I/O error)");
  g_string_append_printf (t, "gpunet_json_lost_total %" G_GUINT64_FORMAT "\n",
      cam_json_lost (svc->json));
  cam_mqtt_stats (svc->mqtt, &sent, &dropped, &queued, &conn);
  help (t, "gpunet_mqtt_sent_total", "counter", "MQTT messages handed to the "
      "broker connection");
  g_string_append_printf (t, "gpunet_mqtt_sent_total %" G_GUINT64_FORMAT "\n",
      sent);
  help (t, "gpunet_mqtt_dropped_total", "counter", "MQTT messages dropped "
      "because the queue was full while the broker was away");
  g_string_append_printf (t, "gpunet_mqtt_dropped_total %" G_GUINT64_FORMAT
      "\n", dropped);
  help (t, "gpunet_mqtt_queued", "gauge", "MQTT messages waiting for the broker");
  g_string_append_printf (t, "gpunet_mqtt_queued %" G_GUINT64_FORMAT "\n",
      queued);
  help (t, "gpunet_mqtt_connected", "gauge", "1 while connected to the broker");
  g_string_append_printf (t, "gpunet_mqtt_connected %d\n", conn ? 1 : 0);
  g_ptr_array_unref (cams);
  return g_string_free (t, FALSE);
}

static void
on_metrics (SoupServer * server, SoupServerMessage * msg, const char *path,
    GHashTable * query, gpointer user)
{
  gchar *body;

  (void) server;
  (void) query;
  if (strcmp (path, "/metrics") != 0) {
    soup_server_message_set_status (msg, SOUP_STATUS_NOT_FOUND, NULL);
    return;
  }
  body = cam_metrics_text (user);
  soup_server_message_set_status (msg, SOUP_STATUS_OK, NULL);
  soup_server_message_set_response (msg, "text/plain; version=0.0.4",
      SOUP_MEMORY_TAKE, body, strlen (body));
}

gpointer
cam_metrics_new (Service * svc, const gchar * address, gint port,
    gchar ** error)
{
  SoupServer *s = soup_server_new ("server-header", "gpunet-cameras", NULL);
  GSocketAddress *a = g_inet_socket_address_new_from_string (address, port);
  GError *err = NULL;

  if (a == NULL) {
    *error = g_strdup_printf ("--metrics-address '%s' is not an IP address",
        address);
    g_object_unref (s);
    return NULL;
  }
  soup_server_add_handler (s, NULL, on_metrics, svc, NULL);
  if (!soup_server_listen (s, a, 0, &err)) {
    *error = g_strdup_printf ("cannot serve metrics on %s:%d: %s", address,
        port, err->message);
    g_clear_error (&err);
    g_object_unref (a);
    g_object_unref (s);
    return NULL;
  }
  g_object_unref (a);
  return s;
}

void
cam_metrics_close (gpointer m)
{
  if (m) {
    soup_server_disconnect (m);
    g_object_unref (m);
  }
}

/* gpunet-cameras-mqtt.c: MQTT out through libmosquitto.  Results go to
 * PREFIX/CAMERA/class, health to PREFIX/CAMERA/state (retained), at QoS 0 or 1.
 * libmosquitto's own thread keeps the connection and reconnects (1 s, doubling to
 * 30 s); while the broker is away, messages wait in a bounded queue of our own
 * (mqtt-queue messages), the oldest dropped and counted when it is full.  Publishing
 * happens on the main loop's thread only. */
#include <stdio.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <mosquitto.h>

#include "gpunet-cameras.h"

typedef struct
{
  gchar *topic, *payload;
  gboolean retain;
} Msg;

typedef struct
{
  struct mosquitto *m;
  gchar *prefix, *host;
  gint qos, port;
  guint cap;
  GQueue queue;
  gint connected;               /* atomic */
  gint unacked;                 /* atomic: QoS 1 messages not yet acknowledged */
  guint64 sent, dropped;
  guint flush_timer;
  gboolean was_connected;
} CamMqtt;

static void
msg_free (Msg * m)
{
  g_free (m->topic);
  g_free (m->payload);
  g_free (m);
}

static void
on_connect (struct mosquitto *m, void *user, int rc)
{
  CamMqtt *q = user;

  (void) m;
  g_atomic_int_set (&q->connected, rc == 0);
  if (rc != 0)
    fprintf (stderr, "gpunet-cameras: MQTT broker %s:%d refused the "
        "connection: %s\n", q->host, q->port, mosquitto_connack_string (rc));
}

static void
on_disconnect (struct mosquitto *m, void *user, int rc)
{
  CamMqtt *q = user;

  (void) m;
  (void) rc;
  g_atomic_int_set (&q->connected, 0);
}

static void
on_publish (struct mosquitto *m, void *user, int mid)
{
  CamMqtt *q = user;

  (void) m;
  (void) mid;
  if (q->qos > 0)
    g_atomic_int_add (&q->unacked, -1);
}

static gboolean
send_one (CamMqtt * q, Msg * msg)
{
  int rc = mosquitto_publish (q->m, NULL, msg->topic, (int) strlen (msg->payload),
      msg->payload, q->qos, msg->retain);

  if (rc != MOSQ_ERR_SUCCESS)
    return FALSE;
  if (q->qos > 0)
    g_atomic_int_inc (&q->unacked);
  q->sent++;
  return TRUE;
}

static void
flush (CamMqtt * q)
{
  while (g_atomic_int_get (&q->connected) && !g_queue_is_empty (&q->queue)) {
    Msg *msg = g_queue_peek_head (&q->queue);

    if (!send_one (q, msg))
      break;
    msg_free (g_queue_pop_head (&q->queue));
  }
}

static gboolean
on_flush (gpointer user)
{
  CamMqtt *q = user;
  gboolean c = g_atomic_int_get (&q->connected);

  if (c != q->was_connected)
    fprintf (stderr, "gpunet-cameras: MQTT broker %s:%d %s (%u queued, %"
        G_GUINT64_FORMAT " dropped so far)\n", q->host, q->port,
        c ? "connected" : "is away", g_queue_get_length (&q->queue), q->dropped);
  q->was_connected = c;
  flush (q);
  return G_SOURCE_CONTINUE;
}

gpointer
cam_mqtt_new (const CamConfig * cfg, gchar ** error)
{
  CamMqtt *q = g_new0 (CamMqtt, 1);
  gchar *id = cfg->mqtt_client_id ? g_strdup (cfg->mqtt_client_id) :
      g_strdup_printf ("gpunet-cameras-%d", (int) getpid ());
  int rc;

  mosquitto_lib_init ();
  q->m = mosquitto_new (id, TRUE, q);
  g_free (id);
  if (q->m == NULL) {
    *error = g_strdup ("cannot create an MQTT client (out of memory?)");
    g_free (q);
    return NULL;
  }
  q->prefix = g_strdup (cfg->mqtt_prefix);
  q->host = g_strdup (cfg->mqtt_host);
  q->port = cfg->mqtt_port;
  q->qos = cfg->mqtt_qos;
  q->cap = (guint) cfg->mqtt_queue;
  g_queue_init (&q->queue);
  mosquitto_connect_callback_set (q->m, on_connect);
  mosquitto_disconnect_callback_set (q->m, on_disconnect);
  mosquitto_publish_callback_set (q->m, on_publish);
  mosquitto_reconnect_delay_set (q->m, 1, 30, true);
  mosquitto_max_inflight_messages_set (q->m, 100);
  /* a broker that is down at start is not an error: the loop keeps trying */
  rc = mosquitto_connect_async (q->m, q->host, q->port, 30);
  if (rc != MOSQ_ERR_SUCCESS && rc != MOSQ_ERR_ERRNO) {
    *error = g_strdup_printf ("MQTT broker %s:%d: %s", q->host, q->port,
        mosquitto_strerror (rc));
    mosquitto_destroy (q->m);
    g_free (q->prefix);
    g_free (q->host);
    g_free (q);
    return NULL;
  }
  if (rc == MOSQ_ERR_ERRNO)
    fprintf (stderr, "gpunet-cameras: MQTT broker %s:%d: %s; retrying in the "
        "background\n", q->host, q->port, g_strerror (errno));
  mosquitto_loop_start (q->m);
  q->flush_timer = g_timeout_add (100, on_flush, q);
  return q;
}

void
cam_mqtt_publish (gpointer p, const gchar * camera, const gchar * kind,
    const gchar * payload, gboolean retain)
{
  CamMqtt *q = p;
  Msg *msg;

  if (q == NULL)
    return;
  msg = g_new0 (Msg, 1);
  msg->topic = g_strdup_printf ("%s/%s/%s", q->prefix, camera, kind);
  msg->payload = g_strdup (payload);
  msg->retain = retain;
  flush (q);
  if (g_queue_is_empty (&q->queue) && g_atomic_int_get (&q->connected)
      && send_one (q, msg)) {
    msg_free (msg);
    return;
  }
  if (g_queue_get_length (&q->queue) >= q->cap) {
    msg_free (g_queue_pop_head (&q->queue));
    q->dropped++;
  }
  g_queue_push_tail (&q->queue, msg);
}

void
cam_mqtt_stats (gpointer p, guint64 * sent, guint64 * dropped, guint64 * queued,
    gboolean * connected)
{
  CamMqtt *q = p;

  *sent = q ? q->sent : 0;
  *dropped = q ? q->dropped : 0;
  *queued = q ? g_queue_get_length (&q->queue) : 0;
  *connected = q ? g_atomic_int_get (&q->connected) : FALSE;
}

void
cam_mqtt_close (gpointer p)
{
  CamMqtt *q = p;
  gint64 end;

  if (q == NULL)
    return;
  g_source_remove (q->flush_timer);
  /* drain: what is queued, and QoS 1 acknowledgements, for at most 3 s */
  end = g_get_monotonic_time () + 3 * G_USEC_PER_SEC;
  while (g_get_monotonic_time () < end && (!g_queue_is_empty (&q->queue)
          || g_atomic_int_get (&q->unacked) > 0)) {
    if (!g_atomic_int_get (&q->connected) && g_queue_is_empty (&q->queue))
      break;
    flush (q);
    g_usleep (10000);
  }
  if (!g_queue_is_empty (&q->queue))
    fprintf (stderr, "gpunet-cameras: MQTT: %u messages not delivered at exit "
        "(broker away)\n", g_queue_get_length (&q->queue));
  mosquitto_disconnect (q->m);
  mosquitto_loop_stop (q->m, FALSE);
  mosquitto_destroy (q->m);
  mosquitto_lib_cleanup ();
  g_queue_clear_full (&q->queue, (GDestroyNotify) msg_free);
  g_free (q->prefix);
  g_free (q->host);
  g_free (q);
}

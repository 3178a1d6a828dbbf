/* gpunet-cameras.h: the types the gpunet-cameras service shares between its files:
 * the configuration (config.c), one camera and its reconnecting pipeline
 * (source.c), and the outputs (json.c, mqtt.c, metrics.c).  Everything here is
 * touched from the main loop's thread only, except the counters marked atomic,
 * which streaming threads bump. */
#ifndef GPUNET_CAMERAS_H
#define GPUNET_CAMERAS_H

#include <gst/gst.h>

/* the latency histogram's upper bounds (ms), as the element's stats use them */
#define CAM_N_BUCKETS 10
extern const gdouble cam_bucket_bounds_ms[CAM_N_BUCKETS];

typedef struct
{
  gchar *name;
  gchar *uri;
  guint interval;
  gboolean has_roi;
  gint roi[4];                  /* x, y, w, h */
} CamSpec;

typedef struct
{
  /* engine */
  gchar *model, *checkpoint, *backend, *when_busy;
  gint n_threads, batch_size;
  /* health */
  gdouble stall_timeout, reconnect_min, reconnect_max;
  gint max_retries;             /* 0: retry forever */
  /* outputs */
  gchar *json_output, *json_dir;
  gchar *mqtt_host, *mqtt_prefix, *mqtt_client_id;
  gint mqtt_port, mqtt_qos, mqtt_queue;
  gint metrics_port;
  gchar *metrics_address;
  /* cameras */
  GPtrArray *cameras;           /* CamSpec* */
} CamConfig;

/* config.c */
CamConfig *cam_config_new_defaults (void);
/* Reads FILE into cfg (service keys and cameras).  FALSE and *error "FILE:LINE: key
 * 'K': what is wrong" on any malformed line, unknown key or bad value. */
gboolean cam_config_load (CamConfig * cfg, const gchar * file, gchar ** error);
/* Adds "NAME=URI" (or a bare URI, named camN) from the command line. */
gboolean cam_config_add_arg (CamConfig * cfg, const gchar * arg, gchar ** error);
/* FALSE and *error (naming the option, its value and its range) when a numeric
 * [service] value is outside the range the file's key has: the command line's are
 * checked only here. */
gboolean cam_config_check_ranges (const CamConfig * cfg, gchar ** error);
gboolean cam_spec_equal (const CamSpec * a, const CamSpec * b);
CamSpec *cam_spec_copy (const CamSpec * s);
void cam_spec_free (CamSpec * s);
void cam_config_free (CamConfig * cfg);

typedef enum
{
  CAM_STARTING, CAM_UP, CAM_STALLED, CAM_RECONNECTING, CAM_DOWN, CAM_STOPPED
} CamState;
const gchar *cam_state_name (CamState s);

/* what the streaming threads count; reference-counted (g_atomic_rc_box) because a
 * pipeline being torn down in its own thread may still run its probes */
typedef struct
{
  gint64 last_frame_us;         /* atomic */
  guint64 frames_in;            /* atomic */
  guint64 damaged;              /* atomic: discontinuities and corrupted buffers */
  GMutex lock;                  /* the latency fields */
  GHashTable *entered;          /* PTS+1 -> entry time (us) */
  guint64 lat_buckets[CAM_N_BUCKETS];   /* cumulative as exported */
  guint64 lat_count;
  gdouble lat_sum_ms;
} CamCounters;

typedef struct _Camera Camera;
typedef struct _Service Service;

struct _Camera
{
  Service *svc;
  CamSpec *spec;
  CamState state;
  gchar *reason;
  gchar *missing;                /* last missing-plugin description */
  GstElement *pipe;
  guint bus_watch, timer;
  gint attempts;                /* failed starts since the last frame */
  gint64 state_since;
  CamCounters *cnt;             /* shared with the pipeline's probes */
  /* main-thread counters */
  guint64 classified, carried, skipped, failed, reconnects, warnings, records;
  guint64 frames_prev;
  gint64 fps_t;
  gdouble fps;
  gdouble batch_occupancy, pass_ms;
  gdouble p50_ms, p99_ms;         /* the element's, last 1024 frames */
  guint64 dropped, dropped_base;
  guint queue_depth;
  gboolean have_element_stats;
  guint64 skipped_base, failed_base;  /* totals of earlier pipelines */
  guint64 frames_seen;          /* frames_in at the last poll */
  gint64 start_us;
  guint retry_timer;
};

struct _Service
{
  CamConfig *cfg;
  gchar *config_file;
  GHashTable *cameras;          /* name -> Camera* */
  GMainLoop *loop;
  gpointer json, mqtt, metrics;
  guint64 events;
  gboolean stopping;
};

/* source.c */
Camera *camera_start (Service * svc, const CamSpec * spec);
void camera_stop (Camera * cam);        /* tears down, frees */
void camera_poll_stats (Camera * cam);
void camera_join_pending (guint ms);

/* events from source.c to every output (main.c) */
void service_state_event (Service * svc, Camera * cam);
void service_record (Service * svc, Camera * cam, const GstStructure * rec);

/* json.c: one file, or one per camera in a directory */
gpointer cam_json_open (const gchar * file, const gchar * dir, gchar ** error);
void cam_json_write (gpointer j, const gchar * camera, const gchar * line);
guint64 cam_json_lost (gpointer j);
guint64 cam_json_written (gpointer j);
void cam_json_close (gpointer j);

/* mqtt.c */
gpointer cam_mqtt_new (const CamConfig * cfg, gchar ** error);
void cam_mqtt_publish (gpointer m, const gchar * camera, const gchar * kind,
    const gchar * payload, gboolean retain);
void cam_mqtt_stats (gpointer m, guint64 * sent, guint64 * dropped,
    guint64 * queued, gboolean * connected);
void cam_mqtt_close (gpointer m);       /* flushes what it can (bounded wait) */

/* metrics.c */
gpointer cam_metrics_new (Service * svc, const gchar * address, gint port,
    gchar ** error);
gchar *cam_metrics_text (Service * svc);
void cam_metrics_close (gpointer m);

#endif

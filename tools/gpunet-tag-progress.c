/* gpunet-tag-progress.c: progress on stderr. On a terminal, one bar line redrawn
 * in place (inputs done, frames/s, ETA, current input); otherwise plain lines: one
 * per finished input and a heartbeat every 30 s on long inputs. */
#include <stdio.h>
#include <unistd.h>

#include "gpunet-tag-common.h"

#define HEARTBEAT_US (30 * G_USEC_PER_SEC)
#define BAR_WIDTH 24

struct TagProgress {
  gboolean tty, quiet, drawn;
  guint total, index;
  gchar *name;
  gint64 t0, last_line;
  guint64 done_frames, cur_frames;
  gdouble cur_fraction;
};

TagProgress *
tag_progress_new (guint total, gboolean quiet)
{
  TagProgress *p = g_new0 (TagProgress, 1);

  p->tty = isatty (STDERR_FILENO);
  p->quiet = quiet;
  p->total = total;
  p->t0 = p->last_line = g_get_monotonic_time ();
  return p;
}

static gchar *
format_hms (gdouble s)
{
  guint64 t = s > 0 && s < 1e8 ? (guint64) (s + 0.5) : 0;

  return g_strdup_printf ("%" G_GUINT64_FORMAT ":%02u:%02u", t / 3600,
      (guint) (t / 60 % 60), (guint) (t % 60));
}

/* Redraws the bar; ETA from the finished inputs plus the current input's
 * position within its duration (when the container announces one). */
static void
draw (TagProgress * p)
{
  gdouble el = (g_get_monotonic_time () - p->t0) / 1e6;
  gdouble f = p->total ? (p->index + p->cur_fraction) / p->total : 1.0;
  gdouble fps = el > 0 ? (p->done_frames + p->cur_frames) / el : 0;
  gchar bar[BAR_WIDTH + 1];
  gchar *eta = f > 0.001 ? format_hms (el * (1 - f) / f) : g_strdup ("?");
  guint fill = (guint) (f * BAR_WIDTH);

  for (guint i = 0; i < BAR_WIDTH; i++)
    bar[i] = i < fill ? '#' : '.';
  bar[BAR_WIDTH] = '\0';
  fprintf (stderr, "\r\033[K[%s] %u/%u inputs  %.1f frames/s  ETA %s  %s",
      bar, p->index, p->total, fps, eta, p->name ? p->name : "");
  fflush (stderr);
  p->drawn = TRUE;
  g_free (eta);
}

static void
clear_bar (TagProgress * p)
{
  if (p->tty && p->drawn) {
    fputs ("\r\033[K", stderr);
    p->drawn = FALSE;
  }
}

void
tag_progress_input_start (TagProgress * p, guint index, const gchar * name)
{
  g_free (p->name);
  p->name = g_strdup (name);
  p->index = index;
  p->cur_frames = 0;
  p->cur_fraction = 0;
  p->last_line = g_get_monotonic_time ();
  if (!p->quiet && p->tty)
    draw (p);
}

/* Called by the runner about four times a second while an input runs. */
void
tag_progress_tick (gpointer data, guint64 decoded, gdouble position,
    gdouble duration)
{
  TagProgress *p = data;
  gint64 now = g_get_monotonic_time ();

  p->cur_frames = decoded;
  p->cur_fraction = duration > 0 && position > 0 ?
      CLAMP (position / duration, 0.0, 1.0) : 0.0;
  if (p->quiet)
    return;
  if (p->tty) {
    draw (p);
  } else if (now - p->last_line >= HEARTBEAT_US) {
    fprintf (stderr, "gpunet-tag: [%u/%u] %s: %" G_GUINT64_FORMAT
        " frames so far, at %.1f s\n", p->index + 1, p->total, p->name,
        decoded, MAX (position, 0.0));
    p->last_line = now;
  }
}

void
tag_progress_input_done (TagProgress * p, const gchar * name, gboolean ok,
    guint64 frames, gdouble wall_s, const gchar * message)
{
  p->done_frames += frames;
  p->cur_frames = 0;
  p->cur_fraction = 0;
  p->index++;
  if (p->quiet && ok && message == NULL)
    return;
  clear_bar (p);
  if (ok && message)            /* partial: frames were lost */
    fprintf (stderr, "gpunet-tag: [%u/%u] %s: partial, %" G_GUINT64_FORMAT
        " frames in %.2f s: %s\n", p->index, p->total, name, frames, wall_s,
        message);
  else if (ok)
    fprintf (stderr, "gpunet-tag: [%u/%u] %s: ok, %" G_GUINT64_FORMAT
        " frames in %.2f s (%.1f frames/s)\n", p->index, p->total, name,
        frames, wall_s, wall_s > 0 ? frames / wall_s : 0.0);
  else
    fprintf (stderr, "gpunet-tag: [%u/%u] %s: FAILED: %s\n", p->index,
        p->total, name, message ? message : "unknown error");
  if (p->tty && !p->quiet)
    draw (p);
}

/* An input --resume found complete: counted, one line when not on a terminal. */
void
tag_progress_skip (TagProgress * p, const gchar * name)
{
  p->index++;
  if (p->quiet)
    return;
  if (p->tty)
    draw (p);
  else
    fprintf (stderr, "gpunet-tag: [%u/%u] %s: already done, skipped\n",
        p->index, p->total, name);
}

void
tag_progress_message (TagProgress * p, const gchar * fmt, ...)
{
  va_list ap;
  gchar *s;

  va_start (ap, fmt);
  s = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  clear_bar (p);
  fprintf (stderr, "gpunet-tag: %s\n", s);
  g_free (s);
}

void
tag_progress_free (TagProgress * p)
{
  if (p == NULL)
    return;
  clear_bar (p);
  fflush (stderr);
  g_free (p->name);
  g_free (p);
}

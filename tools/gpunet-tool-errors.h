/* gpunet-tool-errors.h: the sentence a decoding tool prints for a GStreamer error
 * from one of its inputs.  GStreamer's messages name no input and its debug text
 * names internal elements ('qtdemux2', 'uridecodebin0'), and decodebin reports a
 * file without video (audio only) as a missing plug-in; these helpers turn an
 * error, plus what the tool saw of the input's streams, into what went wrong and
 * how to fix it, without element names.  The caller prefixes which input it was.
 * Also the sentences for an input that hangs instead of failing (the open and
 * stall timeouts of gpunet-tag and gpunet-streams), and the rule and sentence for
 * one that ends without an error before the duration its container announced (a
 * file cut short: gpunet-tag's and gpunet-streams' "truncated").
 * GStreamer only, header only (gpunet-run, gpunet-tag, gpunet-streams,
 * gpunet-cameras). */
#ifndef GPUNET_TOOL_ERRORS_H
#define GPUNET_TOOL_ERRORS_H

#include <string.h>

#include <gst/gst.h>

/* What decodebin's missing-plugin messages said about one input. */
typedef struct
{
  gchar *video;                 /* caps name of a video/image stream no decoder takes */
  gboolean other;               /* a non-video stream (audio, subtitles) had none */
  gchar *other_kind;            /* the caps name of the first such stream */
} GpunetToolMissing;

/* Notes a missing-plugin element message (others are ignored). */
static inline void
gpunet_tool_missing_note (GpunetToolMissing * mi, GstMessage * m)
{
  const GstStructure *st = gst_message_get_structure (m);
  const GValue *v;
  const gchar *n = NULL;

  if (GST_MESSAGE_TYPE (m) != GST_MESSAGE_ELEMENT || st == NULL
      || !gst_structure_has_name (st, "missing-plugin"))
    return;
  v = gst_structure_get_value (st, "detail");
  if (v && GST_VALUE_HOLDS_CAPS (v)) {
    const GstCaps *c = gst_value_get_caps (v);

    if (c && gst_caps_get_size (c) > 0)
      n = gst_structure_get_name (gst_caps_get_structure (c, 0));
  }
  if (n && (g_str_has_prefix (n, "video/") || g_str_has_prefix (n, "image/"))) {
    if (mi->video == NULL)
      mi->video = g_strdup (n);
  } else {
    mi->other = TRUE;
    if (mi->other_kind == NULL && n)
      mi->other_kind = g_strdup (n);
  }
}

static inline void
gpunet_tool_missing_clear (GpunetToolMissing * mi)
{
  g_clear_pointer (&mi->video, g_free);
  g_clear_pointer (&mi->other_kind, g_free);
  mi->other = FALSE;
}

/* TRUE when `e` (with its debug text `debug`, may be NULL) is what decodebin and
 * its demuxers post when an input has no video stream a decoder takes: a missing
 * plug-in, no codec, or a demuxer stopped with not-linked (its only streams were
 * not video, and nothing took them). */
static inline gboolean
gpunet_tool_error_is_no_video (const GError * e, const gchar * debug)
{
  return g_error_matches (e, GST_CORE_ERROR, GST_CORE_ERROR_MISSING_PLUGIN)
      || g_error_matches (e, GST_STREAM_ERROR, GST_STREAM_ERROR_CODEC_NOT_FOUND)
      || (g_error_matches (e, GST_STREAM_ERROR, GST_STREAM_ERROR_FAILED)
      && debug != NULL && strstr (debug, "not-linked") != NULL);
}

/* The sentence for error `e` from an input's elements (g_free).  `video_seen`:
 * the input already delivered video (then a missing plug-in is not about the
 * video).  Names no element; says what to do where GStreamer's message does not. */
static inline gchar *
gpunet_tool_error_text (const GError * e, const gchar * debug,
    gboolean video_seen, const GpunetToolMissing * mi)
{
  const gchar *hint = NULL;

  if (!video_seen && gpunet_tool_error_is_no_video (e, debug)) {
    if (mi && mi->video)
      return g_strdup_printf ("no decoder for its video (%s) is installed; "
          "install the GStreamer plug-in that decodes it (gst-inspect-1.0 lists "
          "those present)", mi->video);
    return g_strdup ("no video stream in this input (audio or other streams "
        "only); give a video file or stream");
  }
  if (e->domain == GST_STREAM_ERROR) {
    switch (e->code) {
      case GST_STREAM_ERROR_DEMUX:
      case GST_STREAM_ERROR_DECODE:
      case GST_STREAM_ERROR_TYPE_NOT_FOUND:
      case GST_STREAM_ERROR_WRONG_TYPE:
      case GST_STREAM_ERROR_FORMAT:
        hint = "the file is damaged, or not a video GStreamer reads";
        break;
      default:
        break;
    }
  } else if (e->domain == GST_RESOURCE_ERROR) {
    switch (e->code) {
      case GST_RESOURCE_ERROR_NOT_FOUND:
      case GST_RESOURCE_ERROR_OPEN_READ:
      case GST_RESOURCE_ERROR_READ:
        hint = "check the path or address and that it can be read";
        break;
      default:
        break;
    }
  }
  if (hint == NULL)
    return g_strdup (e->message);
  return g_strdup_printf ("%s (%s)", e->message, hint);
}

/* An input whose source's state change did not return within `seconds`
 * (--open-timeout; g_free). */
static inline gchar *
gpunet_tool_open_timeout_text (gdouble seconds)
{
  return g_strdup_printf ("the source did not open within %g s (a stalled "
      "network source, or a file on a hung mount?); raise --open-timeout if it "
      "is only slow", seconds);
}

/* An input whose source's state change failed without saying why on the bus
 * (g_free). */
static inline gchar *
gpunet_tool_open_failed_text (void)
{
  return g_strdup ("its source could not be started (check the path or address "
      "and that it can be read)");
}

/* An input that opened but gave no video frame within `seconds` (--open-timeout;
 * g_free): decodebin waits for ever on some cut files, a FIFO or a server may
 * send nothing. */
static inline gchar *
gpunet_tool_no_frame_text (gdouble seconds)
{
  return g_strdup_printf ("no video frame within %g s of opening (a damaged or "
      "cut file, no video stream, or a source that sends nothing); raise "
      "--open-timeout if it is only slow", seconds);
}

/* An input that delivered `frames` frames and then none for `seconds`, with no
 * end of stream and no error (--stall-timeout; g_free). */
static inline gchar *
gpunet_tool_stall_text (gdouble seconds, guint64 frames)
{
  return g_strdup_printf ("no frame for %g s after %" G_GUINT64_FORMAT " frames "
      "and no end of stream (the source stalled, or the file is cut short); raise "
      "--stall-timeout if it is only slow", seconds, frames);
}

/* Seconds of a buffer's position in the stream (segment stream time when it is
 * valid, else the raw PTS); -1 when the buffer has no timestamp. */
static inline gdouble
gpunet_tool_buffer_seconds (GstClockTime pts, const GstSegment * segment)
{
  guint64 t = GST_CLOCK_TIME_NONE;

  if (!GST_CLOCK_TIME_IS_VALID (pts))
    return -1.0;
  if (segment && segment->format == GST_FORMAT_TIME)
    t = gst_segment_to_stream_time (segment, GST_FORMAT_TIME, pts);
  if (!GST_CLOCK_TIME_IS_VALID (t))
    t = pts;
  return (gdouble) t / GST_SECOND;
}

/* FALSE for a demuxer's pad that is not video (audio, subtitles): such a stream
 * may run past the video's end, so the container's duration is then no measure
 * of the video's (gpunet_tool_truncated).  The caps decide where the demuxer set
 * them before adding the pad, else the pad's name ("audio_0"). */
static inline gboolean
gpunet_tool_demux_pad_is_video (GstPad * pad)
{
  GstCaps *caps = gst_pad_get_current_caps (pad);
  const gchar *kind = NULL;
  gchar *name = gst_pad_get_name (pad);
  gboolean video;

  if (caps && gst_caps_get_size (caps) > 0)
    kind = gst_structure_get_name (gst_caps_get_structure (caps, 0));
  video = kind ? g_str_has_prefix (kind, "video/")
      || g_str_has_prefix (kind, "image/") : g_str_has_prefix (name, "video");
  g_free (name);
  if (caps)
    gst_caps_unref (caps);
  return video;
}

/* TRUE when an input decoded to its end without an error is truncated: its
 * decoded frames end at `end` s (the last one's end, stream time), before the
 * `container` s its container announced (<= 0: unknown, never truncated) by
 * more than half a second (2 % of a long input) where video is its only
 * stream; where it has others (`other_streams`: audio may outlast the video),
 * by more than 1 s (5 %). */
static inline gboolean
gpunet_tool_truncated (gdouble end, gdouble container, gboolean other_streams)
{
  return container > 0 && end >= 0
      && end < container - (other_streams ? MAX (1.0, 0.05 * container)
      : MAX (0.5, 0.02 * container));
}

/* What gpunet_tool_truncated found (g_free). */
static inline gchar *
gpunet_tool_truncated_text (gdouble end, gdouble container)
{
  return g_strdup_printf ("truncated: the stream ends at %.3f s, the container "
      "says %.3f s", end, container);
}

#endif

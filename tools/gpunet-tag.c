/* gpunet-tag.c: command-line entry of the offline tagging tool: options, this
 * shard's inputs, the output (--resume), signals, and the loop that runs each input
 * through the one model-loaded pipeline and appends its records as one block.
 * Exit: 0 ok, 1 an input failed, 2 usage or setup error, 130 interrupted. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "gpunet.h"
#include "gpunet-atomic.h"
#include "gpunet-plugin-find.h"
#include "gpunet-tag-common.h"
#include "gpunet-tool-args.h"
#include "gpunet-tool-text.h"

#define DEFAULT_EXTS "mp4,m4v,mov,mkv,webm,avi,ts,mts,m2ts,mpg,mpeg,flv," \
  "wmv,ogv,3gp,h264,264,hevc,h265"

static volatile sig_atomic_t stop_requested = 0;

static void
on_signal (int sig)
{
  (void) sig;
  stop_requested = 1;
}

/* SIGINT/SIGTERM finish the block being written and stop before the next one;
 * a second signal kills at once (SA_RESETHAND): --resume then cleans up. */
static void
install_signals (void)
{
  struct sigaction sa;

  memset (&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART | SA_RESETHAND;
  sigemptyset (&sa.sa_mask);
  sigaction (SIGINT, &sa, NULL);
  sigaction (SIGTERM, &sa, NULL);
}

static gboolean
parse_shard (const gchar * s, guint * index, guint * count)
{
  gchar *end = NULL;
  guint64 i, n;

  i = g_ascii_strtoull (s, &end, 10);
  if (end == s || *end != '/')
    return FALSE;
  s = end + 1;
  n = g_ascii_strtoull (s, &end, 10);
  if (end == s || *end != '\0' || n == 0 || n > G_MAXUINT || i >= n)
    return FALSE;
  *index = (guint) i;
  *count = (guint) n;
  return TRUE;
}

/* The gpunetclassify element: --plugin-path, else this build tree's plugin when
 * run from it, else the registry, else the directory this build installs to. */
static void
find_plugin (const gchar * plugin_path)
{
  gpunet_plugin_find_built (plugin_path);
}

/* TRUE when `path` is the same file as one of the inputs. */
static gboolean
output_is_input (const gchar * path, GPtrArray * inputs)
{
  GStatBuf o, st;

  if (g_stat (path, &o) != 0)
    return FALSE;
  for (guint i = 0; i < inputs->len; i++) {
    TagInput *in = g_ptr_array_index (inputs, i);
    gchar *file = in->uri ? g_filename_from_uri (in->uri, NULL, NULL) : NULL;
    gboolean same = file && g_stat (file, &st) == 0 && st.st_dev == o.st_dev
        && st.st_ino == o.st_ino;

    g_free (file);
    if (same)
      return TRUE;
  }
  return FALSE;
}

/* Opens --output for this run. The output file itself carries an exclusive lock
 * (flock) for the whole run, so a second gpunet-tag on the same output is
 * refused instead of interleaving with this one. With --resume, records are
 * appended (O_APPEND) to the locked file after tag_resume_prepare() cleaned it;
 * without, they go to a temporary file renamed over the output at the end.
 * Returns 0, or 2 after printing why. */
static int
open_output (TagOptions * o, GPtrArray * inputs, int *lock_fd, int *fd,
    gchar ** tmp_path, gboolean * created, GHashTable ** skip,
    gboolean * need_header)
{
  GError *err = NULL;

  if (gpunet_atomic_is_special (o->output)) {
    /* /dev/null, a FIFO, a terminal: written in place, no lock, no rename */
    if (o->resume) {
      g_printerr ("gpunet-tag: --resume needs a regular --output file\n");
      return 2;
    }
    *fd = g_open (o->output, O_WRONLY | O_APPEND | O_CLOEXEC, 0644);
    if (*fd < 0) {
      g_printerr ("gpunet-tag: cannot open '%s': %s\n", o->output,
          g_strerror (errno));
      return 2;
    }
    return 0;
  }
  if (output_is_input (o->output, inputs)) {
    g_printerr ("gpunet-tag: --output '%s' is one of the inputs; refusing to "
        "overwrite it\n", o->output);
    return 2;
  }
  *created = !g_file_test (o->output, G_FILE_TEST_EXISTS);
  *lock_fd = g_open (o->output, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
      0644);
  if (*lock_fd < 0) {
    g_printerr ("gpunet-tag: cannot open '%s': %s\n", o->output,
        g_strerror (errno));
    return 2;
  }
  if (flock (*lock_fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK)
      g_printerr ("gpunet-tag: '%s' is being written by another gpunet-tag "
          "run; wait for it to finish (then use --resume) or choose another "
          "--output\n", o->output);
    else
      g_printerr ("gpunet-tag: cannot lock '%s': %s\n", o->output,
          g_strerror (errno));
    close (*lock_fd);
    *lock_fd = -1;
    return 2;
  }
  /* records of an earlier run are kept unless asked otherwise: a later run without
   * --resume would silently replace them */
  if (!o->resume && !o->overwrite) {
    GStatBuf st;

    if (fstat (*lock_fd, &st) == 0 && st.st_size > 0) {
      g_printerr ("gpunet-tag: '%s' already holds records; add --resume to continue "
          "that run, --overwrite to replace them, or choose another --output\n",
          o->output);
      close (*lock_fd);
      *lock_fd = -1;
      return 2;
    }
  }
  if (o->resume) {
    *skip = tag_resume_prepare (o->output, o->format, o->retry_failed,
        need_header, lock_fd, &err);
    if (*skip == NULL) {
      g_printerr ("gpunet-tag: %s\n", err->message);
      g_clear_error (&err);
      return 2;
    }
    *fd = *lock_fd;
    return 0;
  }
  *tmp_path = gpunet_atomic_temp (o->output, fd);
  if (*tmp_path == NULL) {
    g_printerr ("gpunet-tag: cannot create a file next to '%s': %s\n",
        o->output, g_strerror (errno));
    return 2;
  }
  return 0;
}

static int
usage_error (GOptionContext * ctx, const gchar * msg)
{
  g_printerr ("gpunet-tag: %s\n%s", msg, ctx ? "\n" : "");
  if (ctx) {
    gchar *help = g_option_context_get_help (ctx, TRUE, NULL);
    g_printerr ("%s", help);
    g_free (help);
  }
  return 2;
}

/* What one input produced, kept until the main thread writes it in order. */
typedef struct
{
  gboolean ready;               /* filled (jobs > 1: under TagJobs.lock) */
  gboolean ran;                 /* started (not only marked interrupted) */
  gboolean skipped;             /* --resume: already complete */
  gboolean fatal;               /* the model could not be started */
  TagResult res;
  GString *block;               /* its records and summary */
  guint64 decoded;
  gdouble wall_s;
  gchar *status, *message;
} TagOutcome;

/* The inputs and what the jobs share. */
typedef struct
{
  const TagOptions *o;
  GPtrArray *inputs;
  GHashTable *skip;
  TagProgress *progress;
  gint jobs;
  GMutex lock;
  GCond cond;
  TagOutcome *outcomes;
  guint next;                   /* the next input a job takes (lock) */
  gboolean noted;               /* the runner's memory note was printed (lock) */
  gint abort;                   /* atomic: take no more inputs */
} TagJobs;

static void
tag_outcome_clear (TagOutcome * oc)
{
  if (oc->block)
    g_string_free (oc->block, TRUE);
  g_free (oc->status);
  g_free (oc->message);
}

/* Runs input `i` of `j` into `oc` with `*runner` (made on first use). */
static void
run_input (TagJobs * j, guint i, TagRunner ** runner, TagOutcome * oc)
{
  TagInput *in = g_ptr_array_index (j->inputs, i);
  gchar *key = tag_record_key (in->name);
  TagSummary s = { 0 };
  GError *err = NULL;

  oc->block = g_string_new (NULL);
  if (j->skip && g_hash_table_contains (j->skip, key)) {
    oc->skipped = TRUE;
    g_free (key);
    return;
  }
  g_free (key);
  /* with several jobs the progress lines come as inputs finish */
  if (j->jobs == 1)
    tag_progress_input_start (j->progress, i, in->name);
  if (in->error) {
    s.input = in->name;
    s.message = in->error;
    s.duration = s.container_duration = -1;
    tag_write_summary (oc->block, j->o->format, &s);
    oc->res = TAG_RESULT_FAILED;
  } else {
    if (*runner == NULL) {
      *runner = tag_runner_new (j->o, &err);
      if (*runner == NULL) {
        if (j->jobs > 1)
          g_mutex_lock (&j->lock);
        tag_progress_message (j->progress, "cannot start the model: %s",
            err->message);
        if (j->jobs > 1)
          g_mutex_unlock (&j->lock);
        g_clear_error (&err);
        oc->fatal = TRUE;
        return;
      }
      if (!j->o->quiet && j->jobs == 1)
        tag_progress_message (j->progress, "model loaded in %.3f s",
            tag_runner_load_seconds (*runner));
      /* where frames are decoded to, once per run (every runner decides alike) */
      if (j->jobs > 1)
        g_mutex_lock (&j->lock);
      if (!j->o->quiet && !j->noted && tag_runner_note (*runner))
        tag_progress_message (j->progress, "%s", tag_runner_note (*runner));
      j->noted = TRUE;
      if (j->jobs > 1)
        g_mutex_unlock (&j->lock);
    }
    oc->res = tag_runner_process (*runner, in, oc->block, &stop_requested,
        j->jobs == 1 ? tag_progress_tick : NULL, j->progress, &s);
    if (j->o->show_caps) {
      if (j->jobs > 1)
        g_mutex_lock (&j->lock);
      tag_progress_message (j->progress, "%s: gpunetclassify's input caps: %s "
          "(decoder %s)", in->name, s.caps ? s.caps : "(none negotiated)",
          s.decoder ? s.decoder : "none");
      if (j->jobs > 1)
        g_mutex_unlock (&j->lock);
    }
  }
  oc->decoded = s.decoded;
  oc->wall_s = s.wall_s;
  oc->status = g_strdup (tag_summary_status (&s));
  oc->message = g_strdup (s.message);
  /* a source that never opened holds its pipeline for good: leave that runner
   * as it is (freeing it would block too); the next input makes a new one */
  if (tag_runner_wedged (*runner))
    *runner = NULL;
}

/* --jobs: takes inputs in order until none is left (or the run stops). */
static gpointer
job_thread (gpointer data)
{
  TagJobs *j = data;
  TagRunner *runner = NULL;

  for (;;) {
    TagOutcome local = { 0 };
    guint i;

    g_mutex_lock (&j->lock);
    i = j->next++;
    g_mutex_unlock (&j->lock);
    if (i >= j->inputs->len)
      break;
    if (g_atomic_int_get (&j->abort) || stop_requested) {
      local.res = TAG_RESULT_INTERRUPTED;
    } else {
      run_input (j, i, &runner, &local);
      local.ran = TRUE;
    }
    g_mutex_lock (&j->lock);
    j->outcomes[i] = local;
    j->outcomes[i].ready = TRUE;
    /* a model that cannot start fails every input the same way */
    if (local.fatal)
      g_atomic_int_set (&j->abort, 1);
    g_cond_broadcast (&j->cond);
    g_mutex_unlock (&j->lock);
  }
  tag_runner_free (runner);
  return NULL;
}

int
main (int argc, char **argv)
{
  TagOptions o = { .stall_timeout = 300.0, .open_timeout = 20.0 };
  gchar *format = NULL, *shard = NULL, *exts = NULL, *plugin_path = NULL;
  gchar **args = NULL;
  gboolean list_only = FALSE, need_header = TRUE;
  gint top_k = 5, batch = 1, every = 0, threads = 0, jobs = 1;
  GOptionContext *ctx;
  GError *err = NULL;
  gboolean fatal = FALSE;
  GPtrArray *inputs, *mine;
  GHashTable *skip = NULL;
  TagProgress *progress;
  TagRunner *runner = NULL;
  int fd = STDOUT_FILENO, lock_fd = -1, rc = 0;
  gchar *tmp_path = NULL;       /* without --resume: the file renamed to --output */
  gboolean created = FALSE;
  guint n_ok = 0, n_partial = 0, n_failed = 0, n_skipped = 0;
  gint interrupted_at = -1;     /* the first input not written after an interrupt */
  guint64 total_frames = 0;
  gint64 t_start;

  const GOptionEntry entries[] = {
    {"model", 'm', 0, G_OPTION_ARG_STRING, &o.model,
        "Architecture: built-in name or NVIDIA JSON path (gpunet-0)", "NAME"},
    {"checkpoint", 'c', 0, G_OPTION_ARG_FILENAME, &o.checkpoint,
        "Weights: .pth.tar/.pth or .safetensors (required)", "FILE"},
    {"labels", 0, 0, G_OPTION_ARG_FILENAME, &o.labels,
        "Label file, one per line", "FILE"},
    {"backend", 0, 0, G_OPTION_ARG_STRING, &o.backend,
        "auto, cpu, cuda or cpu-ref (auto); with CUDA and GStreamer's nvcodec, "
          "frames are decoded into CUDA memory and classified in place", "NAME"},
    {"precision", 0, 0, G_OPTION_ARG_STRING, &o.precision,
        "CUDA storage: auto, fp32 or fp16 (auto: fp16 on GPUs with tensor "
          "cores); CPU: fp32, bf16, or int8 with --scales", "P"},
    {"scales", 0, 0, G_OPTION_ARG_FILENAME, &o.scales,
        "With --precision int8: the scales file gpunet-convert --calibrate wrote "
          "for this model and checkpoint", "FILE"},
    {"top-k", 'k', 0, G_OPTION_ARG_INT, &top_k, "Classes per frame (5)", "K"},
    {"batch", 0, 0, G_OPTION_ARG_INT, &batch,
        "Frames per engine call, 1..64 (1)", "N"},
    {"jobs", 'j', 0, G_OPTION_ARG_INT, &jobs,
        "Inputs decoded at once into one shared engine, 1..64 (1); the output "
          "is the same as with 1", "J"},
    {"threads", 0, 0, G_OPTION_ARG_INT, &threads,
        "CPU backend threads (0 = all cores)", "N"},
    {"every", 0, 0, G_OPTION_ARG_INT, &every,
        "Classify every Nth decoded frame", "N"},
    {"fps", 0, 0, G_OPTION_ARG_DOUBLE, &o.fps,
        "Classify about F frames per second of video", "F"},
    {"output", 'o', 0, G_OPTION_ARG_FILENAME, &o.output,
        "Output file (default: stdout)", "FILE"},
    {"format", 'f', 0, G_OPTION_ARG_STRING, &format,
        "jsonl or csv (jsonl)", "FMT"},
    {"segments", 's', 0, G_OPTION_ARG_NONE, &o.segments,
        "Write one record per run of frames with the same top-1 class "
          "(instead of frame records, unless --frames)", NULL},
    {"frames", 0, 0, G_OPTION_ARG_NONE, &o.frames,
        "Write frame records also with --segments", NULL},
    {"shard", 0, 0, G_OPTION_ARG_STRING, &shard,
        "Process only the inputs of worker I of N (0 <= I < N)", "I/N"},
    {"resume", 0, 0, G_OPTION_ARG_NONE, &o.resume,
        "Skip inputs already complete in --output; append the rest", NULL},
    {"retry-failed", 0, 0, G_OPTION_ARG_NONE, &o.retry_failed,
        "With --resume, redo inputs whose summary says error", NULL},
    {"overwrite", 0, 0, G_OPTION_ARG_NONE, &o.overwrite,
        "Replace a non-empty --output (without it, or --resume, one is refused)",
        NULL},
    {"ext", 0, 0, G_OPTION_ARG_STRING, &exts,
        "Extensions taken from directories (" DEFAULT_EXTS ")", "LIST"},
    {"all-files", 0, 0, G_OPTION_ARG_NONE, &o.all_files,
        "Take every file found in directories", NULL},
    {"stall-timeout", 0, 0, G_OPTION_ARG_DOUBLE, &o.stall_timeout,
        "Fail an input after this many seconds without a frame (300)", "SEC"},
    {"open-timeout", 0, 0, G_OPTION_ARG_DOUBLE, &o.open_timeout,
        "Fail an input when no video stream appears within SEC (20)", "SEC"},
    {"list", 0, 0, G_OPTION_ARG_NONE, &list_only,
        "Print this shard's inputs and exit", NULL},
    {"plugin-path", 0, 0, G_OPTION_ARG_FILENAME, &plugin_path,
        "Directory holding the gpunet GStreamer plugin", "DIR"},
    {"show-caps", 0, 0, G_OPTION_ARG_NONE, &o.show_caps,
        "Print the caps gpunetclassify negotiated for each input (memory "
          "kind, format, size) on stderr", NULL},
    {"quiet", 'q', 0, G_OPTION_ARG_NONE, &o.quiet,
        "No progress output (failures are still reported)", NULL},
    {G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &args, NULL,
        "INPUT..."},
    {NULL, 0, 0, 0, NULL, NULL, NULL}
  };

  /* the INPUT... of G_OPTION_REMAINING is printed already: not again here */
  gpunet_tool_text_init ();
  ctx = g_option_context_new ("- tag video files with a GPUNet classifier");
  g_option_context_set_summary (ctx, "INPUT is a file, a directory (walked "
      "recursively, sorted), a glob pattern or a URI. One record per classified "
      "frame (or per segment), then a summary record per input.");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_add_group (ctx, gst_init_get_option_group ());
  if (!g_option_context_parse (ctx, &argc, &argv, &err)) {
    rc = usage_error (NULL, err->message);
    goto out;
  }

  /* seconds as the runner counts them (microseconds in a gint64): a NaN, 0 or 1e300
   * used to run with the default, or fail every input at once */
  if (!(o.stall_timeout > 0 && o.stall_timeout <= 1e6)
      || !(o.open_timeout > 0 && o.open_timeout <= 1e6)) {
    rc = usage_error (ctx, "--stall-timeout and --open-timeout must be more than 0 "
        "seconds and at most 1000000");
    goto out;
  }
  o.format = TAG_FORMAT_JSONL;
  if (format && strcmp (format, "csv") == 0)
    o.format = TAG_FORMAT_CSV;
  else if (format && strcmp (format, "jsonl") != 0 && strcmp (format,
          "json") != 0) {
    rc = usage_error (ctx, "--format must be jsonl or csv");
    goto out;
  }
  if (top_k < 1 || top_k > 100 || batch < 1 || batch > 64 || every < 0 || threads < 0
      || threads > GPUNET_MAX_THREADS || !(o.fps >= 0 && isfinite (o.fps)) || jobs < 1
      || jobs > 64) {
    rc = usage_error (ctx, "--top-k must be 1..100; --batch and --jobs 1..64; "
        "--threads 0.." G_STRINGIFY (GPUNET_MAX_THREADS) " (0 = all cores); --every and --fps >= 0 (0 = every "
        "frame)");
    goto out;
  }
  if (every > 1 && o.fps > 0) {
    rc = usage_error (ctx, "--every and --fps exclude each other");
    goto out;
  }
  if (o.backend) {
    gpunet_backend_kind kind;
    char *why = NULL;
    if (gpunet_backend_kind_from_name (o.backend, &kind, &why) != GPUNET_OK) {
      rc = usage_error (ctx, why);
      free (why);
      goto out;
    }
  }
  {
    gpunet_precision precision = GPUNET_PRECISION_AUTO;
    const gchar *why;

    if (o.precision && !gpunet_tool_precision_parse (o.precision, &precision)) {
      rc = usage_error (ctx, "--precision must be auto, fp32, fp16, bf16 or int8");
      goto out;
    }
    why = gpunet_tool_scales_refusal (precision, o.scales);
    if (why) {
      rc = usage_error (NULL, why);
      goto out;
    }
  }
  o.top_k = (guint) top_k;
  o.batch = (guint) batch;
  o.every = (guint) every;
  o.threads = (guint) threads;
  o.frames = o.frames || !o.segments;
  o.shard_count = 1;
  if (shard && !parse_shard (shard, &o.shard_index, &o.shard_count)) {
    rc = usage_error (ctx, "--shard takes I/N with 0 <= I < N, e.g. 0/4");
    goto out;
  }
  o.exts = g_strsplit (exts ? exts : DEFAULT_EXTS, ",", -1);
  if (args == NULL || args[0] == NULL) {
    rc = usage_error (ctx, "no INPUT given");
    goto out;
  }
  if (!list_only && (o.checkpoint == NULL || *o.checkpoint == '\0')) {
    rc = usage_error (ctx, "--checkpoint is required");
    goto out;
  }
  if (o.output && strcmp (o.output, "-") == 0)
    g_clear_pointer (&o.output, g_free);
  if (o.resume && o.output == NULL) {
    rc = usage_error (ctx, "--resume needs --output FILE");
    goto out;
  }
  if (o.resume && o.overwrite) {
    rc = usage_error (ctx, "--resume and --overwrite exclude each other");
    goto out;
  }

  inputs = tag_inputs_discover (args, &o);
  mine = g_ptr_array_new ();
  for (guint i = 0; i < inputs->len; i++) {
    TagInput *in = g_ptr_array_index (inputs, i);
    if (tag_input_in_shard (in->name, o.shard_index, o.shard_count))
      g_ptr_array_add (mine, in);
  }
  if (list_only) {
    for (guint i = 0; i < mine->len; i++)
      printf ("%s\n", ((TagInput *) g_ptr_array_index (mine, i))->name);
    goto done_inputs;
  }

  if (o.output) {
    rc = open_output (&o, mine, &lock_fd, &fd, &tmp_path, &created, &skip,
        &need_header);
    if (rc != 0)
      goto done_output;
  }
  if (need_header && o.format == TAG_FORMAT_CSV) {
    GString *h = g_string_new (NULL);
    tag_write_header (h, o.format);
    tag_write_all (fd, h->str, h->len);
    g_string_free (h, TRUE);
  }

  install_signals ();
  find_plugin (plugin_path);
  progress = tag_progress_new (mine->len, o.quiet);
  t_start = g_get_monotonic_time ();
  {
    TagJobs jobs_state = { 0 };
    TagOutcome *outcomes = g_new0 (TagOutcome, mine->len);
    GThread **threads_v = NULL;
    guint i;

    jobs_state.o = &o;
    jobs_state.inputs = mine;
    jobs_state.skip = skip;
    jobs_state.progress = progress;
    jobs_state.jobs = jobs;
    g_mutex_init (&jobs_state.lock);
    g_cond_init (&jobs_state.cond);
    jobs_state.outcomes = outcomes;
    if (jobs > 1) {
      /* J runners, one pipeline each, their elements on one shared engine;
       * records are written in input order whatever order inputs finish in */
      threads_v = g_new0 (GThread *, jobs);
      for (gint j = 0; j < jobs; j++)
        threads_v[j] = g_thread_new ("gpunet-tag-job", job_thread, &jobs_state);
    }
    for (i = 0; i < mine->len; i++) {
      TagOutcome *oc = &outcomes[i];
      TagInput *in = g_ptr_array_index (mine, i);

      if (jobs > 1) {
        g_mutex_lock (&jobs_state.lock);
        while (!oc->ready)
          g_cond_wait (&jobs_state.cond, &jobs_state.lock);
        g_mutex_unlock (&jobs_state.lock);
      } else {
        if (stop_requested)
          break;
        run_input (&jobs_state, i, &runner, oc);
      }
      if (oc->fatal) {          /* the model: its error is printed, no summary */
        rc = 2;
        fatal = TRUE;
        break;
      }
      if (oc->skipped) {
        n_skipped++;
        tag_progress_skip (progress, in->name);
        continue;
      }
      if (oc->res == TAG_RESULT_INTERRUPTED) {
        interrupted_at = (gint) i;
        break;
      }
      if (!tag_write_all (fd, oc->block->str, oc->block->len)) {
        tag_progress_message (progress, "cannot write the output: %s",
            g_strerror (errno));
        rc = 2;
        break;
      }
      total_frames += oc->decoded;
      if (oc->res == TAG_RESULT_OK && strcmp (oc->status, "ok") != 0)
        n_partial++;
      else if (oc->res == TAG_RESULT_OK)
        n_ok++;
      else
        n_failed++;
      tag_progress_input_done (progress, in->name, oc->res == TAG_RESULT_OK,
          oc->decoded, oc->wall_s, oc->message);
    }
    if (jobs > 1) {
      /* the others stop at their next input (an interrupt stops them inside) */
      g_atomic_int_set (&jobs_state.abort, 1);
      for (gint j = 0; j < jobs; j++)
        g_thread_join (threads_v[j]);
      g_free (threads_v);
    }
    if (interrupted_at >= 0) {
      /* records go out in input order: the inputs after the interrupted one that
       * were running or done are not written either */
      GString *also = g_string_new (NULL);
      guint n_also = 0;

      for (i = (guint) interrupted_at + 1; i < mine->len; i++)
        if (outcomes[i].ran && !outcomes[i].skipped) {
          TagInput *later = g_ptr_array_index (mine, i);

          g_string_append_printf (also, "%s'%s'", n_also ? ", " : "", later->name);
          n_also++;
        }
      tag_progress_message (progress, "interrupted: '%s' not written%s%s%s (%s "
          "redone by --resume)", ((TagInput *) g_ptr_array_index (mine,
                  (guint) interrupted_at))->name, n_also ? ", nor " : "",
          also->str, n_also ? ", which ran beside it" : "",
          n_also ? "all" : "it is");
      g_string_free (also, TRUE);
    }
    for (i = 0; i < mine->len; i++)
      tag_outcome_clear (&outcomes[i]);
    g_free (outcomes);
    g_mutex_clear (&jobs_state.lock);
    g_cond_clear (&jobs_state.cond);
  }
  if (!fatal && (!o.quiet || stop_requested)) {
    gdouble el = (g_get_monotonic_time () - t_start) / 1e6;

    tag_progress_message (progress, "%u inputs: %u ok, %u partial, %u failed, %u skipped; "
        "%" G_GUINT64_FORMAT " frames in %.2f s (%.1f frames/s)%s", mine->len,
        n_ok, n_partial, n_failed, n_skipped, total_frames, el,
        el > 0 ? total_frames / el : 0.0, stop_requested ? "; interrupted" :
        "");
  }
  tag_progress_free (progress);
  tag_runner_free (runner);
  if (fd != STDOUT_FILENO && fd != lock_fd && close (fd) != 0 && rc == 0) {
    g_printerr ("gpunet-tag: cannot close the output: %s\n",
        g_strerror (errno));
    rc = 2;
  }
  fd = STDOUT_FILENO;
  if (rc == 0)
    rc = stop_requested ? 130 : n_failed ? 1 : 0;

done_output:
  /* without --resume the output appears whole at the end (also after an
   * interrupt: what was written is valid and --resume completes it); after a
   * setup or write error the previous output stays as it was */
  if (tmp_path && (rc == 0 || rc == 1 || rc == 130)) {
    if (gpunet_atomic_commit (tmp_path, o.output) != 0) {
      g_printerr ("gpunet-tag: cannot rename the output to '%s': %s\n",
          o.output, g_strerror (errno));
      rc = 2;
    }
  } else if (tmp_path) {
    if (fd != STDOUT_FILENO)
      close (fd);
    gpunet_atomic_abort (tmp_path);
    if (created)
      g_unlink (o.output);
  }
  if (lock_fd >= 0 && close (lock_fd) != 0 && rc == 0) {
    g_printerr ("gpunet-tag: cannot close the output: %s\n",
        g_strerror (errno));
    rc = 2;
  }
done_inputs:
  if (skip)
    g_hash_table_unref (skip);
  g_ptr_array_unref (mine);
  g_ptr_array_unref (inputs);
out:
  g_clear_error (&err);
  g_option_context_free (ctx);
  g_strfreev (args);
  g_strfreev (o.exts);
  g_free (o.model);
  g_free (o.checkpoint);
  g_free (o.labels);
  g_free (o.backend);
  g_free (o.precision);
  g_free (o.scales);
  g_free (o.output);
  g_free (format);
  g_free (shard);
  g_free (exts);
  g_free (plugin_path);
  return rc;
}

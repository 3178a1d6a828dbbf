/* gpunet.h: the public engine API of gst-gpunet (C99, no GLib, no GStreamer).
 *
 * A gpunet_model is an architecture plus its BatchNorm-folded weights: immutable once
 * loaded, reference counted, and safe to share between threads and sessions.
 * A gpunet_session is one backend instance (buffers, plans, threads) for one model;
 * use a session from one thread at a time (different sessions may run concurrently).
 * No function aborts on bad input: each returns a gpunet_status and, where it takes an
 * `error_text` argument, stores a malloc()ed human sentence there (free() it). */
#ifndef GPUNET_H
#define GPUNET_H

#include <stddef.h>
#include <stdint.h>

/* The types this API shares with the compute layer: gpunet_status, the backend kinds,
 * precision, the CPU and CUDA options, images, pixel formats, class scores and
 * gpunet_topk_softmax.  Installed beside this header. */
#include "gpunet-types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A short constant English name for a status ("checkpoint does not match"). */
const char *gpunet_status_string (gpunet_status status);

typedef struct gpunet_model gpunet_model;
typedef struct gpunet_session gpunet_session;

/* ---- models ------------------------------------------------------------------ */

/* Loads an architecture and its weights.  `arch` is a built-in name (gpunet-0,
 * gpunet-1, gpunet-2, gpunet-p0, gpunet-p1, gpunet-d1, gpunet-d2, or NVIDIA's latency
 * aliases 0.65ms ... 2.25ms-D) or the path of an architecture JSON in NVIDIA's format.
 * `weights` is a PyTorch checkpoint (.pth/.pth.tar zip) or a .safetensors file.
 * On success *out holds one reference. */
gpunet_status gpunet_model_load (const char *arch, const char *weights,
    gpunet_model **out, char **error_text);

/* Builds a model with seeded random weights of realistic scale (benchmarks, tests). */
gpunet_status gpunet_model_new_random (const char *arch, uint64_t seed,
    gpunet_model **out, char **error_text);

gpunet_model *gpunet_model_ref (gpunet_model *model);
void gpunet_model_unref (gpunet_model *model);

const char *gpunet_model_name (const gpunet_model *model);   /* "gpunet-0" or the JSON's file name */
int gpunet_model_resolution (const gpunet_model *model);     /* input is R x R */
int gpunet_model_num_classes (const gpunet_model *model);
float gpunet_model_crop_pct (const gpunet_model *model);     /* timm eval crop_pct */
int64_t gpunet_model_num_params (const gpunet_model *model); /* as PyTorch counts them */
double gpunet_model_flops (const gpunet_model *model);       /* 2 x MACs per image */
const char *gpunet_model_weights_source (const gpunet_model *model); /* "state_dict_ema", ... */

/* ---- sessions ---------------------------------------------------------------- */

/* gpunet_backend_kind, gpunet_precision, gpunet_cpu_options and gpunet_cuda_options
 * are in gpunet-types.h. */

/* The name of a backend kind ("auto", "cpu", "cuda", "cpu-ref"), or NULL for a value
 * outside the enum. */
const char *gpunet_backend_kind_name (gpunet_backend_kind kind);

/* The kind whose name is `name`; GPUNET_ERR_INVALID_ARGUMENT with a sentence listing
 * the names otherwise.  What --backend options and the element's property accept. */
gpunet_status gpunet_backend_kind_from_name (const char *name, gpunet_backend_kind *out,
    char **error_text);

/* Parses "key=value,key=value" (keys winograd, pw, strassen, block, simd; values as
 * in gpunet_cpu_options: auto, own, onednn, off; 0, 8, 16 for block; auto, avx2,
 * portable for simd) over *options,
 * left unchanged on failure.  `source` names where spec came from ("GPUNET_CPU",
 * "--cpu") in the error sentence, which names the bad key or value and lists the valid
 * ones.  An empty or NULL spec changes nothing. */
gpunet_status gpunet_cpu_options_parse (gpunet_cpu_options *options, const char *spec,
    const char *source, char **error_text);

/* Parses "key=value,..." (graphs=on|off, dwconv=auto|direct) over *options, left
 * unchanged on failure; `source` names where spec came from in the error sentence.  An
 * empty or NULL spec changes nothing. */
gpunet_status gpunet_cuda_options_parse (gpunet_cuda_options *options, const char *spec,
    const char *source, char **error_text);

/* The most CPU threads a session takes (the element's n-threads, the tools' --threads) */
#define GPUNET_MAX_THREADS 1024

typedef struct {
  gpunet_backend_kind backend;
  gpunet_precision precision;
  int max_batch;   /* largest n passed to forward/classify; >= 1 */
  int n_threads;   /* CPU backend; 0 = all cores, at most GPUNET_MAX_THREADS */
  int device;      /* CUDA device ordinal */
  int cuda_fused;  /* CUDA, opt-in (docs/cuda.md, "Fused path"): 0 (default) = the
                    * verified path; GPUNET_CUDA_FUSED_KERNELS = the fused head and
                    * squeeze-excite kernels; GPUNET_CUDA_FUSED_NHWC = in fp16, the NHWC
                    * network (each convolution one cuDNN graph with its epilogue),
                    * in fp32 as KERNELS.  gpunet-bench --cuda-fused[=N] and
                    * gpunet-selftest --fused N set it. */
  void *cuda_context; /* CUDA: the CUcontext (of `device`) every CUDA call of the
                       * session runs in, e.g. a GstCudaContext's; the backend makes it
                       * current itself at each call (pushing it when the calling
                       * thread has another).  NULL = the context current when the
                       * session is created (the device's primary context unless the
                       * caller pushed one).  It must outlive the session. */
  gpunet_cpu_options cpu;  /* the fast CPU backend's options; gpunet_session_new applies
                            * the environment variable GPUNET_CPU over them (same syntax
                            * as gpunet_cpu_options_parse) and fails on a malformed one */
  gpunet_cuda_options cuda;  /* the CUDA backend's options; gpunet_session_new applies
                              * the environment variable GPUNET_CUDA over them (syntax of
                              * gpunet_cuda_options_parse) and fails on a malformed one */
  const char *int8_scales;   /* precision=int8 (required there, refused otherwise): the
                              * scales file gpunet-convert --calibrate wrote for this
                              * model and checkpoint; read and checked at session
                              * creation (the string need not outlive the call) */
} gpunet_session_params;

void gpunet_session_params_init (gpunet_session_params *params);

/* Creates a session; it holds its own reference on `model`. */
gpunet_status gpunet_session_new (gpunet_model *model, const gpunet_session_params *params,
    gpunet_session **out, char **error_text);
void gpunet_session_free (gpunet_session *session);

/* The backend actually used ("cpu", "cuda", "cpu-ref"). */
const char *gpunet_session_backend_name (const gpunet_session *session);

/* How the fast CPU backend's OpenMP threads wait when idle (gpunet_cpu_options.wait), as
 * one sentence, once a CPU session exists in the process (NULL before).  *is_warning is
 * set to 1 when the choice could not be applied because libgomp was loaded before the
 * engine (by the application): its threads then keep libgomp's long spin, which slows
 * every pass when other processes share the cores.  Thread-safe; the text is static. */
const char *gpunet_cpu_wait_note (int *is_warning);

/* Runs n images (n <= max_batch) of normalised float32 NCHW input at the model's
 * resolution; writes n x num_classes float32 logits. */
gpunet_status gpunet_session_forward (gpunet_session *session, const float *input,
    int n, float *logits, char **error_text);

/* gpunet_session_forward, calling `trace` (gpunet_trace_func, gpunet-types.h) after each
 * top-level block. */
gpunet_status gpunet_session_forward_traced (gpunet_session *session, const float *input,
    int n, float *logits, gpunet_trace_func trace, void *user, char **error_text);

/* ---- images and classification ----------------------------------------------- */

/* gpunet_image (its pixel formats, colour matrices, memory kinds), gpunet_resize_mode,
 * gpunet_preprocess_params, gpunet_class_score and gpunet_topk_softmax are in
 * gpunet-types.h. */

/* Preprocesses n images (one fused pass each) and classifies them; writes the k best
 * classes of image i, best first, to out[i * k .. i * k + k - 1].
 * Images in GPUNET_MEMORY_CUDA (all of the batch, all of one size) need a session on the
 * CUDA backend, created with the same CUDA context current as now: the preprocess then
 * runs on the device, straight into the network input, and only the k results come back.
 * The call returns after the device has finished reading the images.  Other backends
 * fail with GPUNET_ERR_UNSUPPORTED (download the frame to host memory first). */
gpunet_status gpunet_session_classify (gpunet_session *session, const gpunet_image *images,
    int n, const gpunet_preprocess_params *pre, int k, gpunet_class_score *out,
    char **error_text);

/* The preprocess alone: writes the normalised 3 x R x R float32 network input of one
 * image in host memory. */
gpunet_status gpunet_preprocess_image (const gpunet_model *model, const gpunet_image *image,
    const gpunet_preprocess_params *pre, float *out_chw, char **error_text);

/* ---- engines: one session shared by many producers, batched, asynchronous ------- */

/* A gpunet_engine owns one worker thread and one session per pass in flight
 * (passes_in_flight, default 1).  Any number of threads submit requests (one or more
 * images each); a free worker gathers the queued images of all requests, up to
 * max_batch, into one preprocess + forward pass, and each request's completion function
 * runs once all its images are classified.  Requests complete in submission order,
 * whichever pass finishes first.  Results do not depend on what else shares a pass
 * (the CPU backends give the same bits at every batch size). */
typedef struct gpunet_engine gpunet_engine;

typedef struct {
  gpunet_session_params session;  /* backend, precision, threads, device; max_batch is
                                   * the most images per forward pass */
  int64_t batch_timeout_us;       /* how long a partial batch may wait for more images
                                   * after its first one was queued; 0 = run what is
                                   * queued as soon as the worker is free */
  int passes_in_flight;           /* forward passes run at once, 1 to 4 (0 = 1): each
                                   * has a session of its own (its own buffers, and on
                                   * CUDA its own stream and graphs), so one batch is
                                   * uploaded and preprocessed while another runs;
                                   * requests still complete in submission order.  Costs
                                   * the session's memory once more per pass.  CPU
                                   * sessions gain nothing (they share the cores). */
  /* Called on the worker thread around every session call (and around creating and
   * freeing the session): e.g. push and pop a CUDA context.  Both may be NULL. */
  void (*enter) (void *user);
  void (*leave) (void *user);
  void *hook_user;
} gpunet_engine_params;

void gpunet_engine_params_init (gpunet_engine_params *params);

/* Called once per request, on the worker thread (or on the thread of
 * gpunet_engine_cancel for a cancelled request).  On GPUNET_OK `scores` holds n x k
 * results (image i at scores[i * k]), valid during the call only; otherwise
 * `error_text` says why (it may be NULL) and scores is NULL. */
typedef void (*gpunet_engine_done_func) (void *user, gpunet_status status,
    const char *error_text, const gpunet_class_score *scores, int n, int k);

/* Creates an engine on `model` (it keeps a reference) and starts its worker. */
gpunet_status gpunet_engine_new (gpunet_model *model, const gpunet_engine_params *params,
    gpunet_engine **out, char **error_text);

/* Queues n images (any sizes, formats and memory kinds the session reads; a request
 * larger than max_batch is spread over several passes).  The image planes must stay
 * valid until `done` runs.  The images and parameters are checked here, so a bad frame
 * fails its own submission and never a pass shared with others.  `tag` groups
 * requests for gpunet_engine_cancel.  Thread safe. */
gpunet_status gpunet_engine_submit (gpunet_engine *engine, const gpunet_image *images,
    int n, const gpunet_preprocess_params *pre, int k, const void *tag,
    gpunet_engine_done_func done, void *user, char **error_text);

/* Withdraws every queued request submitted with `tag` (their `done` runs here with
 * GPUNET_ERR_CANCELLED) and waits until none of them is running.  Thread safe; not
 * from a done function. */
void gpunet_engine_cancel (gpunet_engine *engine, const void *tag);

/* Tells the engine that a producer cannot submit more until some of its requests
 * complete (an element at its max-in-flight): a partial batch waiting for its
 * batch_timeout runs now instead.  Without queued images it does nothing.  Thread
 * safe. */
void gpunet_engine_kick (gpunet_engine *engine);

/* Runs what is queued, stops the worker and frees the engine. */
void gpunet_engine_free (gpunet_engine *engine);

const char *gpunet_engine_backend_name (const gpunet_engine *engine);
const gpunet_model *gpunet_engine_model (const gpunet_engine *engine);
int gpunet_engine_max_batch (const gpunet_engine *engine);

/* Images queued and not yet taken into a pass, of every producer: when it is
 * max_batch or more, an image submitted now waits for more than the next pass.
 * Thread safe. */
int gpunet_engine_waiting (gpunet_engine *engine);

/* Passes in flight not running now (passes_in_flight minus those in a session
 * call): each takes up to max_batch of the waiting images as soon as it looks.
 * Thread safe. */
int gpunet_engine_idle_passes (gpunet_engine *engine);

/* Mean wall time of a pass since creation (preprocess, forward and top-k of its
 * batch, in milliseconds; 0 before the first).  Thread safe. */
double gpunet_engine_mean_pass_ms (gpunet_engine *engine);

/* Counters since creation: forward passes run and images classified (tests, tools). */
void gpunet_engine_stats (gpunet_engine *engine, int64_t *passes, int64_t *images);

/* ---- int8 calibration ------------------------------------------------------------ */

/* How a calibration turns the inputs it saw into each layer's clip value: the largest
 * |x| seen (max), or the mean over the images of each image's given percentile of |x|
 * (docs/performance.md, "precision=int8"). */
typedef enum { GPUNET_CALIB_MAX = 1, GPUNET_CALIB_PERCENTILE = 2 } gpunet_calib_method;

/* Records the input ranges of every convolution precision=int8 quantises while the
 * exact f32 reference ops run over images; then writes the scales file a session with
 * precision=int8 reads (gpunet_session_params.int8_scales).  Not thread safe; one image
 * at a time. */
typedef struct gpunet_calibration gpunet_calibration;

/* percentile is read for GPUNET_CALIB_PERCENTILE only ((50, 100]). */
gpunet_status gpunet_calibration_new (gpunet_model *model, gpunet_calib_method method,
    float percentile, gpunet_calibration **out, char **error_text);

/* One preprocessed image (3 x R x R float32, gpunet_preprocess_image's output). */
gpunet_status gpunet_calibration_add (gpunet_calibration *calibration, const float *input,
    char **error_text);
int gpunet_calibration_images (const gpunet_calibration *calibration);

/* Writes the scales file (refused before any image was added). */
gpunet_status gpunet_calibration_write (const gpunet_calibration *calibration,
    const char *path, char **error_text);
void gpunet_calibration_free (gpunet_calibration *calibration);

/* ---- labels ------------------------------------------------------------------- */

/* The built-in ImageNet-1k class names (id 0..999), NULL outside that range. */
const char *gpunet_imagenet_label (int id);

/* Reads a labels file's text (`len` bytes): one label per line, a final newline
 * optional, "\r\n" accepted, surrounding whitespace stripped, an empty line giving
 * "class-<id>".  The number of lines must equal `n_classes`; a text longer than
 * GPUNET_LABELS_MAX_BYTES is refused.  On success
 * *labels_out holds n_classes malloc()ed strings and a NULL (free it with
 * gpunet_labels_free); errors are sentences without the file name (GPUNET_ERR_FORMAT
 * for a wrong count or a NUL byte). */
gpunet_status gpunet_labels_parse (const char *text, size_t len, int n_classes,
    char ***labels_out, char **error_text);

/* The largest labels file read (bytes): 1000 labels of a few words take about 20 KB. A
 * longer text is refused (GPUNET_ERR_FORMAT), as an architecture JSON over its bound is. */
#define GPUNET_LABELS_MAX_BYTES (16 * 1024 * 1024)

/* Reads and parses (gpunet_labels_parse) the labels file at `path`: a regular file of
 * at most GPUNET_LABELS_MAX_BYTES, checked before it is read (a FIFO or device is
 * refused without blocking, GPUNET_ERR_IO).  Errors are sentences that name the file. */
gpunet_status gpunet_labels_load (const char *path, int n_classes, char ***labels_out,
    char **error_text);
void gpunet_labels_free (char **labels);

#ifdef __cplusplus
}
#endif
#endif /* GPUNET_H */

/* gpunet-types.h: the bottom floor of gst-gpunet: the types that the compute layer
 * (kernels/) and the engine (models/) both need, and nothing else: status, the backend
 * kinds, precision, the CPU and CUDA backends' options, images and their pixel formats,
 * class scores, and gpunet_plan_params, what a backend plans a session with.  C99, no
 * GLib, no GStreamer, no CUDA.
 *
 * The public API header gpunet.h includes this one and adds the engine's functions;
 * kernels/ include this header, never gpunet.h (tests/check_layers.py).  A backend's
 * plan() takes gpunet_plan_params, which the engine fills from gpunet_session_params, so
 * a new public session field changes neither the kernels nor the CUDA module's ABI.
 * Installed beside gpunet.h; applications include gpunet.h. */
#ifndef GPUNET_TYPES_H
#define GPUNET_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  GPUNET_OK = 0,
  GPUNET_ERR_INVALID_ARGUMENT,  /* a caller passed something the API does not accept */
  GPUNET_ERR_IO,                /* a file cannot be opened or read */
  GPUNET_ERR_FORMAT,            /* a file is corrupt, truncated or of an unsupported kind */
  GPUNET_ERR_ARCH,              /* an architecture JSON is invalid, or a name is unknown */
  GPUNET_ERR_WEIGHTS,           /* the checkpoint does not match the architecture */
  GPUNET_ERR_NO_MEMORY,
  GPUNET_ERR_BACKEND_UNAVAILABLE, /* backend not built in, or no usable device */
  GPUNET_ERR_BACKEND,           /* a backend call failed at run time */
  GPUNET_ERR_UNSUPPORTED,       /* a valid request this build cannot serve */
  GPUNET_ERR_CANCELLED          /* an engine request was withdrawn before it ran */
} gpunet_status;

/* ---- backends and their options ---------------------------------------------- */

typedef enum {
  GPUNET_BACKEND_AUTO = 0,  /* "auto": CUDA when built and a device works, else CPU */
  GPUNET_BACKEND_CPU,       /* "cpu": the fast CPU backend (oneDNN) */
  GPUNET_BACKEND_CUDA,      /* "cuda" */
  GPUNET_BACKEND_CPU_REF    /* "cpu-ref": the reference oracle (plain, single-threaded
                             * loops: slow), what every other backend is checked against */
} gpunet_backend_kind;

typedef enum {
  GPUNET_PRECISION_AUTO = 0,
  GPUNET_PRECISION_FP32,
  GPUNET_PRECISION_FP16,
  GPUNET_PRECISION_BF16,  /* the fast CPU backend: oneDNN's bf16 convolutions with f32
                           * accumulation, bf16 activations between them (AVX-512 BF16
                           * or AMX); refused elsewhere */
  GPUNET_PRECISION_INT8   /* the fast CPU backend: oneDNN's int8 convolutions (s8 weights
                           * per output channel, u8/s8 activations with calibrated scales,
                           * s32 accumulation; VNNI where present); needs a scales file */
} gpunet_precision;

/* precision=int8: how one op's input is quantised (gpunet_plan_params.int8, per graph
 * op).  scale 0: the op runs in f32.  Else the input x becomes
 * q = round (x / scale) clamped to u8 (is_unsigned: the calibrated input was never
 * negative) or s8, symmetric (no zero point). */
typedef struct {
  float scale;
  int is_unsigned;
} gpunet_int8_input;

/* A kernel choice of the fast CPU backend (kernels/onednn). */
typedef enum {
  GPUNET_CPU_AUTO = 0,  /* the backend's rule (docs/performance.md, "Options") */
  GPUNET_CPU_OWN,       /* our kernel wherever it takes the shape */
  GPUNET_CPU_ONEDNN,    /* oneDNN's kernel */
  GPUNET_CPU_OFF        /* neither: winograd none (direct convolutions), strassen never */
} gpunet_cpu_choice;

/* The vector code a CPU session may use (gpunet_cpu_options.simd): tests simulate an
 * AVX2-only or a plain CPU on a bigger one with it. */
typedef enum {
  GPUNET_CPU_SIMD_AUTO = 0,
  GPUNET_CPU_SIMD_AVX2,
  GPUNET_CPU_SIMD_PORTABLE
} gpunet_cpu_simd;

/* How the fast CPU backend's OpenMP threads wait for work at the end of a parallel
 * region (gpunet_cpu_options.wait; docs/performance.md, "Threads under contention").
 * Set once per process, when the first CPU session loads the backend module. */
typedef enum {
  GPUNET_CPU_WAIT_AUTO = 0,  /* the engine's bounded spin, then sleep (cpu_loader.c's
                              * GPUNET_CPU_WAIT_SPINS: 10000, as measured) */
  GPUNET_CPU_WAIT_SPIN,      /* libgomp's own default: about 300000 spins before sleeping */
  GPUNET_CPU_WAIT_PASSIVE    /* sleep at once (OMP_WAIT_POLICY=PASSIVE) */
} gpunet_cpu_wait;

/* The fast CPU backend's options: every choice it makes at plan time that a caller may
 * change, each documented with the measurement that justifies it in docs/performance.md
 * ("Options").  All zero (GPUNET_CPU_AUTO) is the default. */
typedef struct {
  gpunet_cpu_choice winograd;  /* auto: ours, F(3x3, 3x3) on the first stage's stride-1
                                * layers (accuracy); own: F(4x4, 3x3) everywhere;
                                * onednn: oneDNN's Winograd where it takes a shape, else
                                * direct; off: direct convolutions only.  bf16 sessions:
                                * auto / own: ours (F(4x4), bf16 in and out) on the
                                * stride-1 3x3 layers; onednn / off: oneDNN's bf16 ones */
  gpunet_cpu_choice pw;        /* dense 1x1: auto / own: ours (AVX-512 only); onednn */
  gpunet_cpu_choice strassen;  /* our 1x1 by one level of Strassen: auto: where the rule
                                * expects a gain; own: wherever the shape allows; off */
  int block;                   /* channel block between layers: 0 by oneDNN's ISA (16 with
                                * AVX-512, else 8), or 8 or 16 (tests) */
  gpunet_cpu_simd simd;        /* the most vector code our own kernels and the session's
                                * preprocess use: auto (what the CPU has), avx2 (also the
                                * 8-channel block unless `block` says otherwise) or portable
                                * (plain C); oneDNN's own kernels follow DNNL_MAX_CPU_ISA */
  gpunet_cpu_wait wait;        /* idle OpenMP threads: auto, spin or passive (above); an
                                * OMP_WAIT_POLICY or GOMP_SPINCOUNT in the environment wins */
  int no_bf16;                 /* 1: act as if the CPU lacked AVX-512 BF16 and AMX
                                * (tests of precision=bf16's refusal) */
  int bf16_f32_act;            /* precision=bf16: 0 (auto): activations stored as bf16
                                * between the ops that take them; 1 (f32): f32 between
                                * all layers, each bf16 convolution converting its input */
  int int8_min_macs;           /* precision=int8: the calibrated convolutions with fewer
                                * multiply-accumulates per output value (cin x k x k) stay
                                * f32; 0 = GPUNET_CPU_INT8_MIN_MACS, 1 = every one */
  int int8_rest_f32;           /* precision=int8: 0 (auto): the layers int8 does not take
                                * run in bf16 as a bf16 session runs them, bf16 activations
                                * between them, where the CPU has AVX-512 BF16 or AMX;
                                * 1 (f32): those layers in f32 */
  int int8_layout_onednn;      /* precision=int8: 0 (auto): our kernels move each int8
                                * convolution's input to nhwc u8/s8 and its output back
                                * (int8_layout.c); 1 (onednn): oneDNN's reorders */
  int int8_fuse_off;           /* precision=int8: 0 (auto): a depthwise op between int8
                                * convolutions reads the one's nhwc output and writes the
                                * other's quantised nhwc input itself; 1 (off): through the
                                * blocked tensors and the layout moves */
  int xdw;                     /* bf16 and f32 on 16-channel blocks: 0 (auto): a 1x1
                                * expansion whose output only the depthwise op after it
                                * reads runs inside that op (its rows never stored) on the
                                * planes of at least GPUNET_CPU_XDW_MIN_HW_BF16 or _F32
                                * pixels; 1 (off): never; 2 (all): on every plane */
  gpunet_cpu_choice bf16pw;    /* precision=bf16, 1x1 convolutions with a bf16 input:
                                * auto: ours (bf16_pwconv.c) on planes of
                                * GPUNET_CPU_PWB_MIN_HW to _MAX_HW pixels; own: ours on
                                * every one;
                                * onednn: oneDNN's bf16 kernel */
} gpunet_cpu_options;

/* gpunet_cpu_options.xdw's rule: the smallest expanded plane fused, in bf16 and in f32
 * sessions (docs/performance.md, "Options") */
#define GPUNET_CPU_XDW_MIN_HW_BF16 2048
#define GPUNET_CPU_XDW_MIN_HW_F32 784

/* gpunet_cpu_options.bf16pw's rule: the planes (pixels) whose 1x1 convolutions run on our
 * bf16 kernel (docs/performance.md, "Options") */
#define GPUNET_CPU_PWB_MIN_HW 32
#define GPUNET_CPU_PWB_MAX_HW 64

/* gpunet_cpu_options.int8_min_macs's default (docs/performance.md, "Options"). */
#define GPUNET_CPU_INT8_MIN_MACS 64

/* Levels of gpunet_session_params.cuda_fused (and gpunet_plan_params.cuda_fused). */
enum { GPUNET_CUDA_FUSED_OFF = 0, GPUNET_CUDA_FUSED_KERNELS = 1, GPUNET_CUDA_FUSED_NHWC = 2 };

/* The CUDA backend's run-time choices (docs/cuda.md, "Options").  All zero is the
 * default. */
enum { GPUNET_CUDA_GRAPHS_ON = 0, GPUNET_CUDA_GRAPHS_OFF = 1 };
enum { GPUNET_CUDA_DW_AUTO = 0, GPUNET_CUDA_DW_DIRECT = 1 };
enum { GPUNET_CUDA_NHWC_PAD_OFF = 0, GPUNET_CUDA_NHWC_PAD_ON = 1 };
enum { GPUNET_CUDA_NHWC_STRIP_64 = 0, GPUNET_CUDA_NHWC_STRIP_FILL = 1 };
enum { GPUNET_CUDA_PDL_OFF = 0, GPUNET_CUDA_PDL_ON = 1 };
enum { GPUNET_CUDA_NHWC_TUNE_OFF = 0, GPUNET_CUDA_NHWC_TUNE_ON = 1 };
typedef struct {
  int graphs;   /* GPUNET_CUDA_GRAPHS_ON: capture the per-frame work in CUDA graphs;
                 * _OFF: plain launches */
  int dwconv;   /* GPUNET_CUDA_DW_AUTO: the tiled depthwise kernel where it applies;
                 * _DIRECT: the one-thread-per-output kernel for every shape */
  int nhwc_pad; /* the NHWC network (cuda_fused level 2): GPUNET_CUDA_NHWC_PAD_ON plans
                 * every tensor's channels padded to a multiple of 8 with zeros
                 * (gpunet_graph_pad_channels); _OFF: as the model has them */
  int nhwc_strip; /* the NHWC network's depthwise layers with no SE after them:
                   * GPUNET_CUDA_NHWC_STRIP_FILL: strips of 64 down to 8 positions, the
                   * longest whose grid has 4 blocks per SM (gpunet_nhwc_fill_strip);
                   * _64: strips of 64 positions */
  int pdl;      /* GPUNET_CUDA_PDL_ON: on sm_90+ our kernels in the network launch with
                 * programmatic dependent launch (each may be scheduled while the one
                 * before it finishes); _OFF: plain launches */
  int nhwc_tune; /* the NHWC network's cuDNN graphs: GPUNET_CUDA_NHWC_TUNE_ON times the
                  * heuristics' first four plans of each convolution at planning and keeps
                  * the fastest; _OFF: the first that fits the workspace */
} gpunet_cuda_options;

/* What a backend's plan() receives (kernels/backend.h): the engine's
 * gpunet_session_params, less what only the engine reads (the backend choice), filled by
 * models/session.c.  Kernel-side: a field is added here only when a backend reads it, and
 * bumps GPUNET_CUDA_ABI_VERSION (kernels/cuda/cuda_module.h). */
typedef struct {
  gpunet_precision precision;
  int max_batch;             /* largest n passed to forward/classify; >= 1 */
  int n_threads;             /* CPU backends; 0 = all cores */
  int device;                /* CUDA device ordinal */
  int cuda_fused;            /* GPUNET_CUDA_FUSED_* */
  void *cuda_context;        /* the CUcontext every CUDA call runs in, or NULL */
  gpunet_cpu_options cpu;    /* the fast CPU backend's options, environment applied */
  gpunet_cuda_options cuda;  /* the CUDA backend's options, environment applied */
  const gpunet_int8_input *int8;  /* precision=int8: one per graph op (the session's
                                   * scales file, checked against the graph), else NULL */
} gpunet_plan_params;

/* Called after each top-level block during gpunet_session_forward_traced: `block` is the
 * block's position among the architecture's layers (0 = first after "data"), `data` the
 * NCHW float32 output of shape n x c x h x w. */
typedef void (*gpunet_trace_func) (void *user, int block, const float *data,
    int n, int c, int h, int w);

/* ---- images and class scores ------------------------------------------------- */

typedef enum {
  GPUNET_FORMAT_RGB = 0, GPUNET_FORMAT_BGR,
  GPUNET_FORMAT_RGBA, GPUNET_FORMAT_BGRA, GPUNET_FORMAT_RGBX, GPUNET_FORMAT_BGRX,
  GPUNET_FORMAT_NV12, GPUNET_FORMAT_I420
} gpunet_pixel_format;

typedef enum { GPUNET_MATRIX_BT601 = 0, GPUNET_MATRIX_BT709 } gpunet_color_matrix;

typedef enum {
  GPUNET_RESIZE_CENTER_CROP = 0,  /* timm eval: shorter side to R/crop_pct, centre R x R */
  GPUNET_RESIZE_STRETCH,          /* whole frame to R x R, aspect not kept */
  GPUNET_RESIZE_LETTERBOX         /* whole frame inside R x R, aspect kept, padded with the mean */
} gpunet_resize_mode;

/* Where an image's planes live.  GPUNET_MEMORY_CUDA: device pointers valid in the CUDA
 * context current on the calling thread, readable by the session's CUDA backend only. */
typedef enum { GPUNET_MEMORY_HOST = 0, GPUNET_MEMORY_CUDA } gpunet_memory;

/* The largest width and height of a frame the engine classifies (gpunet_session_classify
 * and gpunet_engine_submit refuse a larger one). */
#define GPUNET_MAX_FRAME_SIDE 32768

/* One 8-bit frame; planes/strides per format (NV12: Y, UV; I420: Y, U, V).  Zero-initialise
 * it: the last field then says host memory. */
typedef struct {
  gpunet_pixel_format format;
  int width, height;
  const uint8_t *planes[3];
  int strides[3];
  gpunet_color_matrix matrix;   /* YUV formats only */
  int full_range;               /* YUV formats only: 0 = limited (16-235) */
  gpunet_memory memory;         /* GPUNET_MEMORY_HOST (0) unless set */
  void *cuda_ready;             /* GPUNET_MEMORY_CUDA: a CUevent (cudaEvent_t) recorded on
                                 * the producer's stream after its last write to the
                                 * planes, or NULL when they are ready; the session's
                                 * stream waits for it on the GPU before reading, so the
                                 * producer needs no host sync.  It must stay valid until
                                 * the call that reads the image returns. */
} gpunet_image;

typedef struct {
  gpunet_resize_mode resize_mode;
  float crop_pct;   /* <= 0: the model's default */
} gpunet_preprocess_params;

typedef struct {
  int id;
  float score;      /* softmax probability */
} gpunet_class_score;

/* Softmax over `n` logits and the k best (ids ascending among equal scores). */
void gpunet_topk_softmax (const float *logits, int n, int k, gpunet_class_score *out);

#ifdef __cplusplus
}
#endif
#endif /* GPUNET_TYPES_H */

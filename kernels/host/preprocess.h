/* preprocess.h: the CPU backend's fused preprocess (colour convert + resize/crop +
 * mean/std + NCHW float32) and its plan: the per-axis tap tables and scratch rows for one
 * (frame size, output size, resize mode, crop_pct), built once so per-frame work allocates
 * nothing.  The maths lives in kernels/common/preprocess_math.h. */
#ifndef GPUNET_CPU_PREPROCESS_H
#define GPUNET_CPU_PREPROCESS_H

#include "gpunet-types.h"
#include "preprocess_math.h"
#include "cpu_paths.h"

/* The taps of one axis for output indices 0..n-1; outputs outside [lo, hi) are padding. */
typedef struct {
  gpunet_axis_map map;
  int n, lo, hi;
  int ksize;            /* weights per output index in `weights` (x: a multiple of 16, y: of 4) */
  int src_lo, src_hi;   /* the source indices any tap reads */
  int *first;           /* n: first source index of output o's taps */
  int *count;           /* n: number of taps */
  float *weights;       /* n x ksize */
} gpunet_resample_axis;

typedef struct {
  int in_w, in_h, out_size;
  gpunet_resize_mode mode;
  float crop_pct;
  gpunet_resample_axis x, y;
  float pad[3];         /* the normalised value of a padding pixel, per channel */
  int simd_cap;         /* the most vector code the pass uses: -1 (plan_init's default)
                         * what the CPU has, 0 the portable loops, 1 AVX2 (the session
                         * sets it from gpunet_cpu_options.simd; tests set it) */
  unsigned paths_ran;   /* the CPU code paths (cpu_paths.h bits) the passes with this
                         * plan ran: AVX2 / AVX-512 for their vector code, PORTABLE where
                         * a pass part with vector forms ran its plain loops (tests read it) */
  int round8;           /* 1 (plan_init's default): round each resampled value to an
                         * integer 0..255 like PIL's 8-bit output; 0: clamp only */
  float norm[3][256];   /* gpunet_normalize (v, c) of each 8-bit value (used with round8:
                         * two divisions per value become a load, bit for bit) */
  /* scratch: converted source rows (ring of y.ksize rows of 3 planes), the vertical sum
   * of one output row, its horizontal sums (3 x out_size), and one chroma row pair */
  int ring_rows;
  int *ring_tag;
  float **rows;
  float *ring;
  float *vsum;
  float *hsum;
  float *chroma;
} gpunet_preprocess_plan;

/* Builds the plan of an in_w x in_h frame to an out_size x out_size network input.
 * crop_pct (> 0) is used by GPUNET_RESIZE_CENTER_CROP only.  Returns GPUNET_OK,
 * GPUNET_ERR_INVALID_ARGUMENT for sizes < 1 or a crop_pct <= 0, or GPUNET_ERR_NO_MEMORY;
 * on failure the plan holds nothing to free.  Sentences are the caller's job. */
gpunet_status gpunet_preprocess_plan_init (gpunet_preprocess_plan *plan, int in_w, int in_h,
    int out_size, gpunet_resize_mode mode, float crop_pct);

/* Non-zero when `plan` was built for exactly these arguments (so a caller can keep it). */
int gpunet_preprocess_plan_matches (const gpunet_preprocess_plan *plan, int in_w, int in_h,
    int out_size, gpunet_resize_mode mode, float crop_pct);

/* Frees the plan's tables (the struct itself is the caller's); safe on a zeroed plan. */
void gpunet_preprocess_plan_clear (gpunet_preprocess_plan *plan);

/* Writes the 3 x R x R float32 input of `image` (already validated; its size must be the
 * plan's) to out_chw.  Single-threaded, allocates nothing; a plan is used by one thread at
 * a time (its scratch rows are written). */
void gpunet_cpu_preprocess (gpunet_preprocess_plan *plan, const gpunet_image *image,
    float *out_chw);

#endif

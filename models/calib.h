/* calib.h: precision=int8's scales file and calibration, inside the engine (calib.c):
 * the parsed file, its bounded reader and writer (also the fuzz target's entry), a
 * graph's identity, and the per-op quantisation a session plans with. */
#ifndef GPUNET_CALIB_H
#define GPUNET_CALIB_H

#include <stddef.h>
#include <stdint.h>

#include "gpunet.h"
#include "../kernels/graph.h"

#define GPUNET_SCALES_VERSION 1
#define GPUNET_SCALES_HEADER_BYTES 48
#define GPUNET_SCALES_ENTRY_BYTES 24
#define GPUNET_SCALES_MAX_ENTRIES 4096
#define GPUNET_SCALES_MAX_BYTES (GPUNET_SCALES_HEADER_BYTES \
    + GPUNET_SCALES_MAX_ENTRIES * GPUNET_SCALES_ENTRY_BYTES)

/* One quantised convolution's input: graph op `op`, its input shape, the smallest value
 * seen and the clip (the largest |x| kept: scale = clip / 127, or / 255 when min >= 0). */
typedef struct {
  int op, c, h, w;
  float min, clip;
} gpunet_scales_entry;

typedef struct {
  uint64_t arch_hash, weights_hash;   /* gpunet_graph_identity of the calibrated model */
  int method;                         /* gpunet_calib_method */
  float percentile;                   /* 100 for max */
  int n_images;
  int n;
  gpunet_scales_entry *entries;       /* by op, ascending */
} gpunet_scales;

/* Hashes (FNV-1a, 64 bits) of a graph's structure (ops, shapes, activations) and of its
 * BatchNorm-folded weights: what a scales file is bound to. */
void gpunet_graph_identity (const gpunet_graph *g, uint64_t *arch_hash,
    uint64_t *weights_hash);

/* 1 where op i of g runs in int8 under precision=int8: a dense convolution that does not
 * read the network input (the first layer, depthwise, SE and classifier stay f32). */
int gpunet_int8_quantisable (const gpunet_graph *g, int i);

/* Parses a scales file's `len` bytes into *out (gpunet_scales_clear it): magic, version,
 * exact size, sane entries; GPUNET_ERR_FORMAT with a sentence otherwise.  Any bytes are
 * safe (fuzzed: tests/fuzz/fuzz_scales.c). */
gpunet_status gpunet_scales_parse (const uint8_t *data, size_t len, gpunet_scales *out,
    char **error_text);

/* Reads a regular file of at most GPUNET_SCALES_MAX_BYTES (a FIFO or device is refused
 * without blocking) and parses it; errors name the file. */
gpunet_status gpunet_scales_load (const char *path, gpunet_scales *out, char **error_text);

gpunet_status gpunet_scales_write (const gpunet_scales *s, const char *path,
    char **error_text);
void gpunet_scales_clear (gpunet_scales *s);

/* Loads the scales file at `path`, checks it was made for this graph (identity and each
 * entry's op and shape) and gives one gpunet_int8_input per op of g (*out, free()).
 * Without a path: the sentence saying precision=int8 needs one. */
gpunet_status gpunet_int8_inputs (const gpunet_graph *g, const char *path,
    gpunet_int8_input **out, char **error_text);

#endif

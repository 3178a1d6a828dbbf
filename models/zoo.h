/* zoo.h: the built-in table of NVIDIA's seven published GPUNet architectures, in the
 * project's own compact form (internal to models/; arch.c turns a row set into a
 * validated gpunet_arch). */
#ifndef GPUNET_ZOO_H
#define GPUNET_ZOO_H

#include <stddef.h>

#include "arch_types.h"

/* One layer row; json_index is implied (row position + 2, after the "data" entry). */
typedef struct {
  gpunet_layer_type type;
  int in_ch, out_ch;
  int kernel, stride;   /* conv, irb, fused_irb; ignored for head/head_large/tail */
  double expansion;     /* irb, fused_irb; 0 = not applicable (stored as 1) */
  int groups;           /* distilled irb/fused_irb; 0 = not applicable (stored as 1) */
  int stage;            /* -1 when the published JSON has no "stage" key */
  gpunet_act act;       /* as the builder uses it (default swish for heads without "act") */
  int use_se;
  int num_classes;      /* tail */
} gpunet_zoo_layer;

typedef struct {
  const char *name;       /* canonical: "gpunet-0" */
  const char *alias;      /* NVIDIA's config name: "0.65ms" */
  int resolution;
  int distill;
  float crop_pct;
  int n_layers;           /* without "data" */
  const gpunet_zoo_layer *layers;
} gpunet_zoo_model;

/* The model for a canonical name, its latency alias ("0.65ms", "2.25ms-D") or NVIDIA's
 * timm name ("gpunet_0"), compared case-insensitively with '_' equal to '-'; NULL when
 * unknown.  The table is static and immutable (thread-safe). */
const gpunet_zoo_model *gpunet_zoo_find (const char *name);

/* The NULL-terminated list of canonical names, in table order. */
const char *const *gpunet_zoo_names (void);

#endif

/* arch.h: GPUNet architectures as the engine sees them: NVIDIA's JSON layer list,
 * validated, or a built-in published model.  Graph building (arch_graph.c) turns this into
 * operators with NVIDIA's exact semantics. */
#ifndef GPUNET_ARCH_H
#define GPUNET_ARCH_H

#include "gpunet.h"
#include "arch_types.h"

typedef struct {
  gpunet_layer_type type;
  int json_index;     /* 1-based position in the JSON list counting the "data" entry
                         (NVIDIA's module names use it: "head: 2", "stage: 1 irb3") */
  int in_ch, out_ch;
  int kernel, stride; /* head/head_large: 3, 2 */
  double expansion;   /* irb, fused_irb; 1 otherwise */
  int groups;         /* distilled irb/fused_irb ("groups"); 1 otherwise */
  int stage;          /* "stage", -1 when absent */
  gpunet_act act;     /* non-distilled head (default swish), conv, irb, fused_irb; RELU in distilled */
  int use_se;         /* non-distilled irb, fused_irb */
  int num_classes;    /* tail */
} gpunet_layer_spec;

typedef struct {
  char *name;          /* "gpunet-0", or the JSON file's base name without .json */
  int resolution;      /* data.img_resolution */
  int distill;         /* data.distill */
  int num_classes;     /* the tail's */
  float crop_pct;      /* timm eval crop_pct: 0.875 for gpunet-p0/p1, 1.0 otherwise */
  int n_layers;        /* without the "data" entry */
  gpunet_layer_spec *layers;
} gpunet_arch;

/* Parses and validates NVIDIA's JSON format; `source` names the file in errors. */
gpunet_status gpunet_arch_parse (const char *json, size_t len, const char *source,
    gpunet_arch **out, char **error_text);

/* A built-in name or alias (case-insensitive), else a path to a JSON file. */
gpunet_status gpunet_arch_load (const char *name_or_path, gpunet_arch **out, char **error_text);

/* The built-in models only; GPUNET_ERR_ARCH listing the known names when unknown. */
gpunet_status gpunet_arch_builtin (const char *name, gpunet_arch **out, char **error_text);

/* NULL-terminated list of the canonical built-in names. */
const char *const *gpunet_arch_builtin_names (void);

void gpunet_arch_free (gpunet_arch *arch);

#endif

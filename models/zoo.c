/* zoo.c: the built-in table of NVIDIA's seven published GPUNet architectures
 * (GPUNet-0/1/2, -P0/P1, -D1/D2), transcribed layer by layer from the facts of NVIDIA's
 * published configs into one C row per layer.  arch.c builds and validates a
 * gpunet_arch from these rows exactly as it does for a parsed JSON file. */
#include "zoo.h"

#include <ctype.h>
#include <string.h>

#define R GPUNET_ACT_RELU
#define S GPUNET_ACT_SWISH

/* Non-distilled rows: in, out, [kernel, stride, expansion, use_se,] act, stage. */
#define HEAD(i, o, a) { GPUNET_LAYER_HEAD, i, o, 3, 2, 0, 0, -1, a, 0, 0 }
#define CONV(i, o, k, s, a, st) { GPUNET_LAYER_CONV, i, o, k, s, 0, 0, st, a, 0, 0 }
#define IRB(i, o, k, s, e, se, a, st) { GPUNET_LAYER_IRB, i, o, k, s, e, 0, st, a, se, 0 }
#define FIRB(i, o, k, s, e, se, a, st) { GPUNET_LAYER_FUSED_IRB, i, o, k, s, e, 0, st, a, se, 0 }
/* Distilled rows (every block ReLU): in, out, [kernel, stride, expansion, groups,] stage. */
#define DHEAD(i, o, st) { GPUNET_LAYER_HEAD, i, o, 3, 2, 0, 0, st, R, 0, 0 }
#define DHEADL(i, o, st) { GPUNET_LAYER_HEAD_LARGE, i, o, 3, 2, 0, 0, st, R, 0, 0 }
#define DIRB(i, o, k, s, e, g, st) { GPUNET_LAYER_IRB, i, o, k, s, e, g, st, R, 0, 0 }
#define DFIRB(i, o, k, s, e, g, st) { GPUNET_LAYER_FUSED_IRB, i, o, k, s, e, g, st, R, 0, 0 }
/* Both modes: in, out, classes (the Epilogue's activation is ReLU). */
#define TAIL(i, o, n) { GPUNET_LAYER_TAIL, i, o, 1, 1, 0, 0, -1, R, 0, n }

/* gpunet-0 (0.65ms): 320 x 320, not distilled */
static const gpunet_zoo_layer gpunet_0_layers[] = {
  HEAD (3, 32, S),
  CONV (32, 32, 3, 1, R, 1),
  CONV (32, 32, 3, 1, R, 1),
  FIRB (32, 32, 3, 2, 5.0, 0, R, 2),
  FIRB (32, 32, 3, 1, 5.0, 0, R, 2),
  FIRB (32, 64, 3, 2, 5.0, 0, R, 3),
  FIRB (64, 64, 3, 1, 5.0, 0, R, 3),
  FIRB (64, 64, 3, 1, 5.0, 0, R, 3),
  IRB  (64, 256, 3, 2, 5.0, 0, S, 4),
  IRB  (256, 256, 3, 1, 5.0, 0, S, 4),
  IRB  (256, 256, 3, 1, 5.0, 0, S, 4),
  IRB  (256, 704, 3, 2, 5.0, 1, R, 6),
  IRB  (704, 704, 3, 1, 5.0, 1, R, 6),
  TAIL (704, 1280, 1000),
};

/* gpunet-1 (0.85ms): 288 x 288, not distilled */
static const gpunet_zoo_layer gpunet_1_layers[] = {
  HEAD (3, 24, S),
  CONV (24, 24, 3, 1, R, 1),
  FIRB (24, 64, 3, 2, 4.0, 0, S, 2),
  FIRB (64, 64, 3, 1, 4.0, 0, S, 2),
  FIRB (64, 96, 3, 2, 4.0, 0, S, 3),
  FIRB (96, 96, 3, 1, 4.0, 0, S, 3),
  IRB  (96, 160, 3, 2, 2.0, 1, S, 4),
  IRB  (160, 288, 3, 1, 5.0, 0, R, 5),
  IRB  (288, 288, 3, 1, 5.0, 0, R, 5),
  IRB  (288, 288, 3, 1, 5.0, 0, R, 5),
  IRB  (288, 288, 3, 1, 5.0, 0, R, 5),
  IRB  (288, 448, 3, 2, 4.0, 1, R, 6),
  IRB  (448, 448, 3, 1, 4.0, 1, R, 6),
  IRB  (448, 448, 3, 1, 4.0, 1, R, 6),
  IRB  (448, 448, 3, 1, 4.0, 1, R, 6),
  TAIL (448, 1280, 1000),
};

/* gpunet-2 (1.75ms): 384 x 384, not distilled */
static const gpunet_zoo_layer gpunet_2_layers[] = {
  HEAD (3, 32, S),
  CONV (32, 32, 3, 1, R, 1),
  CONV (32, 32, 3, 1, R, 1),
  CONV (32, 32, 3, 1, R, 1),
  FIRB (32, 32, 5, 2, 6.0, 1, S, 2),
  FIRB (32, 112, 3, 2, 3.0, 0, S, 3),
  FIRB (112, 112, 3, 1, 3.0, 0, S, 3),
  FIRB (112, 112, 3, 1, 3.0, 0, S, 3),
  IRB  (112, 144, 3, 2, 6.0, 0, S, 4),
  IRB  (144, 144, 3, 1, 6.0, 0, S, 4),
  IRB  (144, 144, 3, 1, 6.0, 0, S, 4),
  IRB  (144, 144, 3, 1, 6.0, 0, S, 4),
  IRB  (144, 144, 3, 1, 6.0, 0, S, 4),
  IRB  (144, 144, 3, 1, 6.0, 0, S, 4),
  IRB  (144, 160, 5, 1, 3.0, 0, R, 5),
  IRB  (160, 160, 5, 1, 3.0, 0, R, 5),
  IRB  (160, 160, 5, 1, 3.0, 0, R, 5),
  IRB  (160, 160, 5, 1, 3.0, 0, R, 5),
  IRB  (160, 224, 3, 2, 3.0, 1, S, 6),
  IRB  (224, 224, 3, 1, 3.0, 1, S, 6),
  IRB  (224, 224, 3, 1, 3.0, 1, S, 6),
  IRB  (224, 224, 3, 1, 3.0, 1, S, 6),
  IRB  (224, 224, 3, 1, 3.0, 1, S, 6),
  IRB  (224, 224, 3, 1, 3.0, 1, S, 6),
  IRB  (224, 224, 3, 1, 3.0, 1, S, 6),
  IRB  (224, 224, 3, 1, 3.0, 1, S, 6),
  IRB  (224, 832, 5, 1, 2.0, 0, R, 7),
  IRB  (832, 832, 5, 1, 2.0, 0, R, 7),
  IRB  (832, 832, 5, 1, 2.0, 0, R, 7),
  IRB  (832, 832, 5, 1, 2.0, 0, R, 7),
  IRB  (832, 832, 5, 1, 2.0, 0, R, 7),
  IRB  (832, 832, 5, 1, 2.0, 0, R, 7),
  IRB  (832, 832, 5, 1, 2.0, 0, R, 7),
  TAIL (832, 1280, 1000),
};

/* gpunet-p0 (0.5ms-D): 224 x 224, not distilled */
static const gpunet_zoo_layer gpunet_p0_layers[] = {
  HEAD (3, 32, R),
  CONV (32, 32, 3, 1, R, 1),
  CONV (32, 32, 3, 1, R, 1),
  CONV (32, 64, 3, 2, R, 2),
  IRB  (64, 96, 3, 2, 8.0, 0, R, 3),
  IRB  (96, 96, 3, 1, 7.67, 0, R, 3),
  IRB  (96, 96, 3, 1, 7.67, 0, R, 3),
  IRB  (96, 256, 3, 2, 7.67, 0, R, 4),
  IRB  (256, 256, 5, 1, 4.25, 0, R, 4),
  IRB  (256, 256, 3, 1, 4.75, 0, R, 4),
  IRB  (256, 704, 3, 2, 8.0, 0, R, 5),
  IRB  (704, 704, 5, 1, 3.82, 0, R, 5),
  IRB  (704, 704, 3, 1, 3.36, 0, R, 5),
  IRB  (704, 704, 3, 1, 2.55, 0, R, 5),
  IRB  (704, 704, 3, 2, 5.73, 0, R, 6),
  TAIL (704, 1984, 1000),
};

/* gpunet-p1 (0.8ms-D): 224 x 224, not distilled */
static const gpunet_zoo_layer gpunet_p1_layers[] = {
  HEAD (3, 32, R),
  CONV (32, 32, 3, 1, R, 1),
  CONV (32, 32, 3, 1, R, 1),
  CONV (32, 64, 5, 2, R, 2),
  IRB  (64, 64, 3, 1, 8.0, 0, R, 2),
  IRB  (64, 64, 3, 1, 8.0, 0, R, 2),
  IRB  (64, 96, 5, 2, 8.0, 0, R, 3),
  IRB  (96, 96, 5, 1, 8.0, 0, R, 3),
  IRB  (96, 256, 5, 2, 8.0, 0, R, 4),
  IRB  (256, 256, 5, 1, 7.5, 0, R, 4),
  IRB  (256, 256, 3, 1, 7.88, 0, R, 4),
  IRB  (256, 704, 5, 2, 7.88, 0, R, 5),
  IRB  (704, 704, 5, 1, 8.0, 0, R, 5),
  IRB  (704, 704, 3, 1, 7.41, 0, R, 5),
  IRB  (704, 704, 5, 1, 8.0, 0, R, 5),
  IRB  (704, 704, 5, 2, 7.95, 0, R, 6),
  TAIL (704, 1984, 1000),
};

/* gpunet-d1 (1.25ms-D): 456 x 456, distilled */
static const gpunet_zoo_layer gpunet_d1_layers[] = {
  DHEAD (3, 33, 0),
  DIRB  (33, 33, 3, 1, 1, 1, 0),
  DIRB  (33, 44, 3, 2, 3, 1, 1),
  DIRB  (44, 44, 5, 1, 4, 1, 1),
  DIRB  (44, 44, 3, 1, 3, 1, 1),
  DIRB  (44, 67, 5, 2, 4, 1, 2),
  DIRB  (67, 67, 5, 1, 4, 1, 2),
  DIRB  (67, 67, 3, 1, 6, 1, 2),
  DIRB  (67, 67, 5, 1, 3, 1, 2),
  DIRB  (67, 134, 7, 2, 6, 1, 3),
  DIRB  (134, 134, 5, 1, 6, 1, 3),
  DIRB  (134, 134, 3, 1, 3, 1, 3),
  DIRB  (134, 134, 5, 1, 4, 1, 3),
  DIRB  (134, 190, 3, 1, 6, 1, 3),
  DIRB  (190, 190, 5, 1, 6, 1, 3),
  DIRB  (190, 190, 7, 1, 6, 1, 3),
  DIRB  (190, 190, 3, 1, 4, 1, 3),
  DIRB  (190, 268, 3, 2, 6, 1, 4),
  DIRB  (268, 268, 3, 1, 6, 1, 4),
  DIRB  (268, 268, 5, 1, 6, 1, 4),
  DIRB  (268, 268, 3, 1, 3, 1, 4),
  DIRB  (268, 268, 3, 1, 3, 1, 4),
  DIRB  (268, 268, 3, 1, 3, 1, 4),
  TAIL (268, 1984, 1000),
};

/* gpunet-d2 (2.25ms-D): 528 x 528, distilled */
static const gpunet_zoo_layer gpunet_d2_layers[] = {
  DHEADL (3, 48, 0),
  DIRB  (48, 48, 3, 1, 1, 1, 0),
  DIRB  (48, 64, 3, 2, 3, 1, 1),
  DIRB  (64, 64, 5, 1, 4, 1, 1),
  DIRB  (64, 64, 3, 1, 3, 1, 1),
  DIRB  (64, 96, 5, 2, 4, 1, 2),
  DIRB  (96, 96, 5, 1, 4, 1, 2),
  DIRB  (96, 96, 3, 1, 6, 1, 2),
  DIRB  (96, 96, 5, 1, 3, 1, 2),
  DIRB  (96, 192, 7, 2, 6, 1, 3),
  DIRB  (192, 192, 5, 1, 6, 1, 3),
  DIRB  (192, 192, 3, 1, 3, 1, 3),
  DIRB  (192, 192, 5, 1, 4, 1, 3),
  DIRB  (192, 192, 5, 1, 4, 1, 3),
  DIRB  (192, 272, 3, 1, 6, 1, 3),
  DIRB  (272, 272, 5, 1, 6, 1, 3),
  DIRB  (272, 272, 7, 1, 6, 1, 3),
  DIRB  (272, 272, 5, 1, 6, 1, 3),
  DIRB  (272, 272, 3, 1, 4, 1, 3),
  DIRB  (272, 384, 3, 2, 6, 1, 4),
  DIRB  (384, 384, 3, 1, 6, 1, 4),
  DIRB  (384, 384, 5, 1, 6, 1, 4),
  DIRB  (384, 384, 3, 1, 3, 1, 4),
  DIRB  (384, 384, 3, 1, 3, 1, 4),
  DIRB  (384, 384, 3, 1, 3, 1, 4),
  DIRB  (384, 384, 3, 1, 3, 1, 4),
  TAIL (384, 1984, 1000),
};

#define N_ROWS(a) ((int) (sizeof (a) / sizeof (a)[0]))

static const gpunet_zoo_model zoo[] = {
  { "gpunet-0", "0.65ms", 320, 0, 1.0f, N_ROWS (gpunet_0_layers), gpunet_0_layers },
  { "gpunet-1", "0.85ms", 288, 0, 1.0f, N_ROWS (gpunet_1_layers), gpunet_1_layers },
  { "gpunet-2", "1.75ms", 384, 0, 1.0f, N_ROWS (gpunet_2_layers), gpunet_2_layers },
  { "gpunet-p0", "0.5ms-D", 224, 0, 0.875f, N_ROWS (gpunet_p0_layers), gpunet_p0_layers },
  { "gpunet-p1", "0.8ms-D", 224, 0, 0.875f, N_ROWS (gpunet_p1_layers), gpunet_p1_layers },
  { "gpunet-d1", "1.25ms-D", 456, 1, 1.0f, N_ROWS (gpunet_d1_layers), gpunet_d1_layers },
  { "gpunet-d2", "2.25ms-D", 528, 1, 1.0f, N_ROWS (gpunet_d2_layers), gpunet_d2_layers },
};

#define N_MODELS ((int) (sizeof zoo / sizeof zoo[0]))

static const char *const zoo_names[] = {
  "gpunet-0", "gpunet-1", "gpunet-2", "gpunet-p0", "gpunet-p1", "gpunet-d1", "gpunet-d2", NULL
};

/* Case-insensitive comparison that treats '_' and '-' as the same character. */
static int
name_equal (const char *a, const char *b)
{
  for (;; a++, b++) {
    int ca = tolower ((unsigned char) *a), cb = tolower ((unsigned char) *b);
    if (ca == '_')
      ca = '-';
    if (cb == '_')
      cb = '-';
    if (ca != cb)
      return 0;
    if (ca == '\0')
      return 1;
  }
}

const gpunet_zoo_model *
gpunet_zoo_find (const char *name)
{
  if (!name)
    return NULL;
  for (int i = 0; i < N_MODELS; i++)
    if (name_equal (name, zoo[i].name) || name_equal (name, zoo[i].alias))
      return &zoo[i];
  return NULL;
}

const char *const *
gpunet_zoo_names (void)
{
  return zoo_names;
}

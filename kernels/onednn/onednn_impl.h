/* onednn_impl.h: the kinds of kernel the fast CPU backend plans for an op, below both
 * backend_onednn.h (its interface) and onednn_state.h (its planned state), so that the
 * state header does not include the interface its own implementation includes. */
#ifndef GPUNET_ONEDNN_IMPL_H
#define GPUNET_ONEDNN_IMPL_H

/* What runs one op of a plan (backend_onednn.c, select_impl). */
typedef enum {
  GPUNET_ONEDNN_CONV = 0,      /* a oneDNN convolution primitive (dense, grouped, depthwise) */
  GPUNET_ONEDNN_WINO,          /* our Winograd convolution (winograd.h), F(4x4, 3x3) */
  GPUNET_ONEDNN_WINO3,         /* the same with 3x3 output tiles, F(3x3, 3x3): the first
                                * stage's stride-1 layers */
  GPUNET_ONEDNN_DW,            /* our depthwise convolution (dwconv.h) */
  GPUNET_ONEDNN_PW,            /* our 1x1 convolution (pwconv.h) */
  GPUNET_ONEDNN_PW_STRASSEN,   /* our 1x1 convolution by one level of Strassen */
  GPUNET_ONEDNN_SE,            /* our vector squeeze-excite (se.h) */
  GPUNET_ONEDNN_SE_PLAIN,      /* the plain squeeze-excite (blocked_ops.h) */
  GPUNET_ONEDNN_AVGPOOL,       /* global average pool (blocked_ops.h) */
  GPUNET_ONEDNN_LINEAR,        /* our vector fully connected layer (linear.h) */
  GPUNET_ONEDNN_LINEAR_PLAIN,  /* the plain fully connected layer (blocked_ops.h) */
  GPUNET_ONEDNN_XDW,           /* a 1x1 expansion run inside our depthwise op after it
                                * (gpunet_dw_set_expansion): nothing runs in its place */
  GPUNET_ONEDNN_PWB,           /* our bf16 1x1 convolution (bf16_pwconv.h; pwb_plan.c) */
  GPUNET_ONEDNN_IMPLS
} gpunet_onednn_impl;

#endif

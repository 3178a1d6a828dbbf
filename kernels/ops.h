/* ops.h: the operators a planned GPUNet graph is made of, one params struct per op
 * (the same noun as its file, enum and test), shared by every backend.  Weights are
 * float32 with BatchNorm already folded into weight and bias.  Tensors are NCHW. */
#ifndef GPUNET_OPS_H
#define GPUNET_OPS_H

typedef enum {
  GPUNET_OP_CONV2D,    /* dense or grouped convolution, bias, activation, residual */
  GPUNET_OP_DWCONV2D,  /* depthwise convolution (groups == channels), bias, activation */
  GPUNET_OP_SE,        /* squeeze-excite, in place: x * sigmoid(W2 act(W1 mean(x) + b1) + b2) */
  GPUNET_OP_AVGPOOL,   /* global average pool to c x 1 x 1 */
  GPUNET_OP_LINEAR     /* fully connected on c x 1 x 1, optional bias, activation */
} gpunet_op_kind;

typedef struct {
  int cin, cout, kernel, stride, pad, groups;
  int ih, iw, oh, ow;
  int act;                    /* GPUNET_EPI_* (kernels/common/activation.h) */
  const float *weight;        /* cout x (cin / groups) x k x k */
  const float *bias;          /* cout */
} gpunet_conv2d_params;

typedef struct {
  int c, kernel, stride, pad;
  int ih, iw, oh, ow;
  int act;
  const float *weight;        /* c x k x k */
  const float *bias;          /* c */
} gpunet_dwconv2d_params;

typedef struct {
  int c, rd, h, w;
  int act;                    /* activation between the two 1x1 convolutions */
  const float *w_reduce, *b_reduce;  /* rd x c, rd */
  const float *w_expand, *b_expand;  /* c x rd, c */
} gpunet_se_params;

typedef struct {
  int c, h, w;
} gpunet_avgpool_params;

typedef struct {
  int cin, cout;
  int act;
  const float *weight;        /* cout x cin */
  const float *bias;          /* cout, or NULL for none */
} gpunet_linear_params;

typedef struct {
  gpunet_op_kind kind;
  int in, out;        /* tensor ids in the graph (SE: in == out) */
  int residual;       /* CONV2D only: tensor added after the activation, or -1 */
  int block;          /* index of the architecture layer this op belongs to */
  union {
    gpunet_conv2d_params conv2d;
    gpunet_dwconv2d_params dwconv2d;
    gpunet_se_params se;
    gpunet_avgpool_params avgpool;
    gpunet_linear_params linear;
  } p;
} gpunet_op;

/* Multiply-accumulates of one op for one image (FLOPs = 2 x MACs). */
double gpunet_op_macs (const gpunet_op *op);

#endif

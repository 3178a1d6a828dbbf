/* test_cuda_graph_api.c: the NHWC network's cuDNN graphs built on the CPU
 * (kernels/cuda/conv_graph.cu): for every convolution of the seven built-in models, in
 * fp16 at batch 1 and 8, the tensor, convolution and pointwise descriptors finalize and
 * the graph holds the operations its epilogue needs; again with the channels padded to
 * multiples of 8 (nhwcpad=on: gpunet_graph_pad_channels), where every convolution but
 * the first (3 input channels) then has such counts.  Finalizing the operation graph and
 * planning need a GPU (gpunet-selftest --fused 2 runs them).  Needs libcudnn, not a GPU. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "arch.h"
#include "cuda/conv_graph.h"
#include "gpunet.h"
#include "graph.h"
#include "model_private.h"

int
main (void)
{
  const char *const *names = gpunet_arch_builtin_names ();
  int graphs = 0;
  for (int m = 0; names[m]; m++) {
    gpunet_model *model = NULL;
    char *err = NULL;
    if (gpunet_model_new_random (names[m], 1, &model, &err) != GPUNET_OK) {
      CHECK_MSG (0, "%s: %s", names[m], err ? err : "?");
      free (err);
      continue;
    }
    gpunet_built_graph padded;
    CHECK (gpunet_graph_pad_channels (gpunet_model_graph (model), 8, &padded, NULL) == 0);
    for (int pad = 0; pad < 2; pad++) {
      const gpunet_graph *g = pad ? &padded.graph : gpunet_model_graph (model);
      for (int i = 0; i < g->n_ops; i++) {
        const gpunet_op *op = &g->ops[i];
        if (op->kind != GPUNET_OP_CONV2D || op->p.conv2d.groups != 1)
          continue;
        const gpunet_conv2d_params *p = &op->p.conv2d;
        if (pad && op->in != g->input)
          CHECK_MSG (p->cin % 8 == 0 && p->cout % 8 == 0, "%s op %d padded: %d -> %d channels",
              names[m], i, p->cin, p->cout);
        for (int n = 1; n <= 8; n += 7) {
          gpunet_cg_shape sh = { n, p->cin, p->cout, p->ih, p->iw, p->oh, p->ow, p->kernel,
            p->stride, p->pad, p->act, p->bias != NULL, op->residual >= 0, 1 };
          gpunet_cg_desc d;
          char why[256];
          const cudnnStatus_t st = gpunet_cg_desc_build (&d, &sh, why, sizeof why);
          CHECK_MSG (st == CUDNN_STATUS_SUCCESS, "%s op %d batch %d: %s", names[m], i, n, why);
          CHECK_MSG (d.n_ops == gpunet_cg_n_ops (sh.has_bias, sh.act, sh.has_residual)
              && d.n_ops >= 2, "%s op %d: %d operations", names[m], i, d.n_ops);
          /* the last operation writes y, the others virtual tensors */
          CHECK (d.y != NULL && d.t[d.n_ops - 1] == NULL && (d.n_ops < 2 || d.t[d.n_ops - 2] != NULL));
          gpunet_cg_desc_destroy (&d);
          CHECK (d.x == NULL && d.graph == NULL && d.n_ops == 0);
          graphs++;
        }
      }
    }
    gpunet_graph_clear (&padded);
    gpunet_model_unref (model);
  }
  CHECK_MSG (graphs > 600, "only %d graphs built", graphs);
  /* a shape cuDNN must refuse names the failing call */
  gpunet_cg_shape bad = { 1, 8, 8, 4, 4, 4, 4, 3, 1, 1, GPUNET_CG_ACT_RELU, 1, 0, 1 };
  bad.cin = 0;
  gpunet_cg_desc d;
  char why[256] = "";
  CHECK (gpunet_cg_desc_build (&d, &bad, why, sizeof why) != CUDNN_STATUS_SUCCESS);
  const char *said = why;
  CHECK_CONTAINS (said, "cudnnBackendFinalize");
  gpunet_cg_desc_destroy (&d);
  /* operation counts: conv only, + bias, + act, + residual */
  CHECK (gpunet_cg_n_ops (0, GPUNET_CG_ACT_NONE, 0) == 1);
  CHECK (gpunet_cg_n_ops (1, GPUNET_CG_ACT_SWISH, 1) == 4);
  CHECK (gpunet_cg_n_ops (1, GPUNET_CG_ACT_NONE, 1) == 3);
  /* nhwctune=on's pick: the fastest candidate that ran; a failed one is never kept */
  {
    const int all[4] = { 1, 1, 1, 1 }, first_failed[4] = { 0, 1, 1, 1 },
        none[4] = { 0, 0, 0, 0 }, only_last[4] = { 0, 0, 0, 1 };
    const float ms[4] = { 0.5f, 0.3f, 0.4f, 0.3f }, first_fast[4] = { 0.1f, 0.3f, 0.4f, 0.2f };
    CHECK (gpunet_cg_tune_best (all, ms, 4) == 1);            /* the earlier of a tie */
    CHECK (gpunet_cg_tune_best (all, first_fast, 4) == 0);
    CHECK_MSG (gpunet_cg_tune_best (first_failed, ms, 4) == 1, "picked %d",
        gpunet_cg_tune_best (first_failed, ms, 4));
    CHECK_MSG (gpunet_cg_tune_best (first_failed, first_fast, 4) == 3, "picked %d",
        gpunet_cg_tune_best (first_failed, first_fast, 4));
    CHECK (gpunet_cg_tune_best (only_last, ms, 4) == 3);
    CHECK_MSG (gpunet_cg_tune_best (none, ms, 4) == -1, "picked %d with none run",
        gpunet_cg_tune_best (none, ms, 4));
    CHECK (gpunet_cg_tune_best (all, ms, 1) == 0);
  }
  return check_report ();
}

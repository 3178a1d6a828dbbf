/* se.c: reference squeeze-excite, in place: per-channel mean, 1x1 reduce + bias + act,
 * 1x1 expand + bias, sigmoid gate multiplied into the tensor. */
#include "activation.h"
#include "cpu_ops.h"

void
gpunet_cpu_se (const gpunet_se_params *p, float *x, float *scratch, int n)
{
  const long plane = (long) p->h * p->w;
  float *mean = scratch, *mid = scratch + p->c;

  for (int b = 0; b < n; b++) {
    float *xb = x + (long) b * p->c * plane;
    for (int c = 0; c < p->c; c++) {
      double sum = 0.0;
      for (long i = 0; i < plane; i++)
        sum += xb[c * plane + i];
      mean[c] = (float) (sum / (double) plane);
    }
    for (int r = 0; r < p->rd; r++) {
      float acc = 0.0f;
      for (int c = 0; c < p->c; c++)
        acc += p->w_reduce[(long) r * p->c + c] * mean[c];
      mid[r] = gpunet_activate (acc + p->b_reduce[r], p->act);
    }
    for (int c = 0; c < p->c; c++) {
      float acc = 0.0f;
      for (int r = 0; r < p->rd; r++)
        acc += p->w_expand[(long) c * p->rd + r] * mid[r];
      const float gate = gpunet_sigmoid (acc + p->b_expand[c]);
      float *xc = xb + c * plane;
      for (long i = 0; i < plane; i++)
        xc[i] *= gate;
    }
  }
}

/* avgpool.c: reference global average pool, n x c x h x w -> n x c x 1 x 1. */
#include "cpu_ops.h"

void
gpunet_cpu_avgpool (const gpunet_avgpool_params *p, const float *in, float *out, int n)
{
  const long plane = (long) p->h * p->w;
  for (long c = 0; c < (long) n * p->c; c++) {
    double sum = 0.0;
    for (long i = 0; i < plane; i++)
      sum += in[c * plane + i];
    out[c] = (float) (sum / (double) plane);
  }
}

/* dwconv2d.c: reference depthwise convolution (one k x k filter per channel) with the
 * fused epilogue act(acc + bias), symmetric zero padding, NCHW float32. */
#include <string.h>

#include "activation.h"
#include "cpu_ops.h"

void
gpunet_cpu_dwconv2d (const gpunet_dwconv2d_params *p, const float *in, float *out, int n)
{
  const int k = p->kernel, s = p->stride, pad = p->pad;
  const long in_plane = (long) p->ih * p->iw, out_plane = (long) p->oh * p->ow;

  for (long c = 0; c < (long) n * p->c; c++) {
    const float *x = in + c * in_plane;
    float *o = out + c * out_plane;
    const int ch = (int) (c % p->c);
    const float *w = p->weight + (long) ch * k * k;
    for (int oy = 0; oy < p->oh; oy++) {
      for (int ox = 0; ox < p->ow; ox++) {
        float acc = 0.0f;
        for (int ky = 0; ky < k; ky++) {
          const int iy = oy * s + ky - pad;
          if (iy < 0 || iy >= p->ih)
            continue;
          for (int kx = 0; kx < k; kx++) {
            const int ix = ox * s + kx - pad;
            if (ix < 0 || ix >= p->iw)
              continue;
            acc += w[ky * k + kx] * x[(long) iy * p->iw + ix];
          }
        }
        o[(long) oy * p->ow + ox] = gpunet_epilogue (acc, p->bias[ch], p->act, 0.0f);
      }
    }
  }
}

/* conv2d.c: reference dense/grouped 2-D convolution with the fused epilogue
 * act(acc + bias) + residual, symmetric zero padding, NCHW float32. */
#include <string.h>

#include "activation.h"
#include "cpu_ops.h"

/* First and one-past-last output column whose input column ox*s + kx - pad is inside
 * [0, iw). */
static void
valid_range (int kx, int pad, int s, int iw, int ow, int *lo, int *hi)
{
  int a = pad - kx;                       /* need ox*s >= a */
  int l = a <= 0 ? 0 : (a + s - 1) / s;
  int b = iw - 1 + pad - kx;              /* need ox*s <= b */
  int h = b < 0 ? 0 : b / s + 1;
  if (h > ow)
    h = ow;
  *lo = l;
  *hi = h < l ? l : h;
}

void
gpunet_cpu_conv2d (const gpunet_conv2d_params *p, const float *in, const float *residual,
    float *out, int n)
{
  const int k = p->kernel, s = p->stride, pad = p->pad;
  const int cin_g = p->cin / p->groups, cout_g = p->cout / p->groups;
  const long in_plane = (long) p->ih * p->iw, out_plane = (long) p->oh * p->ow;

  /* one output plane per iteration, each summed in the same order whatever the thread
   * count: the threads (OpenMP where the engine is built with it) change no bit */
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic)
#endif
  for (long bo = 0; bo < (long) n * p->cout; bo++) {
    const int b = (int) (bo / p->cout), oc = (int) (bo % p->cout);
    const float *inb = in + (long) b * p->cin * in_plane;
    float *outb = out + (long) b * p->cout * out_plane;
    const int g = oc / cout_g;
    float *o = outb + oc * out_plane;
    memset (o, 0, sizeof (float) * (size_t) out_plane);
    for (int ic = 0; ic < cin_g; ic++) {
      const float *x = inb + (long) (g * cin_g + ic) * in_plane;
      const float *w = p->weight + ((long) oc * cin_g + ic) * k * k;
      for (int ky = 0; ky < k; ky++) {
        for (int kx = 0; kx < k; kx++) {
          const float wv = w[ky * k + kx];
          int lo, hi;
          valid_range (kx, pad, s, p->iw, p->ow, &lo, &hi);
          for (int oy = 0; oy < p->oh; oy++) {
            const int iy = oy * s + ky - pad;
            if (iy < 0 || iy >= p->ih)
              continue;
            const float *xr = x + (long) iy * p->iw + kx - pad;
            float *orow = o + (long) oy * p->ow;
            for (int ox = lo; ox < hi; ox++)
              orow[ox] += wv * xr[ox * s];
          }
        }
      }
    }
    const float bias = p->bias ? p->bias[oc] : 0.0f;
    const float *r = residual ? residual + (long) b * p->cout * out_plane + oc * out_plane : NULL;
    for (long i = 0; i < out_plane; i++)
      o[i] = gpunet_epilogue (o[i], bias, p->act, r ? r[i] : 0.0f);
  }
}

/* linear.c: reference fully connected layer y = act(W x + b) on n vectors. */
#include "activation.h"
#include "cpu_ops.h"

void
gpunet_cpu_linear (const gpunet_linear_params *p, const float *in, float *out, int n)
{
  for (int b = 0; b < n; b++) {
    const float *x = in + (long) b * p->cin;
    for (int o = 0; o < p->cout; o++) {
      const float *w = p->weight + (long) o * p->cin;
      float acc = 0.0f;
      for (int i = 0; i < p->cin; i++)
        acc += w[i] * x[i];
      out[(long) b * p->cout + o] = gpunet_activate (acc + (p->bias ? p->bias[o] : 0.0f), p->act);
    }
  }
}

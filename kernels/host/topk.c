/* topk.c: softmax over a logit vector and selection of the k best classes. */
#include <math.h>

#include "gpunet-types.h"

void
gpunet_topk_softmax (const float *logits, int n, int k, gpunet_class_score *out)
{
  if (k > n)
    k = n;
  if (k <= 0 || n <= 0)
    return;
  float max = logits[0];
  for (int i = 1; i < n; i++)
    if (logits[i] > max)
      max = logits[i];
  double sum = 0.0;
  for (int i = 0; i < n; i++)
    sum += exp ((double) logits[i] - max);
  /* insertion into a sorted list of k: strictly greater wins, so equal scores keep
   * the lower id first */
  int filled = 0;
  for (int i = 0; i < n; i++) {
    const float v = logits[i];
    if (filled == k && !(v > logits[out[k - 1].id]))
      continue;
    int pos = filled < k ? filled++ : k - 1;
    while (pos > 0 && v > logits[out[pos - 1].id]) {
      out[pos] = out[pos - 1];
      pos--;
    }
    out[pos].id = i;
  }
  for (int j = 0; j < k; j++)
    out[j].score = (float) (exp ((double) logits[out[j].id] - max) / sum);
}

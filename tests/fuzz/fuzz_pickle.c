/* fuzz_pickle.c: the restricted pickle reader (models/pickle.c) over arbitrary bytes,
 * then a walk of the value tree it builds (every string, item and tensor shape). */
#include "fuzz_common.h"

#include "pickle.h"

static void
walk (const gpunet_pickle_value *v, int depth)
{
  volatile size_t sink = 0;
  size_t i, n;

  if (v == NULL || depth > 10000)
    return;
  (void) gpunet_pickle_type_name (v->type);
  if (v->s != NULL)
    sink += strlen (v->s) + v->len;
  if (v->type == GPUNET_PICKLE_TENSOR && v->dims != NULL)
    for (i = 0; i < (size_t) v->ndim * 2; i++)
      sink += (size_t) v->dims[i];
  n = v->type == GPUNET_PICKLE_DICT ? v->n * 2 : v->n;
  if (v->items != NULL)
    for (i = 0; i < n; i++)
      walk (v->items[i], depth + 1);
  if (v->type == GPUNET_PICKLE_DICT) {
    (void) gpunet_pickle_dict_get (v, "state_dict");
    (void) gpunet_pickle_dict_get (v, "state_dict_ema");
  }
  if (v->type == GPUNET_PICKLE_TENSOR)
    walk (v->storage, depth + 1);
  (void) sink;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  gpunet_pickle *p = NULL;
  const gpunet_pickle_value *root = NULL;
  char *err = NULL;

  if (gpunet_pickle_parse (data, size, &p, &root, &err) == GPUNET_OK)
    walk (root, 0);
  fuzz_drop_error (&err);
  gpunet_pickle_free (p);
  return 0;
}

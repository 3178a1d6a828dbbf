/* pickle.h: a restricted pickle reader for torch.save's data.pkl.  It never executes
 * anything: it builds a value tree, interprets a whitelist of constructors itself
 * (OrderedDict, torch tensor/parameter rebuilders, torch storage classes) and turns
 * every other class or call into an inert "object" value.  Sizes are bounded. */
#ifndef GPUNET_PICKLE_H
#define GPUNET_PICKLE_H

#include <stddef.h>
#include <stdint.h>

#include "tensor.h"
#include "gpunet.h"

typedef enum {
  GPUNET_PICKLE_NONE, GPUNET_PICKLE_BOOL, GPUNET_PICKLE_INT, GPUNET_PICKLE_FLOAT,
  GPUNET_PICKLE_STR, GPUNET_PICKLE_BYTES, GPUNET_PICKLE_TUPLE, GPUNET_PICKLE_LIST,
  GPUNET_PICKLE_DICT, GPUNET_PICKLE_SET,
  GPUNET_PICKLE_GLOBAL,   /* a class or function named by GLOBAL (not called) */
  GPUNET_PICKLE_OBJECT,   /* the inert result of calling a non-whitelisted global */
  GPUNET_PICKLE_STORAGE,  /* a torch storage persistent id */
  GPUNET_PICKLE_TENSOR    /* the result of torch._utils._rebuild_tensor(_v2) */
} gpunet_pickle_type;

typedef struct gpunet_pickle_value gpunet_pickle_value;
struct gpunet_pickle_value {
  gpunet_pickle_type type;
  int64_t i;                    /* BOOL, INT; STORAGE: numel; TENSOR: storage offset */
  double f;                     /* FLOAT */
  char *s;                      /* STR, BYTES (NUL-terminated too), GLOBAL/OBJECT: "module.name",
                                   STORAGE: key */
  size_t len;                   /* length of s */
  gpunet_pickle_value **items;  /* TUPLE, LIST, SET; DICT: key0, value0, key1, ... */
  size_t n, cap;                /* number of items (DICT: of pairs) */
  int kind;                     /* GLOBAL: internal constructor id; STORAGE: gpunet_dtype,
                                   or -1 for an unsupported storage class */
  int ndim;                     /* TENSOR */
  int64_t *dims;                /* TENSOR: shape[ndim] then stride[ndim] */
  gpunet_pickle_value *storage; /* TENSOR: the storage argument (maybe not a STORAGE) */
};

typedef struct gpunet_pickle gpunet_pickle;

/* Parses a pickle.  On success *out owns every value and *root is the unpickled object.
 * Errors are sentences giving the byte position (callers prefix the file name). */
gpunet_status gpunet_pickle_parse (const uint8_t *data, size_t size, gpunet_pickle **out,
    const gpunet_pickle_value **root, char **error_text);
void gpunet_pickle_free (gpunet_pickle *pickle);

/* The value stored under a string key of a DICT (the last one if repeated), or NULL. */
const gpunet_pickle_value *gpunet_pickle_dict_get (const gpunet_pickle_value *dict,
    const char *key);

/* A short description of a value's type ("dict", "str", "object of type argparse.Namespace"
 * is built by callers from `s`). */
const char *gpunet_pickle_type_name (gpunet_pickle_type type);

#endif

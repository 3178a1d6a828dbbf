/* pickle.c: the restricted unpickler of pickle.h.  A small stack machine over the
 * protocol 0-5 opcodes that torch.save (and Python) emit; calls are interpreted only
 * for a whitelist of known constructors, everything else becomes an inert object.
 * Every value is recorded in one list so freeing never recurses (cycles are harmless). */
#include "pickle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

#define MAX_STACK ((size_t) 1 << 20)
#define MAX_MARKS ((size_t) 1 << 16)
#define MAX_MEMO ((size_t) 1 << 23)
#define MAX_VALUES ((size_t) 1 << 24)

enum {
  G_OTHER = 0, G_ORDERED_DICT, G_REBUILD_TENSOR, G_REBUILD_TENSOR_V2,
  G_REBUILD_PARAMETER, G_REBUILD_FROM_TYPE_V2, G_STORAGE
};

struct gpunet_pickle {
  gpunet_pickle_value **all;
  size_t n_all, cap_all;
};

typedef gpunet_pickle_value value;

typedef struct {
  gpunet_pickle *pk;
  const uint8_t *d;
  size_t size, pos, op_pos;
  value **stack;
  size_t sp, stack_cap;
  size_t *marks;
  size_t n_marks, marks_cap;
  value **memo;
  size_t memo_len, memo_count;
  char **error_text;
} parser;

static gpunet_status
perr (parser *p, const char *what)
{
  return gpunet_fail (p->error_text, GPUNET_ERR_FORMAT, "corrupt pickle: %s at byte %zu",
      what, p->op_pos);
}

static gpunet_status
oom (parser *p)
{
  return gpunet_fail (p->error_text, GPUNET_ERR_NO_MEMORY, "out of memory reading the pickle");
}

/* Grows *arr (of element size `elem`) so that it holds at least `need` elements. */
static int
grow (void **arr, size_t *cap, size_t need, size_t elem)
{
  if (need <= *cap)
    return 1;
  size_t nc = *cap ? *cap : 8;
  while (nc < need)
    nc *= 2;
  if (nc > SIZE_MAX / elem)
    return 0;
  void *n = realloc (*arr, nc * elem);
  if (!n)
    return 0;
  *arr = n;
  *cap = nc;
  return 1;
}

static value *
newv (parser *p, gpunet_pickle_type type)
{
  gpunet_pickle *pk = p->pk;
  if (pk->n_all >= MAX_VALUES) {
    perr (p, "too many values");
    return NULL;
  }
  if (!grow ((void **) &pk->all, &pk->cap_all, pk->n_all + 1, sizeof *pk->all)) {
    oom (p);
    return NULL;
  }
  value *v = calloc (1, sizeof *v);
  if (!v) {
    oom (p);
    return NULL;
  }
  v->type = type;
  pk->all[pk->n_all++] = v;
  return v;
}

static value *
new_string (parser *p, gpunet_pickle_type type, const uint8_t *s, size_t len)
{
  value *v = newv (p, type);
  if (!v)
    return NULL;
  v->s = malloc (len + 1);
  if (!v->s) {
    oom (p);
    return NULL;
  }
  if (len)
    memcpy (v->s, s, len);
  v->s[len] = 0;
  v->len = len;
  return v;
}

/* Appends one element to a LIST/TUPLE/SET. */
static int
append (parser *p, value *c, value *item)
{
  if (!grow ((void **) &c->items, &c->cap, c->n + 1, sizeof *c->items)) {
    oom (p);
    return 0;
  }
  c->items[c->n++] = item;
  return 1;
}

/* Adds a key/value pair to a DICT (kept in order; lookups take the last). */
static int
set_item (parser *p, value *d, value *k, value *v)
{
  if (!grow ((void **) &d->items, &d->cap, d->n * 2 + 2, sizeof *d->items)) {
    oom (p);
    return 0;
  }
  d->items[d->n * 2] = k;
  d->items[d->n * 2 + 1] = v;
  d->n++;
  return 1;
}

static int
push (parser *p, value *v)
{
  if (!v)
    return 0;
  if (p->sp >= MAX_STACK) {
    perr (p, "stack too deep");
    return 0;
  }
  if (!grow ((void **) &p->stack, &p->stack_cap, p->sp + 1, sizeof *p->stack)) {
    oom (p);
    return 0;
  }
  p->stack[p->sp++] = v;
  return 1;
}

static size_t
frame_base (const parser *p)
{
  return p->n_marks ? p->marks[p->n_marks - 1] : 0;
}

static value *
pop (parser *p)
{
  if (p->sp <= frame_base (p)) {
    perr (p, "stack underflow");
    return NULL;
  }
  return p->stack[--p->sp];
}

static value *
top (parser *p)
{
  if (p->sp <= frame_base (p)) {
    perr (p, "stack underflow");
    return NULL;
  }
  return p->stack[p->sp - 1];
}

/* Removes everything above the last MARK; *items points at it (valid until the next push),
 * NULL when the stack was never used (n is then 0: "(t" is an empty tuple). */
static int
pop_mark (parser *p, value ***items, size_t *n)
{
  if (!p->n_marks) {
    perr (p, "MARK missing");
    return 0;
  }
  size_t k = p->marks[--p->n_marks];
  *items = p->stack ? p->stack + k : NULL;   /* no pointer arithmetic on NULL */
  *n = p->sp - k;
  p->sp = k;
  return 1;
}

static int
need (parser *p, size_t n)
{
  if (p->size - p->pos < n) {
    gpunet_fail (p->error_text, GPUNET_ERR_FORMAT,
        "truncated pickle: the opcode at byte %zu needs %zu more bytes but only %zu remain",
        p->op_pos, n, p->size - p->pos);
    return 0;
  }
  return 1;
}

static uint64_t
read_le (parser *p, int n)
{
  uint64_t v = 0;
  for (int i = 0; i < n; i++)
    v |= (uint64_t) p->d[p->pos + i] << (8 * i);
  p->pos += n;
  return v;
}

/* A newline-terminated text argument; *len excludes the newline. */
static const uint8_t *
read_line (parser *p, size_t *len)
{
  const uint8_t *s = p->d + p->pos;
  const uint8_t *nl = memchr (s, '\n', p->size - p->pos);
  if (!nl) {
    gpunet_fail (p->error_text, GPUNET_ERR_FORMAT,
        "truncated pickle: unterminated text argument at byte %zu", p->op_pos);
    return NULL;
  }
  *len = (size_t) (nl - s);
  p->pos += *len + 1;
  return s;
}

static value *
new_int (parser *p, int64_t i)
{
  value *v = newv (p, GPUNET_PICKLE_INT);
  if (v)
    v->i = i;
  return v;
}

/* LONG1/LONG4: n little-endian two's complement bytes. */
static value *
new_long (parser *p, const uint8_t *b, size_t n)
{
  if (n == 0)
    return new_int (p, 0);
  int neg = (b[n - 1] & 0x80) != 0;
  for (size_t i = 8; i < n; i++) {
    if (b[i] != (neg ? 0xff : 0x00)) {
      value *v = new_string (p, GPUNET_PICKLE_OBJECT, (const uint8_t *) "builtins.int", 12);
      return v;   /* an integer too large for 64 bits: kept as an inert value */
    }
  }
  if (n >= 8 && ((b[7] & 0x80) != 0) != neg)
    return new_string (p, GPUNET_PICKLE_OBJECT, (const uint8_t *) "builtins.int", 12);
  uint64_t u = neg ? ~(uint64_t) 0 : 0;
  for (size_t i = 0; i < n && i < 8; i++) {
    u &= ~((uint64_t) 0xff << (8 * i));
    u |= (uint64_t) b[i] << (8 * i);
  }
  int64_t s;
  memcpy (&s, &u, sizeof s);
  return new_int (p, s);
}

/* Parses a decimal integer line (protocol 0 INT/LONG/GET/PUT arguments). */
static int
parse_decimal (const uint8_t *s, size_t len, int64_t *out)
{
  size_t i = 0;
  int neg = 0;
  if (i < len && (s[i] == '-' || s[i] == '+'))
    neg = s[i++] == '-';
  if (len && s[len - 1] == 'L')
    len--;
  if (i >= len)
    return 0;
  uint64_t v = 0;
  for (; i < len; i++) {
    if (s[i] < '0' || s[i] > '9' || v > (UINT64_MAX - 9) / 10)
      return 0;
    v = v * 10 + (uint64_t) (s[i] - '0');
  }
  if (v > (uint64_t) INT64_MAX)
    return 0;
  *out = neg ? -(int64_t) v : (int64_t) v;
  return 1;
}

static const struct { const char *name; gpunet_dtype dtype; } storage_classes[] = {
  { "FloatStorage", GPUNET_DTYPE_F32 }, { "HalfStorage", GPUNET_DTYPE_F16 },
  { "BFloat16Storage", GPUNET_DTYPE_BF16 }, { "DoubleStorage", GPUNET_DTYPE_F64 },
  { "LongStorage", GPUNET_DTYPE_I64 }, { "IntStorage", GPUNET_DTYPE_I32 },
  { "ShortStorage", GPUNET_DTYPE_I16 }, { "CharStorage", GPUNET_DTYPE_I8 },
  { "ByteStorage", GPUNET_DTYPE_U8 }, { "BoolStorage", GPUNET_DTYPE_BOOL },
  { "UntypedStorage", GPUNET_DTYPE_U8 },
};

static value *
new_global (parser *p, const uint8_t *mod, size_t mlen, const uint8_t *name, size_t nlen)
{
  if (mlen > 4096 || nlen > 4096) {
    perr (p, "class name too long");
    return NULL;
  }
  char buf[8194];
  memcpy (buf, mod, mlen);
  buf[mlen] = '.';
  memcpy (buf + mlen + 1, name, nlen);
  buf[mlen + 1 + nlen] = 0;
  value *v = new_string (p, GPUNET_PICKLE_GLOBAL, (const uint8_t *) buf, mlen + 1 + nlen);
  if (!v)
    return NULL;
  if (strcmp (buf, "collections.OrderedDict") == 0)
    v->kind = G_ORDERED_DICT;
  else if (strcmp (buf, "torch._utils._rebuild_tensor_v2") == 0)
    v->kind = G_REBUILD_TENSOR_V2;
  else if (strcmp (buf, "torch._utils._rebuild_tensor") == 0)
    v->kind = G_REBUILD_TENSOR;
  else if (strcmp (buf, "torch._utils._rebuild_parameter") == 0
      || strcmp (buf, "torch._utils._rebuild_parameter_with_state") == 0)
    v->kind = G_REBUILD_PARAMETER;
  else if (strcmp (buf, "torch._tensor._rebuild_from_type_v2") == 0)
    v->kind = G_REBUILD_FROM_TYPE_V2;
  else if ((mlen == 5 && memcmp (mod, "torch", 5) == 0)
      || (mlen == 10 && memcmp (mod, "torch.cuda", 10) == 0)) {
    for (size_t i = 0; i < sizeof storage_classes / sizeof storage_classes[0]; i++)
      if (strcmp (buf + mlen + 1, storage_classes[i].name) == 0) {
        v->kind = G_STORAGE;
        v->i = storage_classes[i].dtype;
      }
  }
  return v;
}

static int
is_int (const value *v)
{
  return v && v->type == GPUNET_PICKLE_INT;
}

/* torch._utils._rebuild_tensor(_v2)(storage, offset, size, stride, ...). */
static value *
rebuild_tensor (parser *p, const value *fn, const value *args)
{
  if (args->type != GPUNET_PICKLE_TUPLE || args->n < 4 || !is_int (args->items[1])
      || args->items[2]->type != GPUNET_PICKLE_TUPLE || args->items[3]->type != GPUNET_PICKLE_TUPLE
      || args->items[2]->n != args->items[3]->n) {
    gpunet_fail (p->error_text, GPUNET_ERR_FORMAT,
        "corrupt pickle: malformed arguments to %s at byte %zu", fn->s, p->op_pos);
    return NULL;
  }
  const value *size = args->items[2], *stride = args->items[3];
  if (size->n > GPUNET_MAX_DIMS) {
    gpunet_fail (p->error_text, GPUNET_ERR_FORMAT,
        "unsupported tensor with %zu dimensions (at most %d) at byte %zu", size->n,
        GPUNET_MAX_DIMS, p->op_pos);
    return NULL;
  }
  value *t = newv (p, GPUNET_PICKLE_TENSOR);
  if (!t)
    return NULL;
  t->storage = args->items[0];
  t->i = args->items[1]->i;
  t->ndim = (int) size->n;
  t->dims = malloc (sizeof *t->dims * (2 * size->n + 1));
  if (!t->dims) {
    oom (p);
    return NULL;
  }
  for (size_t k = 0; k < size->n; k++) {
    if (!is_int (size->items[k]) || !is_int (stride->items[k])) {
      gpunet_fail (p->error_text, GPUNET_ERR_FORMAT,
          "corrupt pickle: non-integer tensor size or stride in the call to %s at byte %zu",
          fn->s, p->op_pos);
      return NULL;
    }
    t->dims[k] = size->items[k]->i;
    t->dims[size->n + k] = stride->items[k]->i;
  }
  return t;
}

static value *
inert_object (parser *p, const value *cls)
{
  const char *name = cls->s ? cls->s : gpunet_pickle_type_name (cls->type);
  return new_string (p, GPUNET_PICKLE_OBJECT, (const uint8_t *) name, strlen (name));
}

/* REDUCE: whitelisted globals are interpreted, anything else yields an inert object. */
static value *
call (parser *p, value *fn, value *args, int depth)
{
  if (fn->type == GPUNET_PICKLE_OBJECT)
    return inert_object (p, fn);
  if (fn->type != GPUNET_PICKLE_GLOBAL) {
    char what[64];
    snprintf (what, sizeof what, "call of a %s value", gpunet_pickle_type_name (fn->type));
    perr (p, what);
    return NULL;
  }
  if (args->type != GPUNET_PICKLE_TUPLE) {
    perr (p, "call arguments are not a tuple");
    return NULL;
  }
  switch (fn->kind) {
    case G_ORDERED_DICT: {
      value *d = newv (p, GPUNET_PICKLE_DICT);
      if (d && args->n >= 1 && args->items[0]->type == GPUNET_PICKLE_LIST) {
        const value *l = args->items[0];
        for (size_t i = 0; i < l->n; i++) {
          const value *kv = l->items[i];
          if (kv->type == GPUNET_PICKLE_TUPLE && kv->n == 2 && !set_item (p, d, kv->items[0], kv->items[1]))
            return NULL;
        }
      }
      return d;
    }
    case G_REBUILD_TENSOR:
    case G_REBUILD_TENSOR_V2:
      return rebuild_tensor (p, fn, args);
    case G_REBUILD_PARAMETER:
      if (args->n >= 1 && args->items[0]->type == GPUNET_PICKLE_TENSOR)
        return args->items[0];
      return inert_object (p, fn);
    case G_REBUILD_FROM_TYPE_V2:
      if (depth == 0 && args->n >= 3 && args->items[0]->type == GPUNET_PICKLE_GLOBAL)
        return call (p, args->items[0], args->items[2], 1);
      return inert_object (p, fn);
    default:
      return inert_object (p, fn);
  }
}

/* BINPERSID: torch's ('storage', storage_class, key, location, numel). */
static value *
persistent_load (parser *p, const value *pid)
{
  if (pid->type != GPUNET_PICKLE_TUPLE || pid->n < 5 || pid->items[0]->type != GPUNET_PICKLE_STR
      || strcmp (pid->items[0]->s, "storage") != 0 || pid->items[2]->type != GPUNET_PICKLE_STR
      || !is_int (pid->items[4])) {
    perr (p, "unsupported persistent id (not a torch storage reference)");
    return NULL;
  }
  const value *cls = pid->items[1];
  value *st = new_string (p, GPUNET_PICKLE_STORAGE, (const uint8_t *) pid->items[2]->s,
      pid->items[2]->len);
  if (!st)
    return NULL;
  st->i = pid->items[4]->i;
  st->kind = cls->type == GPUNET_PICKLE_GLOBAL && cls->kind == G_STORAGE ? (int) cls->i : -1;
  if (!append (p, st, (value *) cls))
    return NULL;
  return st;
}

static int
memo_put (parser *p, uint64_t idx)
{
  value *v = top (p);
  if (!v)
    return 0;
  if (idx >= MAX_MEMO) {
    perr (p, "memo index too large");
    return 0;
  }
  if (idx >= p->memo_len) {
    size_t nl = p->memo_len ? p->memo_len : 64;
    while (nl <= idx)
      nl *= 2;
    value **m = realloc (p->memo, nl * sizeof *m);
    if (!m) {
      oom (p);
      return 0;
    }
    memset (m + p->memo_len, 0, (nl - p->memo_len) * sizeof *m);
    p->memo = m;
    p->memo_len = nl;
  }
  if (!p->memo[idx])
    p->memo_count++;
  p->memo[idx] = v;
  return 1;
}

static int
memo_get (parser *p, uint64_t idx)
{
  if (idx >= p->memo_len || !p->memo[idx]) {
    perr (p, "reference to a missing memo entry");
    return 0;
  }
  return push (p, p->memo[idx]);
}

static int
push_string (parser *p, gpunet_pickle_type type, uint64_t len)
{
  if (len > (uint64_t) (p->size - p->pos)) {
    gpunet_fail (p->error_text, GPUNET_ERR_FORMAT,
        "truncated pickle: a string of %llu bytes at byte %zu runs past the end (%zu bytes left)",
        (unsigned long long) len, p->op_pos, p->size - p->pos);
    return 0;
  }
  value *v = new_string (p, type, p->d + p->pos, (size_t) len);
  p->pos += (size_t) len;
  return push (p, v);
}

static int
make_tuple (parser *p, value **items, size_t n)
{
  value *t = newv (p, GPUNET_PICKLE_TUPLE);
  if (!t)
    return 0;
  value *copy[3];
  if (n && n <= 3) {   /* items may point into the stack, which push can move (and may be
                        * NULL when n is 0: no memcpy from it) */
    memcpy (copy, items, n * sizeof *items);
    items = copy;
  }
  for (size_t i = 0; i < n; i++)
    if (!append (p, t, items[i]))
      return 0;
  return push (p, t);
}

static gpunet_status
run (parser *p, const value **root)
{
  for (;;) {
    p->op_pos = p->pos;
    if (p->pos >= p->size)
      return gpunet_fail (p->error_text, GPUNET_ERR_FORMAT,
          "truncated pickle: it ends at byte %zu without a STOP opcode", p->pos);
    uint8_t op = p->d[p->pos++];
    int ok = 1;
    value *a, *b, *c, **items;
    size_t n, len;
    const uint8_t *s, *s2;
    int64_t iv;
    switch (op) {
      case 0x80:   /* PROTO */
        if (!need (p, 1))
          return GPUNET_ERR_FORMAT;
        if (p->d[p->pos++] > 5)
          return perr (p, "unsupported pickle protocol");
        break;
      case 0x95:   /* FRAME: framing is only a hint for buffered readers */
        if (!need (p, 8))
          return GPUNET_ERR_FORMAT;
        p->pos += 8;
        break;
      case '.':    /* STOP */
        if (!(a = pop (p)))
          return GPUNET_ERR_FORMAT;
        *root = a;
        return GPUNET_OK;
      case '(':    /* MARK */
        if (p->n_marks >= MAX_MARKS)
          return perr (p, "too many nested MARKs");
        if (!grow ((void **) &p->marks, &p->marks_cap, p->n_marks + 1, sizeof *p->marks))
          return oom (p);
        p->marks[p->n_marks++] = p->sp;
        break;
      case '0':    /* POP */
        if (p->sp > frame_base (p))
          p->sp--;
        else if (p->n_marks)
          p->n_marks--;
        else
          return perr (p, "stack underflow");
        break;
      case '1':    /* POP_MARK */
        ok = pop_mark (p, &items, &n);
        break;
      case '2':    /* DUP */
        ok = (a = top (p)) && push (p, a);
        break;
      case 'N':
        ok = push (p, newv (p, GPUNET_PICKLE_NONE));
        break;
      case 0x88:   /* NEWTRUE */
      case 0x89:   /* NEWFALSE */
        if ((a = newv (p, GPUNET_PICKLE_BOOL)))
          a->i = op == 0x88;
        ok = push (p, a);
        break;
      case 'J':    /* BININT */
        if (!need (p, 4))
          return GPUNET_ERR_FORMAT;
        ok = push (p, new_int (p, (int32_t) (uint32_t) read_le (p, 4)));
        break;
      case 'K':    /* BININT1 */
        if (!need (p, 1))
          return GPUNET_ERR_FORMAT;
        ok = push (p, new_int (p, (int64_t) read_le (p, 1)));
        break;
      case 'M':    /* BININT2 */
        if (!need (p, 2))
          return GPUNET_ERR_FORMAT;
        ok = push (p, new_int (p, (int64_t) read_le (p, 2)));
        break;
      case 0x8a:   /* LONG1 */
      case 0x8b:   /* LONG4 */
        if (!need (p, op == 0x8a ? 1 : 4))
          return GPUNET_ERR_FORMAT;
        {
          uint64_t l = read_le (p, op == 0x8a ? 1 : 4);
          if (l > 0x7fffffff)
            return perr (p, "negative LONG4 length");
          if (!need (p, (size_t) l))
            return GPUNET_ERR_FORMAT;
          ok = push (p, new_long (p, p->d + p->pos, (size_t) l));
          p->pos += (size_t) l;
        }
        break;
      case 'I':    /* INT (text) */
      case 'L':    /* LONG (text) */
        if (!(s = read_line (p, &len)))
          return GPUNET_ERR_FORMAT;
        if (op == 'I' && len == 2 && s[0] == '0' && (s[1] == '0' || s[1] == '1')) {
          if ((a = newv (p, GPUNET_PICKLE_BOOL)))
            a->i = s[1] == '1';
          ok = push (p, a);
        } else if (parse_decimal (s, len, &iv))
          ok = push (p, new_int (p, iv));
        else
          return perr (p, "malformed integer");
        break;
      case 'G':    /* BINFLOAT: big-endian IEEE double */
        if (!need (p, 8))
          return GPUNET_ERR_FORMAT;
        {
          uint64_t u = 0;
          for (int i = 0; i < 8; i++)
            u = (u << 8) | p->d[p->pos + i];
          p->pos += 8;
          if ((a = newv (p, GPUNET_PICKLE_FLOAT)))
            memcpy (&a->f, &u, sizeof a->f);
          ok = push (p, a);
        }
        break;
      case 'F':    /* FLOAT (text) */
        if (!(s = read_line (p, &len)))
          return GPUNET_ERR_FORMAT;
        {
          char buf[64];
          if (len >= sizeof buf)
            return perr (p, "malformed float");
          memcpy (buf, s, len);
          buf[len] = 0;
          if ((a = newv (p, GPUNET_PICKLE_FLOAT)))
            a->f = strtod (buf, NULL);
          ok = push (p, a);
        }
        break;
      case 0x8c:   /* SHORT_BINUNICODE */
      case 'U':    /* SHORT_BINSTRING */
      case 'C':    /* SHORT_BINBYTES */
        if (!need (p, 1))
          return GPUNET_ERR_FORMAT;
        ok = push_string (p, op == 'C' ? GPUNET_PICKLE_BYTES : GPUNET_PICKLE_STR, read_le (p, 1));
        break;
      case 'X':    /* BINUNICODE */
      case 'B':    /* BINBYTES */
        if (!need (p, 4))
          return GPUNET_ERR_FORMAT;
        ok = push_string (p, op == 'B' ? GPUNET_PICKLE_BYTES : GPUNET_PICKLE_STR, read_le (p, 4));
        break;
      case 'T':    /* BINSTRING: signed 32-bit length */
        if (!need (p, 4))
          return GPUNET_ERR_FORMAT;
        {
          uint64_t l = read_le (p, 4);
          if (l > 0x7fffffff)
            return perr (p, "negative BINSTRING length");
          ok = push_string (p, GPUNET_PICKLE_STR, l);
        }
        break;
      case 0x8d:   /* BINUNICODE8 */
      case 0x8e:   /* BINBYTES8 */
      case 0x96:   /* BYTEARRAY8 */
        if (!need (p, 8))
          return GPUNET_ERR_FORMAT;
        ok = push_string (p, op == 0x8d ? GPUNET_PICKLE_STR : GPUNET_PICKLE_BYTES, read_le (p, 8));
        break;
      case 'V':    /* UNICODE (text, raw-unicode-escape: kept as is) */
        if (!(s = read_line (p, &len)))
          return GPUNET_ERR_FORMAT;
        ok = push (p, new_string (p, GPUNET_PICKLE_STR, s, len));
        break;
      case '}':
        ok = push (p, newv (p, GPUNET_PICKLE_DICT));
        break;
      case ']':
        ok = push (p, newv (p, GPUNET_PICKLE_LIST));
        break;
      case ')':
        ok = push (p, newv (p, GPUNET_PICKLE_TUPLE));
        break;
      case 0x8f:   /* EMPTY_SET */
        ok = push (p, newv (p, GPUNET_PICKLE_SET));
        break;
      case 't':    /* TUPLE */
        if (!pop_mark (p, &items, &n))
          return GPUNET_ERR_FORMAT;
        ok = make_tuple (p, items, n);
        break;
      case 0x85:   /* TUPLE1 */
      case 0x86:   /* TUPLE2 */
      case 0x87:   /* TUPLE3 */
        n = (size_t) (op - 0x84);
        if (p->sp - frame_base (p) < n)
          return perr (p, "stack underflow");
        p->sp -= n;
        ok = make_tuple (p, p->stack + p->sp, n);
        break;
      case 'l':    /* LIST */
      case 0x91:   /* FROZENSET */
        if (!pop_mark (p, &items, &n))
          return GPUNET_ERR_FORMAT;
        if (!(a = newv (p, op == 'l' ? GPUNET_PICKLE_LIST : GPUNET_PICKLE_SET)))
          return GPUNET_ERR_FORMAT;
        for (size_t i = 0; i < n && ok; i++)
          ok = append (p, a, items[i]);
        ok = ok && push (p, a);
        break;
      case 'd':    /* DICT */
        if (!pop_mark (p, &items, &n))
          return GPUNET_ERR_FORMAT;
        if (n % 2)
          return perr (p, "odd number of items for DICT");
        if (!(a = newv (p, GPUNET_PICKLE_DICT)))
          return GPUNET_ERR_FORMAT;
        for (size_t i = 0; i + 1 < n && ok; i += 2)
          ok = set_item (p, a, items[i], items[i + 1]);
        ok = ok && push (p, a);
        break;
      case 'a':    /* APPEND */
        if (!(b = pop (p)) || !(a = top (p)))
          return GPUNET_ERR_FORMAT;
        if (a->type == GPUNET_PICKLE_LIST)
          ok = append (p, a, b);
        else if (a->type != GPUNET_PICKLE_OBJECT)
          return perr (p, "APPEND to a value that is not a list");
        break;
      case 'e':    /* APPENDS */
      case 0x90:   /* ADDITEMS */
        if (!pop_mark (p, &items, &n) || !(a = top (p)))
          return GPUNET_ERR_FORMAT;
        if (a->type == (op == 'e' ? GPUNET_PICKLE_LIST : GPUNET_PICKLE_SET))
          for (size_t i = 0; i < n && ok; i++)
            ok = append (p, a, items[i]);
        else if (a->type != GPUNET_PICKLE_OBJECT)
          return perr (p, op == 'e' ? "APPENDS to a value that is not a list"
              : "ADDITEMS to a value that is not a set");
        break;
      case 's':    /* SETITEM */
        if (!(c = pop (p)) || !(b = pop (p)) || !(a = top (p)))
          return GPUNET_ERR_FORMAT;
        if (a->type == GPUNET_PICKLE_DICT)
          ok = set_item (p, a, b, c);
        else if (a->type != GPUNET_PICKLE_OBJECT)
          return perr (p, "SETITEM on a value that is not a dict");
        break;
      case 'u':    /* SETITEMS */
        if (!pop_mark (p, &items, &n) || !(a = top (p)))
          return GPUNET_ERR_FORMAT;
        if (n % 2)
          return perr (p, "odd number of items for SETITEMS");
        if (a->type == GPUNET_PICKLE_DICT)
          for (size_t i = 0; i + 1 < n && ok; i += 2)
            ok = set_item (p, a, items[i], items[i + 1]);
        else if (a->type != GPUNET_PICKLE_OBJECT)
          return perr (p, "SETITEMS on a value that is not a dict");
        break;
      case 'q':    /* BINPUT */
        if (!need (p, 1))
          return GPUNET_ERR_FORMAT;
        ok = memo_put (p, read_le (p, 1));
        break;
      case 'r':    /* LONG_BINPUT */
        if (!need (p, 4))
          return GPUNET_ERR_FORMAT;
        ok = memo_put (p, read_le (p, 4));
        break;
      case 0x94:   /* MEMOIZE */
        ok = memo_put (p, p->memo_count);
        break;
      case 'p':    /* PUT (text) */
      case 'g':    /* GET (text) */
        if (!(s = read_line (p, &len)))
          return GPUNET_ERR_FORMAT;
        if (!parse_decimal (s, len, &iv) || iv < 0)
          return perr (p, "malformed memo index");
        ok = op == 'p' ? memo_put (p, (uint64_t) iv) : memo_get (p, (uint64_t) iv);
        break;
      case 'h':    /* BINGET */
        if (!need (p, 1))
          return GPUNET_ERR_FORMAT;
        ok = memo_get (p, read_le (p, 1));
        break;
      case 'j':    /* LONG_BINGET */
        if (!need (p, 4))
          return GPUNET_ERR_FORMAT;
        ok = memo_get (p, read_le (p, 4));
        break;
      case 'c':    /* GLOBAL "module\nname\n" */
        if (!(s = read_line (p, &len)) || !(s2 = read_line (p, &n)))
          return GPUNET_ERR_FORMAT;
        ok = push (p, new_global (p, s, len, s2, n));
        break;
      case 0x93:   /* STACK_GLOBAL */
        if (!(b = pop (p)) || !(a = pop (p)))
          return GPUNET_ERR_FORMAT;
        if (a->type != GPUNET_PICKLE_STR || b->type != GPUNET_PICKLE_STR)
          return perr (p, "STACK_GLOBAL needs two strings");
        ok = push (p, new_global (p, (const uint8_t *) a->s, a->len, (const uint8_t *) b->s, b->len));
        break;
      case 'R':    /* REDUCE */
        if (!(b = pop (p)) || !(a = pop (p)))
          return GPUNET_ERR_FORMAT;
        ok = push (p, call (p, a, b, 0));
        break;
      case 0x81:   /* NEWOBJ: cls.__new__(cls, *args) */
      case 0x92:   /* NEWOBJ_EX */
        if (op == 0x92 && !pop (p))
          return GPUNET_ERR_FORMAT;
        if (!(b = pop (p)) || !(a = pop (p)))
          return GPUNET_ERR_FORMAT;
        if (a->type == GPUNET_PICKLE_GLOBAL && a->kind == G_ORDERED_DICT)
          ok = push (p, newv (p, GPUNET_PICKLE_DICT));
        else if (a->type == GPUNET_PICKLE_GLOBAL || a->type == GPUNET_PICKLE_OBJECT)
          ok = push (p, inert_object (p, a));
        else
          return perr (p, "NEWOBJ on a value that is not a class");
        break;
      case 'b':    /* BUILD: the state is dropped, objects stay inert */
        if (!pop (p) || !top (p))
          return GPUNET_ERR_FORMAT;
        break;
      case 'i':    /* INST "module\nname\n" with MARKed arguments */
        if (!(s = read_line (p, &len)) || !(s2 = read_line (p, &n)))
          return GPUNET_ERR_FORMAT;
        {
          size_t n_args;
          if (!pop_mark (p, &items, &n_args))
            return GPUNET_ERR_FORMAT;
        }
        if (!(a = new_global (p, s, len, s2, n)))
          return GPUNET_ERR_FORMAT;
        ok = push (p, inert_object (p, a));
        break;
      case 'o':    /* OBJ: MARK cls args... */
        if (!pop_mark (p, &items, &n))
          return GPUNET_ERR_FORMAT;
        if (n < 1)
          return perr (p, "OBJ without a class");
        ok = push (p, inert_object (p, items[0]));
        break;
      case 'Q':    /* BINPERSID */
        if (!(a = pop (p)))
          return GPUNET_ERR_FORMAT;
        ok = push (p, persistent_load (p, a));
        break;
      case 'P':    /* PERSID (text) */
        return perr (p, "unsupported text persistent id (not written by torch.save)");
      case 0x82: case 0x83: case 0x84:   /* EXT1/2/4 */
        return perr (p, "unsupported extension-registry opcode");
      case 0x97: case 0x98:   /* NEXT_BUFFER, READONLY_BUFFER */
        return perr (p, "unsupported out-of-band buffer");
      case 'S':    /* STRING (quoted text): never written by torch.save */
        return perr (p, "unsupported protocol 0 STRING opcode");
      default: {
        char what[64];
        snprintf (what, sizeof what, "unknown opcode 0x%02x", op);
        return perr (p, what);
      }
    }
    if (!ok)
      return p->error_text && *p->error_text ? GPUNET_ERR_FORMAT : perr (p, "invalid pickle");
  }
}

gpunet_status
gpunet_pickle_parse (const uint8_t *data, size_t size, gpunet_pickle **out,
    const gpunet_pickle_value **root, char **error_text)
{
  *out = NULL;
  *root = NULL;
  gpunet_pickle *pk = calloc (1, sizeof *pk);
  if (!pk)
    return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory");
  char *local_err = NULL;
  parser p = { 0 };
  p.pk = pk;
  p.d = data;
  p.size = size;
  p.error_text = &local_err;
  gpunet_status st = run (&p, root);
  free (p.stack);
  free (p.marks);
  free (p.memo);
  if (st != GPUNET_OK) {
    gpunet_pickle_free (pk);
    *root = NULL;
    if (error_text) {
      free (*error_text);
      *error_text = local_err;
    } else
      free (local_err);
    return st;
  }
  free (local_err);
  *out = pk;
  return GPUNET_OK;
}

void
gpunet_pickle_free (gpunet_pickle *pk)
{
  if (!pk)
    return;
  for (size_t i = 0; i < pk->n_all; i++) {
    free (pk->all[i]->s);
    free (pk->all[i]->items);
    free (pk->all[i]->dims);
    free (pk->all[i]);
  }
  free (pk->all);
  free (pk);
}

const gpunet_pickle_value *
gpunet_pickle_dict_get (const gpunet_pickle_value *dict, const char *key)
{
  if (!dict || dict->type != GPUNET_PICKLE_DICT)
    return NULL;
  for (size_t i = dict->n; i-- > 0;) {
    const value *k = dict->items[2 * i];
    if (k->type == GPUNET_PICKLE_STR && strcmp (k->s, key) == 0)
      return dict->items[2 * i + 1];
  }
  return NULL;
}

const char *
gpunet_pickle_type_name (gpunet_pickle_type type)
{
  switch (type) {
    case GPUNET_PICKLE_NONE: return "None";
    case GPUNET_PICKLE_BOOL: return "bool";
    case GPUNET_PICKLE_INT: return "int";
    case GPUNET_PICKLE_FLOAT: return "float";
    case GPUNET_PICKLE_STR: return "str";
    case GPUNET_PICKLE_BYTES: return "bytes";
    case GPUNET_PICKLE_TUPLE: return "tuple";
    case GPUNET_PICKLE_LIST: return "list";
    case GPUNET_PICKLE_DICT: return "dict";
    case GPUNET_PICKLE_SET: return "set";
    case GPUNET_PICKLE_GLOBAL: return "class";
    case GPUNET_PICKLE_OBJECT: return "object";
    case GPUNET_PICKLE_STORAGE: return "storage";
    case GPUNET_PICKLE_TENSOR: return "tensor";
  }
  return "value";
}

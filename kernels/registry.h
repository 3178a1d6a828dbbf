/* registry.h: the one list of compute backends: which exist, the name users write for
 * each (backend=cpu, --backend cpu-ref), and how each is found (the reference oracle and
 * the oneDNN backend are linked in; the CUDA backend is a module opened at run time by
 * cuda_loader.c).  The engine's session.c and the tools choose backends through it. */
#ifndef GPUNET_REGISTRY_H
#define GPUNET_REGISTRY_H

#include "backend.h"

typedef struct {
  gpunet_backend_kind kind;
  const char *name;      /* the name users write and gpunet_session_backend_name returns */
  const char *summary;   /* one line for --help texts and gst-inspect */
} gpunet_backend_entry;

/* The entries, every gpunet_backend_kind once, "auto" first; *n receives their count. */
const gpunet_backend_entry *gpunet_backend_entries (int *n);

/* The backend of `kind`, or NULL with a sentence: GPUNET_BACKEND_CUDA when this build or
 * this host has no CUDA backend, GPUNET_BACKEND_AUTO (a choice, not a backend: sessions
 * resolve it) and values outside the enum.  GPUNET_BACKEND_CPU is the oneDNN backend,
 * or in a build without oneDNN the reference oracle (whose name then says "cpu-ref"). */
const gpunet_backend *gpunet_backend_find (gpunet_backend_kind kind, char **error_text);

#endif

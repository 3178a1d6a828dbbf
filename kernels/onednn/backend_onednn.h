/* backend_onednn.h: the fast CPU backend: oneDNN convolutions with fused bias, activation
 * and residual, activations kept in the nChw16c / nChw8c blocked layout between layers,
 * and our own kernels (Winograd, depthwise, 1x1, squeeze-excite, classifier) where the CPU
 * runs them.  Built only when libdnnl (2.x API) is found; the reference backend stays the
 * oracle. */
#ifndef GPUNET_BACKEND_ONEDNN_H
#define GPUNET_BACKEND_ONEDNN_H

#include "backend.h"
#include "onednn_impl.h"

/* The fast CPU backend ("cpu").  A planned state is used from one thread at a time;
 * forward sets that thread's OpenMP thread count to n_threads for its duration only.
 * plan reads its choices from params->cpu (gpunet_cpu_options). */
extern const gpunet_backend gpunet_backend_cpu_fast;

/* Tests and benchmarks: what runs op `op` of a planned state (what
 * gpunet_backend_cpu_fast.plan gave); -1 for an op index out of range. */
int gpunet_onednn_op_impl (const void *state, int op);

/* 1 where the CPU has AMX-BF16 and oneDNN is not capped below it. */
int gpunet_onednn_amx_host (void);

/* 1 where oneDNN's bf16 convolutions on our blocked tensors run on AMX tiles: an AMX host
 * whose oneDNN picks an AMX kernel for them (asked once, of a 1x1 and a 3x3 convolution).
 * oneDNN 2.6 and 3.7 do not (their AMX convolutions take NHWC tensors).  Where it does, our
 * Winograd kernels leave the bf16 convolutions to it (option winograd=auto), measured
 * against its AVX-512 BF16 kernels only. */
int gpunet_onednn_bf16_amx (void);

/* 1 where the bf16pw=auto rule gives layers to our bf16 1x1 kernel (pwb_plan.c): with
 * oneDNN 2.x, not on an AMX host; tests check the rule with it. */
int gpunet_onednn_pwb_auto (void);

/* Tests: the CPU code paths (cpu_paths.h bits) our kernels in a planned state run: the
 * vector forms of the channel block (AVX-512 for 16, AVX2 for 8; the 1x1 AVX-512 only),
 * PORTABLE where the plain form of a kernel that has vector ones was planned instead.
 * oneDNN's primitives choose their own code (DNNL_MAX_CPU_ISA caps it) and add nothing. */
unsigned gpunet_onednn_cpu_paths (const void *state);

/* Benchmarks only: when op_seconds is non-NULL (one double per graph op, zeroed by the
 * caller), each later forward on `state` waits after every op and adds its wall time in
 * seconds there.  Pass NULL to stop. */
void gpunet_onednn_profile (void *state, double *op_seconds);

#endif

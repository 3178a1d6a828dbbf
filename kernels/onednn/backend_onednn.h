/* backend_onednn.h: the fast CPU backend: oneDNN convolutions with fused bias, activation
 * and residual, activations kept in the nChw16c blocked layout between layers, and our own
 * blocked kernels for squeeze-excite, pooling and the classifier.  Built only when
 * libdnnl (2.x API) is found; the reference backend stays the oracle. */
#ifndef GPUNET_BACKEND_ONEDNN_H
#define GPUNET_BACKEND_ONEDNN_H

#include "backend.h"

/* The fast CPU backend ("cpu-fast").  A planned state is used from one thread at a time;
 * forward sets that thread's OpenMP thread count to n_threads for its duration only. */
extern const gpunet_backend gpunet_backend_cpu_fast;

/* Benchmarks only: when op_seconds is non-NULL (one double per graph op, zeroed by the
 * caller), each later forward on `state` waits after every op and adds its wall time in
 * seconds there.  Pass NULL to stop.  `state` is what gpunet_backend_cpu_fast.plan gave. */
void gpunet_onednn_profile (void *state, double *op_seconds);

/* Tests and benchmarks: how many ops of the planned graph run in chains of Winograd ops
 * (gpunet_wino_run_chain), 0 when none do. */
int gpunet_onednn_chained_ops (const void *state);

/* Tests: the output tile of op `op`'s own Winograd convolution in the plan
 * (gpunet_wino_tile: 4 or 6), 0 when another kernel runs it. */
int gpunet_onednn_wino_tile (const void *state, int op);

/* Tests: how many ops of the plan run our Winograd convolutions, 0 when none do. */
int gpunet_onednn_wino_ops (const void *state);

/* Tests: how many 1x1 convolutions of the plan run through one level of Strassen
 * (gpunet_pw_is_strassen), 0 when none do. */
int gpunet_onednn_strassen_ops (const void *state);

/* Tests: how many ops evict their input after them where the cores are far apart
 * (plan_flush_inputs in backend_onednn.c), 0 when none do. */
int gpunet_onednn_flushed_inputs (const void *state);

/* Tests: how many ops have a twin plan run instead while the cores are far apart
 * (plan_far_twins in backend_onednn.c), 0 when none do. */
int gpunet_onednn_far_twins (const void *state);

/* Tests: how many passes the tuner recorded with knob k (0: streaming Winograd outputs,
 * 1: cached Strassen sums; backend_onednn.c, tune_choose) set to way (0 or 1); -1 when
 * the knob is not tried both ways (forced, or no op it acts on). */
long gpunet_onednn_tuned_passes (const void *state, int k, int way);

#endif

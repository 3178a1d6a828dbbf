/* gpunet-vnni-peak.h: gpunet-bench's int8 peak reference (gpunet-vnni-peak.c). */
#ifndef GPUNET_VNNI_PEAK_H
#define GPUNET_VNNI_PEAK_H

/* Billions of int8 multiply-accumulates per second of AVX-512 VNNI on `threads`
 * threads (the best of three short rounds); 0 where the CPU lacks it. */
double gpunet_vnni_peak_gmacs (int threads);

#endif

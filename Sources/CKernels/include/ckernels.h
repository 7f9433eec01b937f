// Hot loops for the engine. Each fast kernel has a plain Swift reference beside it
// (Sources/Engine/Kernels) and a test comparing the two on random data.
#ifndef INFERD_CKERNELS_H
#define INFERD_CKERNELS_H
#include <stddef.h>
#include <stdint.h>

/// 1 when this CPU runs the AVX2/FMA/F16C paths, 0 when the portable paths must be used.
int ck_cpu_has_avx2_fma(void);

#endif

// Shared between the C files of CKernels; not part of the public header.
#ifndef INFERD_CKERNELS_INTERNAL_H
#define INFERD_CKERNELS_INTERNAL_H
#include <stdatomic.h>
#include "ckernels.h"

#if defined(__x86_64__) || defined(__i386__)
#define CK_X86 1
#include <immintrin.h>
#define CK_FAST __attribute__((target("avx2,fma,f16c")))
#else
#define CK_X86 0
#endif

static inline void ck_cpu_relax(void) {
#if CK_X86
    __builtin_ia32_pause();
#endif
}

#endif

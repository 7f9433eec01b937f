#include "ckernels.h"
#include "internal.h"

int ck_cpu_has_avx2_fma(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
#else
    return 0;
#endif
}

// -1: not decided yet; 0: portable; 1: AVX2/FMA/F16C.
static _Atomic int ck_fast_state = -1;

int ck_fast_paths_enabled(void) {
    int s = atomic_load_explicit(&ck_fast_state, memory_order_relaxed);
    if (s < 0) {
        s = ck_cpu_has_avx2_fma();
        atomic_store_explicit(&ck_fast_state, s, memory_order_relaxed);
    }
    return s;
}

void ck_set_fast_paths(int enabled) {
    atomic_store_explicit(&ck_fast_state, enabled ? ck_cpu_has_avx2_fma() : 0, memory_order_relaxed);
}

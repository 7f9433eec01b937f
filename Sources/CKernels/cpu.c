#include <stdlib.h>
#include <string.h>

#include "ckernels.h"
#include "internal.h"

int ck_prefetch_near = 0;
int ck_cpu_avx512bw = 0;
int ck_cpu_vnni512 = 0;
int ck_cpu_bf16_pairs = 0;

// Read once when the library loads, before any kernel runs (internal.h). Kernels on the pool's
// threads then only read them; each used to cache its own check on first use, a write that
// ThreadSanitizer saw race with another thread's read.
//
// INFERD_CPU=avx2 hides AVX-512 from every kernel for the whole process, so an AVX-512 machine
// runs what an AVX2-only CPU (AMD Zen 3) would: the machines this project runs on vary, and the
// AVX2 paths have to be measured on whichever one a session has (docs/performance.md). Tests use
// the per-thread switch instead (ck_set_vnni).
__attribute__((constructor)) static void ck_read_cpu(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    const char *isa = getenv("INFERD_CPU");
    if (isa && strcmp(isa, "avx2") == 0) return;
    const int f512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl");
    ck_cpu_avx512bw = __builtin_cpu_supports("avx512bw");
    ck_cpu_vnni512 = f512 && __builtin_cpu_supports("avx512vnni");
    ck_cpu_bf16_pairs = f512 && __builtin_cpu_supports("avx512bf16");
#endif
}

const char *ck_cpu_kernels(void) {
    if (!ck_cpu_has_avx2_fma()) return "portable";
    if (ck_cpu_vnni512 && ck_cpu_avx512bw) return ck_cpu_bf16_pairs ? "avx512-vnni-bf16" : "avx512-vnni";
    return "avx2";
}

// Read once when the library loads, before any kernel runs (internal.h, CK_AHEAD).
__attribute__((constructor)) static void ck_choose_prefetch(void) {
    const char *setting = getenv("INFERD_PREFETCH");
    if (setting && strcmp(setting, "near") == 0) {
        ck_prefetch_near = 1;
    } else if (setting && strcmp(setting, "far") == 0) {
        ck_prefetch_near = 0;
    } else {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_cpu_init();
        ck_prefetch_near = __builtin_cpu_is("amd");
#endif
    }
}

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
// Per-thread override set by tests (-1: none), so a test forcing the portable paths does not
// change what other threads compute. Pool tasks take the choice of the thread that starts them.
static _Thread_local int ck_fast_override = -1;

int ck_fast_paths_enabled(void) {
    if (ck_fast_override >= 0) return ck_fast_override;
    int s = atomic_load_explicit(&ck_fast_state, memory_order_relaxed);
    if (s < 0) {
        s = ck_cpu_has_avx2_fma();
        atomic_store_explicit(&ck_fast_state, s, memory_order_relaxed);
    }
    return s;
}

int ck_fast_paths_override(void) { return ck_fast_override; }

void ck_set_fast_paths_override(int value) { ck_fast_override = value; }

void ck_set_fast_paths(int enabled) {
    ck_fast_override = enabled ? ck_cpu_has_avx2_fma() : 0;
}

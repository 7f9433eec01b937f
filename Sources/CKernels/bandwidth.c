#include "ck_bandwidth.h"
#include "ckernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("avx2")))
static uint64_t read_sweep_avx2(const void *p, size_t bytes) {
    const __m256i *v = (const __m256i *)p;
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i < bytes / 32; i += 4) {
        a0 = _mm256_xor_si256(a0, _mm256_loadu_si256(v + i));
        a1 = _mm256_xor_si256(a1, _mm256_loadu_si256(v + i + 1));
        a2 = _mm256_xor_si256(a2, _mm256_loadu_si256(v + i + 2));
        a3 = _mm256_xor_si256(a3, _mm256_loadu_si256(v + i + 3));
    }
    __m256i a = _mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3));
    return (uint64_t)_mm256_extract_epi64(a, 0) ^ (uint64_t)_mm256_extract_epi64(a, 3);
}
#endif

static uint64_t read_sweep_portable(const void *p, size_t bytes) {
    const uint64_t *w = (const uint64_t *)p;
    uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (size_t i = 0; i < bytes / 8; i += 4) {
        a0 ^= w[i];
        a1 ^= w[i + 1];
        a2 ^= w[i + 2];
        a3 ^= w[i + 3];
    }
    return a0 ^ a1 ^ a2 ^ a3;
}

uint64_t ck_read_sweep(const void *p, size_t bytes) {
#if defined(__x86_64__)
    if (ck_cpu_has_avx2_fma()) return read_sweep_avx2(p, bytes);
#endif
    return read_sweep_portable(p, bytes);
}

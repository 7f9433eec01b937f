// Interleaved Q4_1 and Q8_0 matrices (interleave_forms.h) on CPUs with AVX2 but no AVX-512 VNNI.
//
// The per-row AVX2 kernels (dot.c) spend, per row and block, a broadcast load and two shifts to
// unpack the nibbles, a permute to pick the row's scale and a share of four scale conversions;
// on the interleaved form one load and three logic ops unpack eight rows' chunk, and one
// conversion gives eight rows' scales. The integer sums need two instructions (vpmaddubsw then
// vpmaddwd against ones) where VNNI has one, and AVX2's 16 vector registers hold the eight chunk
// accumulators of one token only, so tokens go one at a time over a group that stays in L1.
//
// The float arithmetic is the per-row AVX2 kernels', row by row and bit for bit (the reference
// answers depend on its rounding, as interleave.c explains): chunk c of a block (lane c of the
// per-row kernel's accumulator) keeps its own accumulator vector whose lane r is row r; the
// block scale fp16(d_w) * fp16(d_a) multiplies the chunk's exact integer sum in one FMA; the
// chunks are added at the end in ck_hsum8's order; Q4_1 then adds its FMA chain of m_w * s_a.
#include <string.h>

#include "interleave_forms.h"

#if CK_X86

// Prefetch distance in blocks, about 2.5 KiB as the VNNI kernels: the rows of the next groups
// lie right after this one's, so the prefetches run on into them.
// (-D overrides them for scripts/matmul_bench.c.)
#ifndef CK_Q41_AHEAD_AVX2
#define CK_Q41_AHEAD_AVX2 16  // blocks of 160 bytes
#endif
#ifndef CK_Q80_AHEAD_AVX2
#define CK_Q80_AHEAD_AVX2 9  // blocks of 272 bytes
#endif

// Lane r: the sum of the four u8 × s8 products of row r (exact: |products| ≤ 15 × 128 or
// 128 × 127 leave the 16-bit pair sums unsaturated).
CK_FAST static inline __m256 chunk_sums(__m256i u, __m256i s) {
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
}

CK_FAST static void group_q4_1x8_avx2(int nb, const ck_block_q4_1x8 *w, const ck_block_q8_1 *x, float *y) {
    __m256 acc[8];
    for (int c = 0; c < 8; c++) acc[c] = _mm256_setzero_ps();
    __m256 macc = _mm256_setzero_ps();
    const __m256i mask = _mm256_set1_epi8(0x0f);
    for (int b = 0; b < nb; b++) {
        const char *ahead = (const char *)(w + b + CK_AHEAD(CK_Q41_AHEAD_AVX2));
        _mm_prefetch(ahead, _MM_HINT_T0);
        _mm_prefetch(ahead + 64, _MM_HINT_T0);
        _mm_prefetch(ahead + 128, _MM_HINT_T0);
        const ck_block_q8_1 *a = x + b;
        int32_t ds;
        memcpy(&ds, a, 4);
        const __m128 das = _mm_cvtph_ps(_mm_cvtsi32_si128(ds));
        const __m256 d = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].d)),
                                       _mm256_broadcastss_ps(das));
        macc = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].m)),
                               _mm256_broadcastss_ps(_mm_movehdup_ps(das)), macc);
        for (int c = 0; c < 4; c++) {
            // Low nibbles: elements 4c..4c+3 (chunk c); high: 16+4c..16+4c+3 (chunk 4 + c).
            const __m256i v = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * c));
            const __m256i lo = _mm256_and_si256(v, mask);
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
            acc[c] = _mm256_fmadd_ps(d, chunk_sums(lo, ck_bcast4(a->qs + 4 * c)), acc[c]);
            acc[4 + c] = _mm256_fmadd_ps(d, chunk_sums(hi, ck_bcast4(a->qs + 16 + 4 * c)), acc[4 + c]);
        }
    }
    _mm256_storeu_ps(y, _mm256_add_ps(ck_chunks_in_hsum8_order(acc), macc));
}

// The stored bytes are q (int8). As the per-row kernel, the products are |q| × (x with q's
// sign), so vpmaddubsw's unsigned operand stays within 128.
CK_FAST static void group_q8_0x8_avx2(int nb, const ck_block_q8_0x8 *w, const ck_block_q8_0 *x, float *y) {
    __m256 acc[8];
    for (int c = 0; c < 8; c++) acc[c] = _mm256_setzero_ps();
    for (int b = 0; b < nb; b++) {
        const char *ahead = (const char *)(w + b + CK_AHEAD(CK_Q80_AHEAD_AVX2));
        _mm_prefetch(ahead, _MM_HINT_T0);
        _mm_prefetch(ahead + 64, _MM_HINT_T0);
        _mm_prefetch(ahead + 128, _MM_HINT_T0);
        _mm_prefetch(ahead + 192, _MM_HINT_T0);
        _mm_prefetch(ahead + 256, _MM_HINT_T0);
        const ck_block_q8_0 *a = x + b;
        const __m256 d = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].d)),
                                       _mm256_broadcastss_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(a->d))));
        for (int c = 0; c < 8; c++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * c));
            const __m256 s = chunk_sums(_mm256_sign_epi8(q, q), _mm256_sign_epi8(ck_bcast4(a->qs + 4 * c), q));
            acc[c] = _mm256_fmadd_ps(d, s, acc[c]);
        }
    }
    _mm256_storeu_ps(y, ck_chunks_in_hsum8_order(acc));
}

// group_q8_0x8_avx2 for two tokens at once: each weight chunk is loaded and made unsigned once
// for both (one instruction in eight fewer per token: 13 % in a 2048 x 640 product here). Two
// tokens' eight chunk accumulators would take all sixteen registers, so the group is walked
// twice, chunks 0-3 then 4-7 (the second walk finds it in L1); each chunk's FMA chain over the
// blocks, and so every output bit, is group_q8_0x8_avx2's.
CK_FAST static void group_q8_0x8_avx2_pair(int nb, const ck_block_q8_0x8 *w, const ck_block_q8_0 *x0,
                                           const ck_block_q8_0 *x1, float *y0, float *y1) {
    __m256 acc0[8], acc1[8];
    for (int half = 0; half < 2; half++) {
        __m256 a0[4], a1[4];
        for (int c = 0; c < 4; c++) a0[c] = a1[c] = _mm256_setzero_ps();
        for (int b = 0; b < nb; b++) {
            const char *ahead = (const char *)(w + b + CK_AHEAD(CK_Q80_AHEAD_AVX2)) + 128 * half;
            _mm_prefetch(ahead, _MM_HINT_T0);
            _mm_prefetch(ahead + 64, _MM_HINT_T0);
            _mm_prefetch(ahead + 128, _MM_HINT_T0);
            const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].d));
            const __m256 d0 = _mm256_mul_ps(dw, _mm256_broadcastss_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(x0[b].d))));
            const __m256 d1 = _mm256_mul_ps(dw, _mm256_broadcastss_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(x1[b].d))));
            for (int c = 0; c < 4; c++) {
                const int e = 4 * (4 * half + c);  // chunk 4 * half + c: elements e..e+3
                const __m256i q = _mm256_loadu_si256((const __m256i *)(w[b].qs + 8 * e));
                const __m256i u = _mm256_sign_epi8(q, q);
                a0[c] = _mm256_fmadd_ps(d0, chunk_sums(u, _mm256_sign_epi8(ck_bcast4(x0[b].qs + e), q)), a0[c]);
                a1[c] = _mm256_fmadd_ps(d1, chunk_sums(u, _mm256_sign_epi8(ck_bcast4(x1[b].qs + e), q)), a1[c]);
            }
        }
        for (int c = 0; c < 4; c++) {
            acc0[4 * half + c] = a0[c];
            acc1[4 * half + c] = a1[c];
        }
    }
    _mm256_storeu_ps(y0, ck_chunks_in_hsum8_order(acc0));
    _mm256_storeu_ps(y1, ck_chunks_in_hsum8_order(acc1));
}

// Group by group, every token over a group while its few KiB are in L1.
void ck_groups_q4_1x8_avx2(int nb, const char *w, size_t group_bytes, int g0, int g1, const ck_block_q8_1 *const *x,
                           float *const *y, int T) {
    for (int g = g0; g < g1; g++) {
        const ck_block_q4_1x8 *wg = (const ck_block_q4_1x8 *)(w + (size_t)g * group_bytes);
        for (int t = 0; t < T; t++) group_q4_1x8_avx2(nb, wg, x[t], y[t] + 8 * g);
    }
}

void ck_groups_q8_0x8_avx2(int nb, const char *w, size_t group_bytes, int g0, int g1, const ck_block_q8_0 *const *x,
                           float *const *y, int T) {
    for (int g = g0; g < g1; g++) {
        const ck_block_q8_0x8 *wg = (const ck_block_q8_0x8 *)(w + (size_t)g * group_bytes);
        int t = 0;
        for (; t + 2 <= T; t += 2) group_q8_0x8_avx2_pair(nb, wg, x[t], x[t + 1], y[t] + 8 * g, y[t + 1] + 8 * g);
        if (t < T) group_q8_0x8_avx2(nb, wg, x[t], y[t] + 8 * g);
    }
}

#endif

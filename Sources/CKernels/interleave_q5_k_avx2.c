// Interleaved Q5_K (ck_block_q5_Kx8, interleave_q5_k.c) on CPUs with AVX2 but no AVX-512 VNNI.
//
// Without vpdpbusd a 4-value chunk's product is vpmaddubsw (pairs of u8 × s8 in int16: at most
// 2 × 31 × 128, exact) then vpmaddwd against the group's scale in both int16 halves of the row's
// lane, which gives scale × chunk sum exactly in int32: the two instructions of the per-row
// AVX2 kernel, with the scale multiply folded in. What the form saves is the rest of that
// kernel's work: the nibble and fifth-bit unpacking is done once per eight rows and shared by up
// to four tokens, and neither the scales nor the sums need a shuffle or horizontal add per row.
// The float steps are those of interleave_q5_k.c's VNNI kernels, lane by lane.
#include "interleave_forms.h"

#if CK_X86

// Nibble vector v with its fifth bits from qh vector h (bit `bit` of each byte), values 0..31.
CK_FAST static inline __m256i q5_join_avx2(__m256i v, __m256i h, int bit) {
    const __m256i moved = bit <= 4 ? _mm256_slli_epi16(h, 4 - bit) : _mm256_srli_epi16(h, bit - 4);
    return _mm256_or_si256(_mm256_and_si256(v, _mm256_set1_epi8(0x0f)), _mm256_and_si256(moved, _mm256_set1_epi8(0x10)));
}

// The tiled order, eight rows × T tokens (a constant after inlining).
static inline __attribute__((always_inline)) CK_FAST void tile_q5_kx8_tiled_avx2(int nb, const ck_block_q5_Kx8 *w,
                                                                                const ck_block_q8_K *const *x,
                                                                                float *const *y, const int T) {
    __m256 acc[4];
    for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();
    for (int b = 0; b < nb; b++) {
        __m256i s1[4];
        for (int t = 0; t < T; t++) s1[t] = _mm256_setzero_si256();
        for (int j = 0; j < 4; j++) {
            const __m256i sl = ck_scale_pairs_u8(w[b].sc[2 * j]), sh = ck_scale_pairs_u8(w[b].sc[2 * j + 1]);
            for (int c = 0; c < 8; c++) {
                const __m256i v = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * (8 * j + c)));
                const __m256i h = _mm256_loadu_si256((const __m256i *)(w[b].qh + 32 * c));
                const __m256i ql = q5_join_avx2(v, h, 2 * j);
                const __m256i qu = q5_join_avx2(_mm256_srli_epi16(v, 4), h, 2 * j + 1);
                for (int t = 0; t < T; t++) {
                    const int8_t *a = x[t][b].qs + 64 * j + 4 * c;
                    s1[t] = _mm256_add_epi32(s1[t], _mm256_add_epi32(ck_scaled_chunk(ql, a, sl), ck_scaled_chunk(qu, a + 32, sh)));
                }
            }
        }
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].d));
        const __m256 dm = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].dmin));
        for (int t = 0; t < T; t++) {
            __m256i s2 = _mm256_setzero_si256();
            for (int j = 0; j < 4; j++) {
                s2 = _mm256_add_epi32(s2, _mm256_madd_epi16(ck_q5_k_min_pairs(&w[b], j), ck_q5_k_bsum_pair(&x[t][b], j)));
            }
            __m256 r = _mm256_mul_ps(_mm256_cvtepi32_ps(s1[t]), dw);
            r = _mm256_fnmadd_ps(dm, _mm256_cvtepi32_ps(s2), r);
            acc[t] = _mm256_fmadd_ps(r, _mm256_set1_ps(x[t][b].d), acc[t]);
        }
    }
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y[t], acc[t]);
}

// Group by group, the tokens four at a time while the group's super-blocks are in L1.
CK_FAST void ck_groups_q5_kx8_tiled_avx2(int nb, const char *w, size_t group_bytes, int g0, int g1,
                                         const ck_block_q8_K *const *x, float *const *y, int T) {
    for (int g = g0; g < g1; g++) {
        const ck_block_q5_Kx8 *wg = (const ck_block_q5_Kx8 *)(w + (size_t)g * group_bytes);
        for (int t0 = 0; t0 < T; t0 += 4) {
            float *yg[4];
            const int n = T - t0 < 4 ? T - t0 : 4;
            for (int t = 0; t < n; t++) yg[t] = y[t0 + t] + 8 * g;
            if (n == 4) {
                tile_q5_kx8_tiled_avx2(nb, wg, x + t0, yg, 4);
            } else if (n == 3) {
                tile_q5_kx8_tiled_avx2(nb, wg, x + t0, yg, 3);
            } else if (n == 2) {
                tile_q5_kx8_tiled_avx2(nb, wg, x + t0, yg, 2);
            } else {
                tile_q5_kx8_tiled_avx2(nb, wg, x + t0, yg, 1);
            }
        }
    }
}

#define CK_Q5K_AHEAD_AVX2 2  // super-blocks of 1,440 bytes ahead (decode)

// The one-token order (dot_q5_k_fast's), eight rows: chunk c of each group goes to lane c's
// integer accumulator; per super-block one FMA per lane, and the mins' FMA chain beside.
CK_FAST void ck_group_q5_kx8_lanes_avx2(int nb, const ck_block_q5_Kx8 *w, const ck_block_q8_K *a, float *y) {
    __m256 acc[8];
    for (int L = 0; L < 8; L++) acc[L] = _mm256_setzero_ps();
    __m256 summs = _mm256_setzero_ps();
    for (int b = 0; b < nb; b++) {
        for (int l = 0; l < (int)sizeof(ck_block_q5_Kx8); l += 64) {
            _mm_prefetch((const char *)(w + b + CK_AHEAD(CK_Q5K_AHEAD_AVX2)) + l, _MM_HINT_T0);
        }
        const __m256 d = _mm256_mul_ps(_mm256_set1_ps(a[b].d), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].d)));
        const __m256 dmin =
            _mm256_mul_ps(_mm256_set1_ps(-a[b].d), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].dmin)));
        __m256i summ = _mm256_setzero_si256();
        for (int j = 0; j < 4; j++) {
            summ = _mm256_add_epi32(summ, _mm256_madd_epi16(ck_q5_k_min_pairs(&w[b], j), ck_q5_k_bsum_pair(&a[b], j)));
        }
        summs = _mm256_fmadd_ps(dmin, _mm256_cvtepi32_ps(summ), summs);
        __m256i lane[8];
        for (int L = 0; L < 8; L++) lane[L] = _mm256_setzero_si256();
        for (int j = 0; j < 4; j++) {
            const __m256i sl = ck_scale_pairs_u8(w[b].sc[2 * j]), sh = ck_scale_pairs_u8(w[b].sc[2 * j + 1]);
            for (int c = 0; c < 8; c++) {
                const __m256i v = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * (8 * j + c)));
                const __m256i h = _mm256_loadu_si256((const __m256i *)(w[b].qh + 32 * c));
                const int8_t *q8 = a[b].qs + 64 * j + 4 * c;
                const __m256i pl = ck_scaled_chunk(q5_join_avx2(v, h, 2 * j), q8, sl);
                const __m256i pu = ck_scaled_chunk(q5_join_avx2(_mm256_srli_epi16(v, 4), h, 2 * j + 1), q8 + 32, sh);
                lane[c] = _mm256_add_epi32(lane[c], _mm256_add_epi32(pl, pu));
            }
        }
        for (int L = 0; L < 8; L++) acc[L] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(lane[L]), acc[L]);
    }
    _mm256_storeu_ps(y, _mm256_add_ps(ck_chunks_in_hsum8_order(acc), summs));
}

#endif

// Q4_0 re-laid out at load time for eight rows per vector, as interleave.c does for Q4_1.
//
// Q4_0 is Q4_1 without the min: value = d * (q - 8). In the file's layout every row and token
// pays, per block, a nibble unpack, a subtraction of 8, the sign trick (vpdpbusd and vpmaddubsw
// multiply unsigned by signed bytes), a horizontal reduction and a scale conversion. With eight
// rows in the lanes of a vector the nibbles go into the integer products as they are (unsigned,
// 0..15) and the -8 becomes a correction that depends on the activations only:
//
//   sum_j (q_j - 8) * x_j = sum_j q_j * x_j - 8 * sum_j x_j       (exact, in int32)
//
// so per token and block, -8 * sum x is computed once (q4_0_corrections_fast) and seeds
// vpdpbusd's accumulator for all eight rows and every group of a pass. Per token and block that
// leaves eight vpdpbusd, one conversion and one FMA for eight rows (sixteen with AVX-512: two
// groups share 512-bit vectors, tile_q4_0x16), with 18 bytes per row and block.
//
// The float arithmetic is that of ggml's repacked Q4_0 products (`ggml_gemv_q4_0_8x8_q8_0` and
// `ggml_gemm_q4_0_8x8_q8_0`): llama.cpp's CPU backend repacks every Q4_0 matrix of a multiple of
// 8 rows on AVX2 machines and runs those for one token and for four at a time alike. Per row and
// block, the block's exact integer sum, converted, times fp16(d_w) * fp16(d_a) (one rounding),
// added in one FMA into one accumulator, blocks in order. The integer sums are exact in every
// kernel (|sum| <= 32 * 8 * 128; vpmaddubsw's pairs, <= 2 * 15 * 128, and eight of them added
// stay below int16's limit), so how they are formed does not change a bit; the per-row kernels
// (dot_legacy.c) keep the same order, so a matrix gives the same bits in either layout.
#include <string.h>

#include "interleave_forms.h"

size_t ck_q4_0x8_group_bytes(int k) { return (size_t)(k / CK_QK) * sizeof(ck_block_q4_0x8); }

void ck_interleave_q4_0x8(const void *src, size_t src_row_bytes, int rows, int k, void *dst) {
    const int nb = k / CK_QK;
    for (int g = 0; g < rows / 8; g++) {
        ck_block_q4_0x8 *out = (ck_block_q4_0x8 *)((char *)dst + (size_t)g * ck_q4_0x8_group_bytes(k));
        for (int b = 0; b < nb; b++, out++) {
            for (int r = 0; r < 8; r++) {
                const ck_block_q4_0 *in = (const ck_block_q4_0 *)((const char *)src + (size_t)(8 * g + r) * src_row_bytes) + b;
                out->d[r] = in->d;
                for (int c = 0; c < 4; c++) memcpy(out->qs + 32 * c + 4 * r, in->qs + 4 * c, 4);
            }
        }
    }
}

// MARK: - Portable (the reference beside the fast kernels)

// Eight rows against one activation row: per block the exact integer sum, then one FMA.
static void group_q4_0x8_portable(int nb, const ck_block_q4_0x8 *w, const ck_block_q8_0 *a, float *y) {
    float acc[8] = {0};
    for (int b = 0; b < nb; b++) {
        const float da = ck_fp16_to_fp32(a[b].d);
        for (int r = 0; r < 8; r++) {
            int32_t sum = 0;
            for (int c = 0; c < 4; c++) {
                for (int j = 0; j < 4; j++) {
                    const uint8_t byte = w[b].qs[32 * c + 4 * r + j];
                    sum += ((byte & 0x0f) - 8) * a[b].qs[4 * c + j] + ((byte >> 4) - 8) * a[b].qs[16 + 4 * c + j];
                }
            }
            acc[r] = fmaf((float)sum, ck_fp16_to_fp32(w[b].d[r]) * da, acc[r]);
        }
    }
    memcpy(y, acc, sizeof acc);
}

// MARK: - The activations' corrections

#if CK_X86
// corr[8b] = -8 * (the sum of x_b's 32 values), for the nb blocks of one activation row (the
// table keeps eight entries per block, as the shared walk lays it out; the other seven are not
// read). One vpmaddubsw of 8 (unsigned) by the bytes, one vpmaddwd by -1, the eight lanes added:
// exact (|pairs| <= 2048).
CK_FAST static void q4_0_corrections_fast(int nb, const ck_block_q8_0 *x, int32_t *corr) {
    for (int b = 0; b < nb; b++) {
        const __m256i pairs = _mm256_maddubs_epi16(_mm256_set1_epi8(8), _mm256_loadu_si256((const __m256i *)x[b].qs));
        const __m256i lanes = _mm256_madd_epi16(pairs, _mm256_set1_epi16(-1));
        __m128i s = _mm_add_epi32(_mm256_castsi256_si128(lanes), _mm256_extracti128_si256(lanes, 1));
        s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
        s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
        corr[8 * b] = _mm_cvtsi128_si32(s);
    }
}

// MARK: - AVX-512 VNNI

#ifndef CK_Q40_AHEAD
#define CK_Q40_AHEAD 18  // blocks of 144 bytes (~2.5 KiB, the Q4_1 kernel's distance)
#endif

// One token's integer sums for the rows in the lanes of q[0..7] (chunk c: elements 4c..4c+3, the
// low nibbles of vector c for c < 4, the high nibbles of vector c - 4 after), from the block's
// correction: two chains of four vpdpbusd, added.
static inline __attribute__((always_inline)) CK_FORMS_VNNI __m256i block_sum8(const __m256i q[8], const ck_block_q8_0 *a,
                                                                             int32_t correction) {
    __m256i s0 = _mm256_set1_epi32(correction), s1 = _mm256_setzero_si256();
    for (int c = 0; c < 8; c += 2) {
        s0 = _mm256_dpbusd_epi32(s0, q[c], _mm256_set1_epi32(ck_word4(a->qs + 4 * c)));
        s1 = _mm256_dpbusd_epi32(s1, q[c + 1], _mm256_set1_epi32(ck_word4(a->qs + 4 * c + 4)));
    }
    return _mm256_add_epi32(s0, s1);
}

// block_sum8 for sixteen rows.
static inline __attribute__((always_inline)) CK_FORMS_VNNI __m512i block_sum16(const __m512i q[8],
                                                                              const ck_block_q8_0 *a,
                                                                              int32_t correction) {
    __m512i s0 = _mm512_set1_epi32(correction), s1 = _mm512_setzero_si512();
    for (int c = 0; c < 8; c += 2) {
        s0 = _mm512_dpbusd_epi32(s0, q[c], _mm512_set1_epi32(ck_word4(a->qs + 4 * c)));
        s1 = _mm512_dpbusd_epi32(s1, q[c + 1], _mm512_set1_epi32(ck_word4(a->qs + 4 * c + 4)));
    }
    return _mm512_add_epi32(s0, s1);
}

// Eight rows × T tokens (T <= 4 after inlining): each weight vector is loaded and unpacked once
// for the T tokens.
static inline __attribute__((always_inline)) CK_FORMS_VNNI void tile_q4_0x8(int nb, const ck_block_q4_0x8 *w,
                                                                            const ck_block_q8_0 *const *x,
                                                                            const int32_t *const *corr,
                                                                            float *const *y, const int T) {
    __m256 acc[4];
    for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();
    const __m256i mask = _mm256_set1_epi8(0x0f);
    for (int b = 0; b < nb; b++) {
        _mm_prefetch((const char *)(w + b + CK_AHEAD(CK_Q40_AHEAD)), _MM_HINT_T0);
        _mm_prefetch((const char *)(w + b + CK_AHEAD(CK_Q40_AHEAD)) + 64, _MM_HINT_T0);
        _mm_prefetch((const char *)(w + b + CK_AHEAD(CK_Q40_AHEAD)) + 128, _MM_HINT_T0);
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].d));
        __m256i q[8];
        for (int c = 0; c < 4; c++) {
            const __m256i v = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * c));
            q[c] = _mm256_and_si256(v, mask);
            q[4 + c] = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
        }
        for (int t = 0; t < T; t++) {
            const ck_block_q8_0 *a = x[t] + b;
            const __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(_cvtsh_ss(a->d)));
            const __m256i s = block_sum8(q, a, corr[t][8 * b]);
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), d, acc[t]);
        }
    }
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y[t], acc[t]);
}

// tile_q4_0x8 for two neighbouring groups at once in 512-bit vectors: lanes 0-7 are group g's
// rows, lanes 8-15 group g + 1's, each lane's arithmetic exactly tile_q4_0x8's: twice the rows per
// instruction (where the core splits 512-bit products in two halves, as Zen 4 does, it costs the
// same and saves front-end slots). The two groups' vectors are joined with one insert each,
// shared by the T tokens. Needs AVX-512F and VNNI only (CK_FORMS_VNNI): the nibble shift is done
// on 32-bit lanes, AVX-512BW's 16-bit one is not needed.
static inline __attribute__((always_inline)) CK_FORMS_VNNI void tile_q4_0x16(int nb, const ck_block_q4_0x8 *wa,
                                                                          const ck_block_q4_0x8 *wb,
                                                                          const ck_block_q8_0 *const *x,
                                                                          const int32_t *const *corr, float *const *y,
                                                                          const int T) {
    __m512 acc[4];
    for (int t = 0; t < T; t++) acc[t] = _mm512_setzero_ps();
    const __m512i mask = _mm512_set1_epi8(0x0f);
    for (int b = 0; b < nb; b++) {
        for (int l = 0; l < 192; l += 64) {
            _mm_prefetch((const char *)(wa + b + CK_AHEAD(CK_Q40_AHEAD)) + l, _MM_HINT_T0);
            _mm_prefetch((const char *)(wb + b + CK_AHEAD(CK_Q40_AHEAD)) + l, _MM_HINT_T0);
        }
        const __m256i d16 = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)wa[b].d)),
                                                    _mm_loadu_si128((const __m128i *)wb[b].d), 1);
        const __m512 dw = _mm512_cvtph_ps(d16);
        __m512i q[8];
        for (int c = 0; c < 4; c++) {
            const __m512i v =
                _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(wa[b].qs + 32 * c))),
                                   _mm256_loadu_si256((const __m256i *)(wb[b].qs + 32 * c)), 1);
            q[c] = _mm512_and_si512(v, mask);
            q[4 + c] = _mm512_and_si512(_mm512_srli_epi32(v, 4), mask);
        }
        for (int t = 0; t < T; t++) {
            const ck_block_q8_0 *a = x[t] + b;
            const __m512 d = _mm512_mul_ps(dw, _mm512_set1_ps(_cvtsh_ss(a->d)));
            const __m512i s = block_sum16(q, a, corr[t][8 * b]);
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), d, acc[t]);
        }
    }
    for (int t = 0; t < T; t++) _mm512_storeu_ps(y[t], acc[t]);
}

// Groups g0..<g1 in pairs through the 16-row kernel where a prompt's tokens share them (T >= 2),
// an odd last group and single tokens through the 8-row one, all T <= 4 tokens of the tile in
// one walk. One token is decode, bound by memory: the 8-row kernel reads one stream of weights
// where the 16-row one reads two groups' at once.
CK_FORMS_VNNI static void groups_q4_0x8_vnni(int nb, const char *w, size_t group_bytes, int g0, int g1,
                                          const ck_block_q8_0 *const *x, const int32_t *const *corr, float *const *y,
                                          int T) {
    int g = g0;
#ifndef CK_Q40_NO_ZMM  // (-D for scripts: the 8-row kernel alone, to compare)
    for (; T >= 2 && g + 2 <= g1; g += 2) {
        const ck_block_q4_0x8 *wa = (const ck_block_q4_0x8 *)(w + (size_t)g * group_bytes);
        const ck_block_q4_0x8 *wb = (const ck_block_q4_0x8 *)(w + (size_t)(g + 1) * group_bytes);
        float *yg[4];
        for (int t = 0; t < T; t++) yg[t] = y[t] + 8 * g;
        switch (T) {
        case 4: tile_q4_0x16(nb, wa, wb, x, corr, yg, 4); break;
        case 3: tile_q4_0x16(nb, wa, wb, x, corr, yg, 3); break;
        case 2: tile_q4_0x16(nb, wa, wb, x, corr, yg, 2); break;
        default: tile_q4_0x16(nb, wa, wb, x, corr, yg, 1); break;
        }
    }
#endif
    for (; g < g1; g++) {
        const ck_block_q4_0x8 *wg = (const ck_block_q4_0x8 *)(w + (size_t)g * group_bytes);
        float *yg[4];
        for (int t = 0; t < T; t++) yg[t] = y[t] + 8 * g;
        switch (T) {
        case 4: tile_q4_0x8(nb, wg, x, corr, yg, 4); break;
        case 3: tile_q4_0x8(nb, wg, x, corr, yg, 3); break;
        case 2: tile_q4_0x8(nb, wg, x, corr, yg, 2); break;
        default: tile_q4_0x8(nb, wg, x, corr, yg, 1); break;
        }
    }
}

// MARK: - AVX2 (no VNNI)

#ifndef CK_Q40_AHEAD_AVX2
#define CK_Q40_AHEAD_AVX2 18
#endif

// Eight rows against one token (a group stays in L1 while the tile's tokens pass, as Q4_1's AVX2
// kernel). A block's sum is eight vpmaddubsw (nibbles × x) added as int16, one vpmaddwd by ones,
// plus the correction.
CK_FAST static void group_q4_0x8_avx2(int nb, const ck_block_q4_0x8 *w, const ck_block_q8_0 *x, const int32_t *corr,
                                      float *y) {
    __m256 acc = _mm256_setzero_ps();
    const __m256i mask = _mm256_set1_epi8(0x0f);
    const __m256i ones = _mm256_set1_epi16(1);
    for (int b = 0; b < nb; b++) {
        const char *ahead = (const char *)(w + b + CK_AHEAD(CK_Q40_AHEAD_AVX2));
        _mm_prefetch(ahead, _MM_HINT_T0);
        _mm_prefetch(ahead + 64, _MM_HINT_T0);
        _mm_prefetch(ahead + 128, _MM_HINT_T0);
        const ck_block_q8_0 *a = x + b;
        const __m256 d = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].d)),
                                       _mm256_set1_ps(_cvtsh_ss(a->d)));
        __m256i pairs[4];
        for (int c = 0; c < 4; c++) {
            const __m256i v = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * c));
            const __m256i lo = _mm256_maddubs_epi16(_mm256_and_si256(v, mask), ck_bcast4(a->qs + 4 * c));
            const __m256i hi =
                _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v, 4), mask), ck_bcast4(a->qs + 16 + 4 * c));
            pairs[c] = _mm256_add_epi16(lo, hi);
        }
        const __m256i sum16 = _mm256_add_epi16(_mm256_add_epi16(pairs[0], pairs[1]), _mm256_add_epi16(pairs[2], pairs[3]));
        const __m256i s = _mm256_add_epi32(_mm256_madd_epi16(sum16, ones), _mm256_set1_epi32(corr[8 * b]));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), d, acc);
    }
    _mm256_storeu_ps(y, acc);
}

CK_FAST static void groups_q4_0x8_avx2(int nb, const char *w, size_t group_bytes, int g0, int g1,
                                       const ck_block_q8_0 *const *x, const int32_t *const *corr, float *const *y,
                                       int T) {
    for (int g = g0; g < g1; g++) {
        const ck_block_q4_0x8 *wg = (const ck_block_q4_0x8 *)(w + (size_t)g * group_bytes);
        for (int t = 0; t < T; t++) group_q4_0x8_avx2(nb, wg, x[t], corr[t], y[t] + 8 * g);
    }
}
#endif

// MARK: - Matrix product over a range of rows

// Rows r0..<r1 (multiples of 8), every token: passes of rows, tiles of up to four tokens
// (ck_matmul_corrected_passes); the portable kernel past one token's worth of corrections.
void ck_matmul_q4_0x8_rows(const ck_matmul_args *p, int r0, int r1, int fast) {
    const int nb = p->k / CK_QK;
    const char *w = (const char *)p->w;
    const char *x = (const char *)p->x;
#if CK_X86
    if (fast != CK_INTERLEAVED_PORTABLE &&
        ck_matmul_corrected_passes(p, r0, r1, q4_0_corrections_fast,
                                   fast == CK_INTERLEAVED_VNNI ? groups_q4_0x8_vnni : groups_q4_0x8_avx2)) {
        return;
    }
#endif
    (void)fast;
    for (int t = 0; t < p->n; t++) {
        const ck_block_q8_0 *xt = (const ck_block_q8_0 *)(x + (size_t)t * p->x_row_bytes);
        for (int g = r0 / 8; g < r1 / 8; g++) {
            group_q4_0x8_portable(nb, (const ck_block_q4_0x8 *)(w + (size_t)g * p->w_row_bytes), xt,
                                  p->y + (size_t)t * p->ldy + 8 * g);
        }
    }
}

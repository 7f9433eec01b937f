// Q4_0 re-laid out at load time for eight rows per vector, as interleave.c does for Q4_1.
//
// Q4_0 is Q4_1 without the min: value = d * (q - 8). In the file's layout every row and token
// pays, per block, a nibble unpack, a subtraction of 8, the sign trick (vpdpbusd and vpmaddubsw
// multiply unsigned by signed bytes), a horizontal reduction and a scale conversion; the per-row
// kernel (dot_legacy.c) was all inferd had for Q4_0, at 0.14x llama.cpp's prompt speed. With
// eight rows in the lanes of a vector the nibbles go into the integer products as they are
// (unsigned, 0..15) and the -8 becomes a correction that depends on the activations only:
//
//   sum_j (q_j - 8) * x_j = sum_j q_j * x_j - 8 * sum_j x_j       (exact, in int32)
//
// so per token, block and 4-value chunk, -8 * sum x is computed once (q4_0_corrections_fast)
// and seeds vpdpbusd's accumulator for all eight rows and every group of a pass. Per token and
// chunk that leaves one vpdpbusd, one conversion and one FMA for eight rows, Q4_1's count, with
// 18 bytes per row and block instead of 20; with AVX-512 two groups share 512-bit vectors
// (tile_q4_0x16), sixteen rows per instruction.
//
// The float arithmetic is that of ggml's vec_dot_q4_0_q8_0 on AVX2/AVX-512 (and of inferd's
// per-row dot_q4_0_fast), row by row and bit for bit: its eight float lanes are the eight 4-value
// chunks of a block (chunk c: elements 4c..4c+3), each block adds fp16(d_w) * fp16(d_a) (one
// rounding) times the chunk's exact integer sum in one FMA, and the lanes are added at the end
// in ck_hsum8's order. Here chunk c has its own accumulator vector (lane r: row r), so the same
// FMAs run on eight rows at once. The integer sums are exact in every kernel (|sum| <= 4 * 8 *
// 128; vpmaddubsw's pairs <= 2 * 15 * 128 stay below int16's limit), so how they are formed
// does not change a bit.
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

// Eight rows against one activation row, lane by lane the arithmetic of dot_q4_0_fast: chunk c
// (elements 4c..4c+3: low nibbles of vector c for c < 4, high nibbles of vector c - 4 after)
// has its own accumulator, one FMA of its exact integer sum per block, ck_hsum8's order last.
static void group_q4_0x8_portable(int nb, const ck_block_q4_0x8 *w, const ck_block_q8_0 *a, float *y) {
    float acc[8][8] = {{0}};
    for (int b = 0; b < nb; b++) {
        const float da = ck_fp16_to_fp32(a[b].d);
        for (int r = 0; r < 8; r++) {
            const float d = ck_fp16_to_fp32(w[b].d[r]) * da;
            for (int c = 0; c < 8; c++) {
                int32_t sum = 0;
                for (int j = 0; j < 4; j++) {
                    const uint8_t byte = w[b].qs[32 * (c % 4) + 4 * r + j];
                    sum += ((c < 4 ? byte & 0x0f : byte >> 4) - 8) * a[b].qs[4 * c + j];
                }
                acc[r][c] = fmaf(d, (float)sum, acc[r][c]);
            }
        }
    }
    for (int r = 0; r < 8; r++) {
        const float *v = acc[r];
        y[r] = ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]));
    }
}

// MARK: - The activations' corrections

#if CK_X86
// corr[8b + c] = -8 * (x_b's chunk c sum), for the nb blocks of one activation row. One
// vpmaddubsw of 8 (unsigned) by the bytes, one vpmaddwd by -1 per block: exact (|pairs| <= 2048).
CK_FAST static void q4_0_corrections_fast(int nb, const ck_block_q8_0 *x, int32_t *corr) {
    for (int b = 0; b < nb; b++) {
        const __m256i pairs = _mm256_maddubs_epi16(_mm256_set1_epi8(8), _mm256_loadu_si256((const __m256i *)x[b].qs));
        _mm256_storeu_si256((__m256i *)(corr + 8 * b), _mm256_madd_epi16(pairs, _mm256_set1_epi16(-1)));
    }
}

// MARK: - AVX-512 VNNI

#ifndef CK_Q40_AHEAD
#define CK_Q40_AHEAD 18  // blocks of 144 bytes (~2.5 KiB, the Q4_1 kernel's distance)
#endif

// Eight rows × T tokens (T = 1 or 2 after inlining): each weight vector is loaded and unpacked
// once for the T tokens; chunk c's integer sums start from the token's correction (every lane
// the same) and vpdpbusd adds q * x over the chunk's four values.
static inline __attribute__((always_inline)) CK_FORMS_VNNI void tile_q4_0x8(int nb, const ck_block_q4_0x8 *w,
                                                                            const ck_block_q8_0 *const *x,
                                                                            const int32_t *const *corr,
                                                                            float *const *y, const int T) {
    __m256 acc[2][8];
    for (int t = 0; t < T; t++) {
        for (int c = 0; c < 8; c++) acc[t][c] = _mm256_setzero_ps();
    }
    const __m256i mask = _mm256_set1_epi8(0x0f);
    for (int b = 0; b < nb; b++) {
        _mm_prefetch((const char *)(w + b + CK_Q40_AHEAD), _MM_HINT_T0);
        _mm_prefetch((const char *)(w + b + CK_Q40_AHEAD) + 64, _MM_HINT_T0);
        _mm_prefetch((const char *)(w + b + CK_Q40_AHEAD) + 128, _MM_HINT_T0);
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].d));
        __m256i q[8];
        for (int c = 0; c < 4; c++) {
            const __m256i v = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * c));
            q[c] = _mm256_and_si256(v, mask);
            q[4 + c] = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
        }
        for (int t = 0; t < T; t++) {
            const ck_block_q8_0 *a = x[t] + b;
            const int32_t *cb = corr[t] + 8 * b;
            const __m256 d = _mm256_mul_ps(dw, _mm256_broadcastss_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(a->d))));
            for (int c = 0; c < 8; c++) {
                const __m256i s = _mm256_dpbusd_epi32(_mm256_set1_epi32(cb[c]), q[c], ck_bcast4(a->qs + 4 * c));
                acc[t][c] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(s), acc[t][c]);
            }
        }
    }
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y[t], ck_chunks_in_hsum8_order(acc[t]));
}

// tile_q4_0x8 for two neighbouring groups at once in 512-bit vectors: lanes 0-7 are group g's
// rows, lanes 8-15 group g + 1's, each lane's arithmetic exactly tile_q4_0x8's. The per-token
// work (vpdpbusd, conversion, FMA per chunk) is the same count of instructions for twice the
// rows: where the core runs 512-bit products on two ports (Intel's server cores) that halves
// the time of a prompt's products; where it splits them in two halves (Zen 4) it costs the
// same and saves front-end slots. The two groups' vectors are joined with one insert each,
// shared by the T tokens. Needs AVX-512F and VNNI only (CK_FORMS_VNNI): the nibble shift is
// done on 32-bit lanes, AVX-512BW's 16-bit one is not needed.
static inline __attribute__((always_inline)) CK_FORMS_VNNI void tile_q4_0x16(int nb, const ck_block_q4_0x8 *wa,
                                                                          const ck_block_q4_0x8 *wb,
                                                                          const ck_block_q8_0 *const *x,
                                                                          const int32_t *const *corr, float *const *y,
                                                                          const int T) {
    __m512 acc[2][8];
    for (int t = 0; t < T; t++) {
        for (int c = 0; c < 8; c++) acc[t][c] = _mm512_setzero_ps();
    }
    const __m512i mask = _mm512_set1_epi8(0x0f);
    for (int b = 0; b < nb; b++) {
        for (int l = 0; l < 192; l += 64) {
            _mm_prefetch((const char *)(wa + b + CK_Q40_AHEAD) + l, _MM_HINT_T0);
            _mm_prefetch((const char *)(wb + b + CK_Q40_AHEAD) + l, _MM_HINT_T0);
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
            const int32_t *cb = corr[t] + 8 * b;
            const __m512 d = _mm512_mul_ps(dw, _mm512_set1_ps(_cvtsh_ss(a->d)));
            for (int c = 0; c < 8; c++) {
                int32_t v;
                memcpy(&v, a->qs + 4 * c, 4);
                const __m512i s = _mm512_dpbusd_epi32(_mm512_set1_epi32(cb[c]), q[c], _mm512_set1_epi32(v));
                acc[t][c] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(s), acc[t][c]);
            }
        }
    }
    for (int t = 0; t < T; t++) {
        const __m512 *v = acc[t];
        const __m512 sum = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(v[0], v[4]), _mm512_add_ps(v[2], v[6])),
                                         _mm512_add_ps(_mm512_add_ps(v[1], v[5]), _mm512_add_ps(v[3], v[7])));
        _mm256_storeu_ps(y[t], _mm512_castps512_ps256(sum));
        _mm256_storeu_ps(y[t] + 8, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(sum), 1)));
    }
}

// Groups g0..<g1 in pairs through the 16-row kernel (an odd last group through the 8-row one),
// tokens two at a time.
CK_FORMS_VNNI static void groups_q4_0x8_vnni(int nb, const char *w, size_t group_bytes, int g0, int g1,
                                          const ck_block_q8_0 *const *x, const int32_t *const *corr, float *const *y,
                                          int T) {
    int g = g0;
#ifndef CK_Q40_NO_ZMM  // (-D for scripts: the 8-row kernel alone, to compare)
    for (; g + 2 <= g1; g += 2) {
        const ck_block_q4_0x8 *wa = (const ck_block_q4_0x8 *)(w + (size_t)g * group_bytes);
        const ck_block_q4_0x8 *wb = (const ck_block_q4_0x8 *)(w + (size_t)(g + 1) * group_bytes);
        float *yg[4];
        for (int t = 0; t < T; t++) yg[t] = y[t] + 8 * g;
        int t = 0;
        for (; t + 2 <= T; t += 2) tile_q4_0x16(nb, wa, wb, x + t, corr + t, yg + t, 2);
        if (t < T) tile_q4_0x16(nb, wa, wb, x + t, corr + t, yg + t, 1);
    }
#endif
    for (; g < g1; g++) {
        const ck_block_q4_0x8 *wg = (const ck_block_q4_0x8 *)(w + (size_t)g * group_bytes);
        float *yg[4];
        for (int t = 0; t < T; t++) yg[t] = y[t] + 8 * g;
        int t = 0;
        for (; t + 2 <= T; t += 2) tile_q4_0x8(nb, wg, x + t, corr + t, yg + t, 2);
        if (t < T) tile_q4_0x8(nb, wg, x + t, corr + t, yg + t, 1);
    }
}

// MARK: - AVX2 (no VNNI)

#ifndef CK_Q40_AHEAD_AVX2
#define CK_Q40_AHEAD_AVX2 18
#endif

// Eight rows against one token: AVX2's 16 registers hold one token's eight chunk accumulators,
// so tokens go one at a time over a group that stays in L1 (as Q4_1's AVX2 kernel). A chunk's
// sum is vpmaddubsw (nibbles × x), vpmaddwd by ones, plus the correction.
CK_FAST static void group_q4_0x8_avx2(int nb, const ck_block_q4_0x8 *w, const ck_block_q8_0 *x, const int32_t *corr,
                                      float *y) {
    __m256 acc[8];
    for (int c = 0; c < 8; c++) acc[c] = _mm256_setzero_ps();
    const __m256i mask = _mm256_set1_epi8(0x0f);
    const __m256i ones = _mm256_set1_epi16(1);
    for (int b = 0; b < nb; b++) {
        const char *ahead = (const char *)(w + b + CK_Q40_AHEAD_AVX2);
        _mm_prefetch(ahead, _MM_HINT_T0);
        _mm_prefetch(ahead + 64, _MM_HINT_T0);
        _mm_prefetch(ahead + 128, _MM_HINT_T0);
        const ck_block_q8_0 *a = x + b;
        const int32_t *cb = corr + 8 * b;
        const __m256 d = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].d)),
                                       _mm256_broadcastss_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(a->d))));
        for (int c = 0; c < 4; c++) {
            const __m256i v = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * c));
            const __m256i lo = _mm256_and_si256(v, mask);
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
            const __m256i slo = _mm256_add_epi32(
                _mm256_madd_epi16(_mm256_maddubs_epi16(lo, ck_bcast4(a->qs + 4 * c)), ones), _mm256_set1_epi32(cb[c]));
            const __m256i shi =
                _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(hi, ck_bcast4(a->qs + 16 + 4 * c)), ones),
                                 _mm256_set1_epi32(cb[4 + c]));
            acc[c] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(slo), acc[c]);
            acc[4 + c] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(shi), acc[4 + c]);
        }
    }
    _mm256_storeu_ps(y, ck_chunks_in_hsum8_order(acc));
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

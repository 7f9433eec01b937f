// MXFP4 (gpt-oss's experts) re-laid out at load time for eight rows per vector, as
// interleave_q4_0.c does for Q4_0.
//
// The per-row kernel (dot_mxfp4.c) pays, per row, token and block, a table lookup per nibble
// half, the sign trick, a horizontal widening and a scale: a prompt's expert products ran row by
// row. MXFP4 is Q4_0's shape with another value map: a nibble indexes the int8 table
// {0, ±1, ±2, ±3, ±4, ±6, ±8, ±12} and the block's scale is a power of two (an E8M0 byte). With
// eight rows in the lanes of a vector the nibbles are looked up once per weight vector (vpshufb)
// into the table plus 12, unsigned 0..24, and the 12 comes back as a correction that depends on
// the activations only:
//
//   sum_j v_j * x_j = sum_j (v_j + 12) * x_j - 12 * sum_j x_j        (exact, in int32)
//
// so per token, block and 4-value chunk, -12 * sum x is computed once and seeds vpdpbusd's
// accumulator for every row: one vpdpbusd, one conversion and one FMA per chunk for eight rows
// (sixteen with AVX-512: two neighbouring groups share one 512-bit vector).
//
// The float arithmetic is that of ggml_vec_dot_mxfp4_q8_0 on AVX2 (and of inferd's per-row
// dot_mxfp4_avx2/_vnni), row by row and bit for bit: a row's eight float lanes are the eight
// 4-value chunks of a block (chunk c: elements 4c..4c+3, the low nibbles of qs[4c..] for c < 4,
// the high nibbles of qs[4(c-4)..] after), blocks go in pairs into two accumulators (even blocks,
// odd blocks), each adding fp16(d_a) * 2^(e-128) (one rounding) times the chunk's exact integer
// sum in one FMA; the two accumulators are added lane by lane, the lanes in ck_hsum8's order, and
// an odd last block is added after that as the scalar tail does: d * (its integer sum), rounded,
// then added. Here chunk c and parity p have their own accumulator vector (lane r: row r).
#include <string.h>

#include "interleave_forms.h"

// ggml's doubled E2M1 values (kvalues_mxfp4) and the same plus 12 (0..24, vpdpbusd's unsigned side).
static const int8_t kvalues[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
static const int8_t kvalues_plus12[16] = {12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0};

size_t ck_mxfp4x8_group_bytes(int k) { return (size_t)(k / CK_QK) * sizeof(ck_block_mxfp4x8); }

void ck_interleave_mxfp4x8(const void *src, size_t src_row_bytes, int rows, int k, void *dst) {
    const int nb = k / CK_QK;
    for (int g = 0; g < rows / 8; g++) {
        ck_block_mxfp4x8 *out = (ck_block_mxfp4x8 *)((char *)dst + (size_t)g * ck_mxfp4x8_group_bytes(k));
        for (int b = 0; b < nb; b++, out++) {
            for (int r = 0; r < 8; r++) {
                const ck_block_mxfp4 *in = (const ck_block_mxfp4 *)((const char *)src + (size_t)(8 * g + r) * src_row_bytes) + b;
                out->e[r] = in->e;
                for (int c = 0; c < 4; c++) memcpy(out->qs + 32 * c + 4 * r, in->qs + 4 * c, 4);
            }
        }
    }
}

// MARK: - Portable (the reference beside the fast kernels)

// Chunk c's exact integer sum of row r of block w against the activation block a.
static int32_t chunk_sum(const ck_block_mxfp4x8 *w, int r, int c, const ck_block_q8_0 *a) {
    int32_t sum = 0;
    for (int j = 0; j < 4; j++) {
        const uint8_t byte = w->qs[32 * (c % 4) + 4 * r + j];
        sum += kvalues[c < 4 ? byte & 0x0f : byte >> 4] * a->qs[4 * c + j];
    }
    return sum;
}

// Eight rows against one activation row in the per-row AVX2 kernel's arithmetic (see the top).
static void group_mxfp4x8_portable(int nb, const ck_block_mxfp4x8 *w, const ck_block_q8_0 *a, float *y) {
    float acc[2][8][8] = {{{0}}};  // [parity][row][chunk]
    const int pairs = nb & ~1;
    for (int b = 0; b < pairs; b++) {
        const float da = ck_fp16_to_fp32(a[b].d);
        for (int r = 0; r < 8; r++) {
            const float d = da * ck_e8m0_to_fp32_half(w[b].e[r]);
            for (int c = 0; c < 8; c++) acc[b & 1][r][c] = fmaf(d, (float)chunk_sum(&w[b], r, c, &a[b]), acc[b & 1][r][c]);
        }
    }
    for (int r = 0; r < 8; r++) {
        float v[8];
        for (int c = 0; c < 8; c++) v[c] = acc[0][r][c] + acc[1][r][c];
        float sum = ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]));
        if (pairs < nb) {
            const int b = pairs;
            int32_t isum = 0;
            for (int c = 0; c < 8; c++) isum += chunk_sum(&w[b], r, c, &a[b]);
            const float d = ck_fp16_to_fp32(a[b].d) * ck_e8m0_to_fp32_half(w[b].e[r]);
            const float block = d * (float)isum;
            sum = sum + block;
        }
        y[r] = sum;
    }
}

#if CK_X86

// MARK: - The activations' corrections

// corr[8b + c] = -12 * (x_b's chunk c sum), for the nb blocks of one activation row: one
// vpmaddubsw of 12 (unsigned) by the bytes, one vpmaddwd by -1 per block (exact: |pairs| <= 3072).
CK_FAST static void corrections(int nb, const ck_block_q8_0 *x, int32_t *corr) {
    for (int b = 0; b < nb; b++) {
        const __m256i pairs = _mm256_maddubs_epi16(_mm256_set1_epi8(12), _mm256_loadu_si256((const __m256i *)x[b].qs));
        _mm256_storeu_si256((__m256i *)(corr + 8 * b), _mm256_madd_epi16(pairs, _mm256_set1_epi16(-1)));
    }
}

// The eight rows' 2^(e - 128) (ck_e8m0_to_fp32_half, lane r: row r): (e - 1) << 23 for e >= 2,
// the subnormal 0x00200000 << e below.
CK_FAST static inline __m256 half_scales8(const uint8_t *e) {
    const __m256i e32 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)e));
    const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e32, _mm256_set1_epi32(1)), 23);
    const __m256i subnormal = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e32);
    const __m256i small = _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e32);
    return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, subnormal, small));
}

// MARK: - AVX2 (and the VNNI path's odd group)

#ifndef CK_MX_AHEAD
#define CK_MX_AHEAD 18  // blocks of 136 bytes (~2.4 KiB)
#endif

// Eight rows against one token, the chunks in two passes (low nibbles: chunks 0-3, high: 4-7) so
// that a pass's eight accumulators (four chunks × two parities) and its weights fit AVX2's 16
// registers; a group of gpt-oss's 2880 columns is 12 KiB, in L1 for the second pass. A chunk's sum
// is vpmaddubsw (values + 12 by x; |pairs| <= 2 * 24 * 128), vpmaddwd by ones, plus the correction.
CK_FAST static void group_mxfp4x8_avx2(int nb, const ck_block_mxfp4x8 *w, const ck_block_q8_0 *x, const int32_t *corr,
                                       float *y) {
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)kvalues_plus12));
    const __m256i mask = _mm256_set1_epi8(0x0f);
    const __m256i ones = _mm256_set1_epi16(1);
    const int pairs = nb & ~1;
    __m256 v[8];
    for (int h = 0; h < 2; h++) {
        __m256 acc[2][4];
        for (int c = 0; c < 4; c++) acc[0][c] = acc[1][c] = _mm256_setzero_ps();
        for (int b = 0; b < pairs; b++) {
            if (h == 0) {
                const char *ahead = (const char *)(w + b + CK_AHEAD(CK_MX_AHEAD));
                _mm_prefetch(ahead, _MM_HINT_T0);
                _mm_prefetch(ahead + 64, _MM_HINT_T0);
                _mm_prefetch(ahead + 128, _MM_HINT_T0);
            }
            const ck_block_q8_0 *a = x + b;
            const int32_t *cb = corr + 8 * b + 4 * h;
            const __m256 d = _mm256_mul_ps(_mm256_broadcastss_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(a->d))), half_scales8(w[b].e));
            for (int c = 0; c < 4; c++) {
                const __m256i raw = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * c));
                const __m256i q = _mm256_shuffle_epi8(table, _mm256_and_si256(h ? _mm256_srli_epi16(raw, 4) : raw, mask));
                const __m256i s = _mm256_add_epi32(
                    _mm256_madd_epi16(_mm256_maddubs_epi16(q, ck_bcast4(a->qs + 16 * h + 4 * c)), ones), _mm256_set1_epi32(cb[c]));
                acc[b & 1][c] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(s), acc[b & 1][c]);
            }
        }
        for (int c = 0; c < 4; c++) v[4 * h + c] = _mm256_add_ps(acc[0][c], acc[1][c]);
    }
    __m256 sum = ck_chunks_in_hsum8_order(v);
    if (pairs < nb) {
        const int b = pairs;
        const ck_block_q8_0 *a = x + b;
        __m256i isum = _mm256_setzero_si256();
        for (int c = 0; c < 4; c++) {
            const __m256i raw = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * c));
            const __m256i lo = _mm256_shuffle_epi8(table, _mm256_and_si256(raw, mask));
            const __m256i hi = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(raw, 4), mask));
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(_mm256_maddubs_epi16(lo, ck_bcast4(a->qs + 4 * c)), ones));
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(_mm256_maddubs_epi16(hi, ck_bcast4(a->qs + 16 + 4 * c)), ones));
            isum = _mm256_add_epi32(isum, _mm256_set1_epi32(corr[8 * b + c] + corr[8 * b + 4 + c]));
        }
        const __m256 d = _mm256_mul_ps(_mm256_broadcastss_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(a->d))), half_scales8(w[b].e));
        sum = _mm256_add_ps(sum, _mm256_mul_ps(d, _mm256_cvtepi32_ps(isum)));
    }
    _mm256_storeu_ps(y, sum);
}

// MARK: - AVX-512 VNNI

// The table lookup on 512-bit vectors (vpshufb) needs AVX-512 BW besides VNNI.
#define CK_MX_VNNI __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))

// Two groups' eight scales (half_scales8) as one 16-lane vector.
static inline __attribute__((always_inline)) CK_MX_VNNI __m512 half_scales16(const uint8_t *ea, const uint8_t *eb) {
    return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(half_scales8(ea))),
                                               _mm256_castps_pd(half_scales8(eb)), 1));
}

// Sixteen rows (groups g and g + 1: lanes 0-7 and 8-15) × T tokens (T = 1 or 2 after inlining):
// the same two passes, each weight vector loaded (one insert joins the groups), looked up once
// for the T tokens; a chunk's sum is one vpdpbusd seeded with the correction, the activations'
// four bytes broadcast to every lane.
static inline __attribute__((always_inline)) CK_MX_VNNI void tile_mxfp4x16(int nb, const ck_block_mxfp4x8 *wa,
                                                                            const ck_block_mxfp4x8 *wb,
                                                                            const ck_block_q8_0 *const *x,
                                                                            const int32_t *const *corr,
                                                                            float *const *y, const int T) {
    const __m512i table = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)kvalues_plus12));
    const __m512i mask = _mm512_set1_epi8(0x0f);
    const int pairs = nb & ~1;
    __m512 v[2][8];
    for (int h = 0; h < 2; h++) {
        __m512 acc[2][2][4];  // [token][parity][chunk]
        for (int t = 0; t < T; t++) {
            for (int c = 0; c < 4; c++) acc[t][0][c] = acc[t][1][c] = _mm512_setzero_ps();
        }
        for (int b = 0; b < pairs; b++) {
            if (h == 0) {
                _mm_prefetch((const char *)(wa + b + CK_AHEAD(CK_MX_AHEAD)), _MM_HINT_T0);
                _mm_prefetch((const char *)(wa + b + CK_AHEAD(CK_MX_AHEAD)) + 64, _MM_HINT_T0);
                _mm_prefetch((const char *)(wa + b + CK_AHEAD(CK_MX_AHEAD)) + 128, _MM_HINT_T0);
                _mm_prefetch((const char *)(wb + b + CK_AHEAD(CK_MX_AHEAD)), _MM_HINT_T0);
                _mm_prefetch((const char *)(wb + b + CK_AHEAD(CK_MX_AHEAD)) + 64, _MM_HINT_T0);
                _mm_prefetch((const char *)(wb + b + CK_AHEAD(CK_MX_AHEAD)) + 128, _MM_HINT_T0);
            }
            const __m512 hs = half_scales16(wa[b].e, wb[b].e);
            __m512i q[4];
            for (int c = 0; c < 4; c++) {
                __m512i raw = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(wa[b].qs + 32 * c)));
                raw = _mm512_inserti64x4(raw, _mm256_loadu_si256((const __m256i *)(wb[b].qs + 32 * c)), 1);
                if (h) raw = _mm512_srli_epi32(raw, 4);
                q[c] = _mm512_shuffle_epi8(table, _mm512_and_si512(raw, mask));
            }
            for (int t = 0; t < T; t++) {
                const ck_block_q8_0 *a = x[t] + b;
                const int32_t *cb = corr[t] + 8 * b + 4 * h;
                const __m512 d = _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(a->d)), hs);
                for (int c = 0; c < 4; c++) {
                    int32_t xs;
                    memcpy(&xs, a->qs + 16 * h + 4 * c, 4);
                    const __m512i s = _mm512_dpbusd_epi32(_mm512_set1_epi32(cb[c]), q[c], _mm512_set1_epi32(xs));
                    acc[t][b & 1][c] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(s), acc[t][b & 1][c]);
                }
            }
        }
        for (int t = 0; t < T; t++) {
            for (int c = 0; c < 4; c++) v[t][4 * h + c] = _mm512_add_ps(acc[t][0][c], acc[t][1][c]);
        }
    }
    for (int t = 0; t < T; t++) {
        const __m512 *u = v[t];
        __m512 sum = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(u[0], u[4]), _mm512_add_ps(u[2], u[6])),
                                   _mm512_add_ps(_mm512_add_ps(u[1], u[5]), _mm512_add_ps(u[3], u[7])));
        if (pairs < nb) {
            const int b = pairs;
            const ck_block_q8_0 *a = x[t] + b;
            __m512i isum = _mm512_setzero_si512();
            for (int c = 0; c < 4; c++) {
                __m512i raw = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(wa[b].qs + 32 * c)));
                raw = _mm512_inserti64x4(raw, _mm256_loadu_si256((const __m256i *)(wb[b].qs + 32 * c)), 1);
                const __m512i lo = _mm512_shuffle_epi8(table, _mm512_and_si512(raw, mask));
                const __m512i hi = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi32(raw, 4), mask));
                int32_t xl, xh;
                memcpy(&xl, a->qs + 4 * c, 4);
                memcpy(&xh, a->qs + 16 + 4 * c, 4);
                isum = _mm512_dpbusd_epi32(isum, lo, _mm512_set1_epi32(xl));
                isum = _mm512_dpbusd_epi32(isum, hi, _mm512_set1_epi32(xh));
                isum = _mm512_add_epi32(isum, _mm512_set1_epi32(corr[t][8 * b + c] + corr[t][8 * b + 4 + c]));
            }
            const __m512 hs = half_scales16(wa[b].e, wb[b].e);
            const __m512 d = _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(a->d)), hs);
            sum = _mm512_add_ps(sum, _mm512_mul_ps(d, _mm512_cvtepi32_ps(isum)));
        }
        _mm512_storeu_ps(y[t], sum);
    }
}

// Groups g0..<g1 against T <= 4 tokens with the AVX2 kernel, one token at a time.
CK_FAST static void groups_mxfp4x8_avx2(int nb, const char *w, size_t group_bytes, int g0, int g1,
                                        const ck_block_q8_0 *const *x, const int32_t *const *corr, float *const *y,
                                        int T) {
    for (int g = g0; g < g1; g++) {
        const ck_block_mxfp4x8 *wg = (const ck_block_mxfp4x8 *)(w + (size_t)g * group_bytes);
        for (int t = 0; t < T; t++) group_mxfp4x8_avx2(nb, wg, x[t], corr[t], y[t] + 8 * g);
    }
}

// Groups g0..<g1 against T <= 4 tokens: pairs of groups in 512-bit tiles of up to two tokens, an
// odd last group with the AVX2 kernel (the same bits).
CK_MX_VNNI static void groups_mxfp4x8_vnni(int nb, const char *w, size_t group_bytes, int g0, int g1,
                                              const ck_block_q8_0 *const *x, const int32_t *const *corr, float *const *y,
                                              int T) {
    int g = g0;
    for (; g + 2 <= g1; g += 2) {
        const ck_block_mxfp4x8 *wa = (const ck_block_mxfp4x8 *)(w + (size_t)g * group_bytes);
        const ck_block_mxfp4x8 *wb = (const ck_block_mxfp4x8 *)(w + (size_t)(g + 1) * group_bytes);
        float *yg[4];
        for (int t = 0; t < T; t++) yg[t] = y[t] + 8 * g;
        int t = 0;
        for (; t + 2 <= T; t += 2) tile_mxfp4x16(nb, wa, wb, x + t, corr + t, yg + t, 2);
        if (t < T) tile_mxfp4x16(nb, wa, wb, x + t, corr + t, yg + t, 1);
    }
    if (g < g1) {
        const ck_block_mxfp4x8 *wg = (const ck_block_mxfp4x8 *)(w + (size_t)g * group_bytes);
        for (int t = 0; t < T; t++) group_mxfp4x8_avx2(nb, wg, x[t], corr[t], y[t] + 8 * g);
    }
}
#endif

// MARK: - Matrix product over a range of rows

// Rows r0..<r1 (multiples of 8), every token: passes of rows, tiles of up to four tokens
// (ck_matmul_corrected_passes); the portable kernel past one token's worth of corrections.
void ck_matmul_mxfp4x8_rows(const ck_matmul_args *p, int r0, int r1, int fast) {
    const int nb = p->k / CK_QK;
    const char *w = (const char *)p->w;
    const char *x = (const char *)p->x;
#if CK_X86
    if (fast != CK_INTERLEAVED_PORTABLE &&
        ck_matmul_corrected_passes(p, r0, r1, corrections,
                                   fast == CK_INTERLEAVED_VNNI && ck_cpu_avx512bw ? groups_mxfp4x8_vnni
                                                                                 : groups_mxfp4x8_avx2)) {
        return;
    }
#endif
    (void)fast;
    for (int t = 0; t < p->n; t++) {
        const ck_block_q8_0 *xt = (const ck_block_q8_0 *)(x + (size_t)t * p->x_row_bytes);
        for (int g = r0 / 8; g < r1 / 8; g++) {
            group_mxfp4x8_portable(nb, (const ck_block_mxfp4x8 *)(w + (size_t)g * p->w_row_bytes), xt,
                                   p->y + (size_t)t * p->ldy + 8 * g);
        }
    }
}

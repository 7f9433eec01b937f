// Q5_1 re-laid out at load time for eight rows per vector, as interleave.c does for Q4_1.
//
// Q5_1 is Q4_1 with a fifth bit: value = d * q + m, q in 0..31. Its per-row kernel (dot_legacy.c,
// ggml's AVX2 one) spends, per row, token and block, a nibble unpack, a byte mask made from the
// 32 fifth bits (a shuffle, an or, a compare), a horizontal reduction and two scale conversions:
// a 1.7B model's prompts ran at a third of llama.cpp's speed on it. Here, as in Q4_1 × 8, lane r
// of vector c holds row r's bytes 4c..4c+3, so one vpdpbusd gives eight rows' chunk sums; the
// fifth bits are kept packed as a byte mask per chunk (bit 4r + j: row r, element 4c + j, the
// layout Q5_0 × 8 uses), and one masked byte add (+16 where the bit is set) completes the
// values. The values are unsigned, so they go into vpdpbusd's u8 operand as they are, with the
// activations as its s8 one: no sign trick, no correction. The form is the file's 24 bytes per
// row and block, so decode reads no more than the file would (widening the values to bytes
// would read 1.5× as much). Five tokens or more go through the 16-lane kernel
// (interleave_wide.c: two groups per AVX-512 vector).
//
// The float arithmetic is that of ggml's vec_dot_q5_1_q8_1 on AVX2/AVX-512 and of inferd's
// dot_q5_1_fast, row by row and bit for bit: its eight float lanes are the eight 4-value chunks of
// a block; each block adds fp16(d_w) * fp16(d_a) (one rounding) times the chunk's exact integer
// sum in one FMA; the m * s terms form their own FMA chain over the blocks; at the end the lanes
// are added in ck_hsum8's order and the m * s sum added last. Here chunk c has its own
// accumulator vector (lane r: row r) and the m * s chain is one vector for eight rows. The
// integer sums are exact everywhere (|sum| <= 4 * 31 * 128).
//
// The VNNI kernels need AVX-512 BW for the masked byte add (vpaddb with a mask); CPUs with AVX2
// alone read the form with interleave_q5_1_avx2.c's kernels.
#include <string.h>

#include "interleave_forms.h"

size_t ck_q5_1x8_group_bytes(int k) { return (size_t)(k / CK_QK) * sizeof(ck_block_q5_1x8); }

void ck_interleave_q5_1x8(const void *src, size_t src_row_bytes, int rows, int k, void *dst) {
    const int nb = k / CK_QK;
    for (int g = 0; g < rows / 8; g++) {
        ck_block_q5_1x8 *out = (ck_block_q5_1x8 *)((char *)dst + (size_t)g * ck_q5_1x8_group_bytes(k));
        for (int b = 0; b < nb; b++, out++) {
            memset(out->hm, 0, sizeof(out->hm));
            for (int r = 0; r < 8; r++) {
                const ck_block_q5_1 *in = (const ck_block_q5_1 *)((const char *)src + (size_t)(8 * g + r) * src_row_bytes) + b;
                uint32_t qh;
                memcpy(&qh, in->qh, 4);
                out->d[r] = in->d;
                out->m[r] = in->m;
                for (int c = 0; c < 4; c++) memcpy(out->qs + 32 * c + 4 * r, in->qs + 4 * c, 4);
                for (int c = 0; c < 8; c++) out->hm[c] |= ((qh >> (4 * c)) & 0xfu) << (4 * r);
            }
        }
    }
}

// MARK: - Portable (the reference beside the fast kernels)

// Eight rows against one activation row, lane by lane the arithmetic of dot_q5_1_fast: chunk c
// (elements 4c..4c+3: low nibbles of vector c for c < 4, high nibbles of vector c - 4 after, plus
// 16 where hm[c] has the bit) has its own accumulator, one FMA of its exact integer sum per
// block; the m * s chain apart; ck_hsum8's order, then the m * s sum, last.
static void group_q5_1x8_portable(int nb, const ck_block_q5_1x8 *w, const ck_block_q8_1 *a, float *y) {
    float acc[8][8] = {{0}}, macc[8] = {0};
    for (int b = 0; b < nb; b++) {
        const float da = ck_fp16_to_fp32(a[b].d), sa = ck_fp16_to_fp32(a[b].s);
        for (int r = 0; r < 8; r++) {
            const float d = ck_fp16_to_fp32(w[b].d[r]) * da;
            for (int c = 0; c < 8; c++) {
                int32_t sum = 0;
                for (int j = 0; j < 4; j++) {
                    const uint8_t byte = w[b].qs[32 * (c % 4) + 4 * r + j];
                    const int nib = c < 4 ? byte & 0x0f : byte >> 4;
                    const int q = nib | (int)(((w[b].hm[c] >> (4 * r + j)) & 1) << 4);
                    sum += q * a[b].qs[4 * c + j];
                }
                acc[r][c] = fmaf(d, (float)sum, acc[r][c]);
            }
            macc[r] = fmaf(ck_fp16_to_fp32(w[b].m[r]), sa, macc[r]);
        }
    }
    for (int r = 0; r < 8; r++) {
        const float *v = acc[r];
        y[r] = (((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]))) + macc[r];
    }
}

#if CK_X86
// MARK: - AVX-512 VNNI (eight lanes: one to four tokens)

#define CK_Q51_VNNI __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
#ifndef CK_Q51_AHEAD
#define CK_Q51_AHEAD 13  // blocks of 192 bytes (~2.5 KiB, the Q4_1 kernel's distance)
#endif

// Eight rows × T tokens (T = 1 or 2 after inlining): each weight vector is loaded and unpacked
// once for the T tokens; per lane, tile_q4_1x8's arithmetic (interleave.c) on the 5-bit values.
static inline __attribute__((always_inline)) CK_Q51_VNNI void tile_q5_1x8(int nb, const ck_block_q5_1x8 *w,
                                                                          const ck_block_q8_1 *const *x, float *const *y,
                                                                          const int T) {
    __m256 acc[2][8], macc[2];
    for (int t = 0; t < T; t++) {
        macc[t] = _mm256_setzero_ps();
        for (int c = 0; c < 8; c++) acc[t][c] = _mm256_setzero_ps();
    }
    const __m256i mask = _mm256_set1_epi8(0x0f);
    const __m256i fifth = _mm256_set1_epi8(0x10);
    for (int b = 0; b < nb; b++) {
        _mm_prefetch((const char *)(w + b + CK_AHEAD(CK_Q51_AHEAD)), _MM_HINT_T0);
        _mm_prefetch((const char *)(w + b + CK_AHEAD(CK_Q51_AHEAD)) + 64, _MM_HINT_T0);
        _mm_prefetch((const char *)(w + b + CK_AHEAD(CK_Q51_AHEAD)) + 128, _MM_HINT_T0);
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].d));
        const __m256 mw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].m));
        __m256i q[8];
        for (int c = 0; c < 4; c++) {
            const __m256i v = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * c));
            const __m256i lo = _mm256_and_si256(v, mask);
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
            q[c] = _mm256_mask_add_epi8(lo, (__mmask32)w[b].hm[c], lo, fifth);
            q[4 + c] = _mm256_mask_add_epi8(hi, (__mmask32)w[b].hm[4 + c], hi, fifth);
        }
        for (int t = 0; t < T; t++) {
            const ck_block_q8_1 *a = x[t] + b;
            int32_t ds;
            memcpy(&ds, a, 4);
            const __m128 das = _mm_cvtph_ps(_mm_cvtsi32_si128(ds));
            const __m256 d = _mm256_mul_ps(dw, _mm256_broadcastss_ps(das));
            macc[t] = _mm256_fmadd_ps(mw, _mm256_broadcastss_ps(_mm_movehdup_ps(das)), macc[t]);
            for (int c = 0; c < 8; c++) {
                const __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), q[c], ck_bcast4(a->qs + 4 * c));
                acc[t][c] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(s), acc[t][c]);
            }
        }
    }
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y[t], _mm256_add_ps(ck_chunks_in_hsum8_order(acc[t]), macc[t]));
}

CK_Q51_VNNI static void groups_q5_1x8_vnni(int nb, const char *w, size_t group_bytes, int g0, int g1,
                                           const ck_block_q8_1 *const *x, float *const *y, int T) {
    for (int g = g0; g < g1; g++) {
        const ck_block_q5_1x8 *wg = (const ck_block_q5_1x8 *)(w + (size_t)g * group_bytes);
        float *yg[4];
        for (int t = 0; t < T; t++) yg[t] = y[t] + 8 * g;
        int t = 0;
        for (; t + 2 <= T; t += 2) tile_q5_1x8(nb, wg, x + t, yg + t, 2);
        if (t < T) tile_q5_1x8(nb, wg, x + t, yg + t, 1);
    }
}
#endif

// MARK: - Matrix product over a range of rows

// Rows r0..<r1 (multiples of 8), every token: five tokens or more through the 16-lane kernel
// (interleave_wide.c), fewer in tiles of up to four over the rows (a chunk's rows stay in L2
// while the tiles pass), as interleave.c takes Q4_1.
void ck_matmul_q5_1x8_rows(const ck_matmul_args *p, int r0, int r1, int fast) {
    const int nb = p->k / CK_QK;
    const char *w = (const char *)p->w;
    const char *x = (const char *)p->x;
#if CK_X86
    if (fast == CK_INTERLEAVED_VNNI && ck_cpu_avx512bw) {
        if (p->n >= 5 && ck_wide_groups_enabled() && ck_matmul_x16_rows(p, r0, r1)) return;
        for (int t0 = 0; t0 < p->n; t0 += 4) {
            const int T = p->n - t0 < 4 ? p->n - t0 : 4;
            const ck_block_q8_1 *xs[4];
            float *ys[4];
            for (int t = 0; t < T; t++) {
                xs[t] = (const ck_block_q8_1 *)(x + (size_t)(t0 + t) * p->x_row_bytes);
                ys[t] = p->y + (size_t)(t0 + t) * p->ldy;
            }
            groups_q5_1x8_vnni(nb, w, p->w_row_bytes, r0 / 8, r1 / 8, xs, ys, T);
        }
        return;
    }
    if (fast != CK_INTERLEAVED_PORTABLE) {  // AVX2, or VNNI without BW
        ck_matmul_q5_1x8_rows_avx2(p, r0, r1);
        return;
    }
#endif
    (void)fast;
    for (int t = 0; t < p->n; t++) {
        const ck_block_q8_1 *xt = (const ck_block_q8_1 *)(x + (size_t)t * p->x_row_bytes);
        for (int g = r0 / 8; g < r1 / 8; g++) {
            group_q5_1x8_portable(nb, (const ck_block_q5_1x8 *)(w + (size_t)g * p->w_row_bytes), xt,
                                  p->y + (size_t)t * p->ldy + 8 * g);
        }
    }
}

// Weights re-laid out at load time so one VNNI instruction serves eight rows.
//
// In the file's layout each row is a run of blocks, and a dot product ends every block with a
// horizontal reduction, a scale conversion and a shuffle per row. Interleaving eight rows per
// 32-column block puts row r's bytes 4c..4c+3 in lane r of vector c: `vpdpbusd` against the
// activation's bytes 4c..4c+3 broadcast then leaves row r's partial dot in lane r, the eight
// rows' block sums come out as one vector, and the eight scales are one conversion. Per row and
// block that is about a third of the instructions, enough to make decode memory-bound.
//
// Every form keeps the per-row kernels' float order exactly (see tile_q4_1x8): each 4-value
// chunk's exact integer sum, scaled in one FMA, the chunks added in ck_hsum8's order at the end.
// CPUs with AVX2 and no VNNI read the Q4_1 and Q8_0 forms with the kernels of interleave_avx2.c,
// which keep the per-row AVX2 order for both.
//
// Q5_0 has two forms. With AVX-512 BW and VNNI its fifth bits stay packed (ck_block_q5_0x8,
// unpacked by a mask blend per chunk). Without them, unpacking those bits costs more than the
// product itself (AVX2 has no byte mask from bits: a shuffle, an or and a compare per chunk), so
// there Q5_0 is widened at load time into the Q8_0 form: q - 16 in [-16, 15] is an int8, the
// block scale is the same fp16, so d * (q - 16) is the same value and every chunk's integer sum
// and FMA are those of the per-row Q5_0 kernel, bit for bit (same order as Q8_0's kernels). The
// cost is memory: 34 bytes per block instead of 22.
#include <string.h>

#include "interleave_forms.h"

// The layouts (ck_block_q4_1x8 and the others) are in interleave_forms.h.

// The form Q5_0 is interleaved into: its own where the VNNI kernel can unpack it (as the kernels
// are picked now: ck_set_vnni(0) makes the AVX2 choice on any CPU), else Q8_0's.
static int q5_0_form(void) {
#if CK_X86
    if (ck_cpu_has_vnni() && ck_cpu_avx512bw) return CK_TYPE_Q5_0_X8;
#endif
    return CK_TYPE_Q8_0_X8;
}

size_t ck_interleaved_group_bytes(int type, int k) {
    if (type == CK_TYPE_Q4_K) return k > 0 && k % CK_QK_K == 0 ? ck_q4_kx8_group_bytes(k) : 0;
    if (type == CK_TYPE_Q5_K) return k > 0 && k % CK_QK_K == 0 ? ck_q5_kx8_group_bytes(k) : 0;
    if (type == CK_TYPE_Q6_K) return k > 0 && k % CK_QK_K == 0 ? ck_q6_kx8_group_bytes(k) : 0;
    if (type == CK_TYPE_Q3_K) return k > 0 && k % CK_QK_K == 0 ? ck_q3_kx8_group_bytes(k) : 0;
    if (type == CK_TYPE_Q2_K) return k > 0 && k % CK_QK_K == 0 ? ck_q2_kx8_group_bytes(k) : 0;
    if (k <= 0 || k % CK_QK != 0) return 0;
    const size_t nb = (size_t)(k / CK_QK);
    switch (type) {
    case CK_TYPE_Q4_0: return ck_q4_0x8_group_bytes(k);
    case CK_TYPE_MXFP4: return ck_mxfp4x8_group_bytes(k);
    case CK_TYPE_Q4_1: return nb * sizeof(ck_block_q4_1x8);
    case CK_TYPE_Q5_1: return ck_q5_1x8_group_bytes(k);
    case CK_TYPE_Q8_0: return nb * sizeof(ck_block_q8_0x8);
    case CK_TYPE_Q5_0: return nb * (q5_0_form() == CK_TYPE_Q5_0_X8 ? sizeof(ck_block_q5_0x8) : sizeof(ck_block_q8_0x8));
    default: return 0;
    }
}

// Eight Q5_0 rows' block b widened into the Q8_0 form: q - 16 as int8, the same scale.
static void widen_q5_0_block(const char *src, size_t src_row_bytes, int b, ck_block_q8_0x8 *out) {
    for (int r = 0; r < 8; r++) {
        const ck_block_q5_0 *in = (const ck_block_q5_0 *)(src + (size_t)r * src_row_bytes) + b;
        uint32_t qh;
        memcpy(&qh, in->qh, 4);
        out->d[r] = in->d;
        for (int e = 0; e < CK_QK; e++) {
            const int nib = e < 16 ? in->qs[e] & 0x0f : in->qs[e - 16] >> 4;
            const int q = nib | (int)(((qh >> e) & 1) << 4);
            out->qs[32 * (e / 4) + 4 * r + e % 4] = (uint8_t)(int8_t)(q - 16);
        }
    }
}

int ck_interleave(int type, const void *src, size_t src_row_bytes, int rows, int k, void *dst) {
    const size_t group_bytes = ck_interleaved_group_bytes(type, k);
    if (group_bytes == 0 || rows <= 0 || rows % 8 != 0) return -1;
    if (type == CK_TYPE_Q4_K) {
        ck_interleave_q4_kx8(src, src_row_bytes, rows, k, dst);
        return CK_TYPE_Q4_K_X8;
    }
    if (type == CK_TYPE_Q5_K) {
        ck_interleave_q5_kx8(src, src_row_bytes, rows, k, dst);
        return CK_TYPE_Q5_K_X8;
    }
    if (type == CK_TYPE_Q6_K) {
        ck_interleave_q6_kx8(src, src_row_bytes, rows, k, dst);
        return CK_TYPE_Q6_K_X8;
    }
    if (type == CK_TYPE_Q3_K) {
        ck_interleave_q3_kx8(src, src_row_bytes, rows, k, dst);
        return CK_TYPE_Q3_K_X8;
    }
    if (type == CK_TYPE_Q2_K) {
        ck_interleave_q2_kx8(src, src_row_bytes, rows, k, dst);
        return CK_TYPE_Q2_K_X8;
    }
    if (type == CK_TYPE_Q4_0) {
        ck_interleave_q4_0x8(src, src_row_bytes, rows, k, dst);
        return CK_TYPE_Q4_0_X8;
    }
    if (type == CK_TYPE_Q5_1) {
        ck_interleave_q5_1x8(src, src_row_bytes, rows, k, dst);
        return CK_TYPE_Q5_1_X8;
    }
    if (type == CK_TYPE_MXFP4) {
        ck_interleave_mxfp4x8(src, src_row_bytes, rows, k, dst);
        return CK_TYPE_MXFP4_X8;
    }
    const int nb = k / CK_QK;
    const int form = type == CK_TYPE_Q4_1 ? CK_TYPE_Q4_1_X8 : type == CK_TYPE_Q5_0 ? q5_0_form() : CK_TYPE_Q8_0_X8;
    for (int g = 0; g < rows / 8; g++) {
        for (int b = 0; b < nb; b++) {
            if (type == CK_TYPE_Q5_0 && form == CK_TYPE_Q8_0_X8) {
                widen_q5_0_block((const char *)src + (size_t)(8 * g) * src_row_bytes, src_row_bytes, b,
                                 (ck_block_q8_0x8 *)((char *)dst + (size_t)g * group_bytes) + b);
            } else if (type == CK_TYPE_Q4_1) {
                ck_block_q4_1x8 *out = (ck_block_q4_1x8 *)((char *)dst + (size_t)g * group_bytes) + b;
                for (int r = 0; r < 8; r++) {
                    const ck_block_q4_1 *in =
                        (const ck_block_q4_1 *)((const char *)src + (size_t)(8 * g + r) * src_row_bytes) + b;
                    out->d[r] = in->d;
                    out->m[r] = in->m;
                    for (int c = 0; c < 4; c++) memcpy(out->qs + 32 * c + 4 * r, in->qs + 4 * c, 4);
                }
            } else if (type == CK_TYPE_Q5_0) {
                ck_block_q5_0x8 *out = (ck_block_q5_0x8 *)((char *)dst + (size_t)g * group_bytes) + b;
                memset(out->hm, 0, sizeof(out->hm));
                for (int r = 0; r < 8; r++) {
                    const ck_block_q5_0 *in =
                        (const ck_block_q5_0 *)((const char *)src + (size_t)(8 * g + r) * src_row_bytes) + b;
                    uint32_t qh;
                    memcpy(&qh, in->qh, 4);
                    out->d[r] = in->d;
                    for (int c = 0; c < 4; c++) memcpy(out->qs + 32 * c + 4 * r, in->qs + 4 * c, 4);
                    for (int c = 0; c < 8; c++) out->hm[c] |= ((qh >> (4 * c)) & 0xfu) << (4 * r);
                }
            } else {
                ck_block_q8_0x8 *out = (ck_block_q8_0x8 *)((char *)dst + (size_t)g * group_bytes) + b;
                for (int r = 0; r < 8; r++) {
                    const ck_block_q8_0 *in =
                        (const ck_block_q8_0 *)((const char *)src + (size_t)(8 * g + r) * src_row_bytes) + b;
                    out->d[r] = in->d;
                    for (int c = 0; c < 8; c++) {
                        for (int j = 0; j < 4; j++) out->qs[32 * c + 4 * r + j] = (uint8_t)in->qs[4 * c + j];
                    }
                }
            }
        }
    }
    return form;
}

// MARK: - Portable kernels (the reference beside the fast ones, and CPUs without VNNI)

// The same arithmetic as the fast kernels, lane by lane (see tile_q4_1x8 for Q4_1's order).
static void group_q4_1x8_portable(int nb, const ck_block_q4_1x8 *w, const ck_block_q8_1 *a, float *y) {
    float acc[8][8] = {{0}}, macc[8] = {0};
    for (int b = 0; b < nb; b++) {
        const float da = ck_fp16_to_fp32(a[b].d), sa = ck_fp16_to_fp32(a[b].s);
        for (int r = 0; r < 8; r++) {
            const float d = ck_fp16_to_fp32(w[b].d[r]) * da;
            for (int c = 0; c < 8; c++) {
                const int e = c < 4 ? 4 * c : 16 + 4 * (c - 4);
                int32_t sum = 0;
                for (int j = 0; j < 4; j++) {
                    const uint8_t q = w[b].qs[32 * (c % 4) + 4 * r + j];
                    sum += (int32_t)(c < 4 ? q & 0x0f : q >> 4) * a[b].qs[e + j];
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

// Q5_0 × 8 in the order of the per-row kernels (dot_legacy.c): lane c of a row's accumulator
// is chunk c (elements 4c..4c+3), one FMA of the block scale per chunk, ck_hsum8's order last.
static void group_q5_0x8_portable(int nb, const ck_block_q5_0x8 *w, const ck_block_q8_0 *a, float *y) {
    float acc[8][8] = {{0}};
    for (int b = 0; b < nb; b++) {
        const float da = ck_fp16_to_fp32(a[b].d);
        for (int r = 0; r < 8; r++) {
            const float d = ck_fp16_to_fp32(w[b].d[r]) * da;
            for (int c = 0; c < 8; c++) {
                int32_t sum = 0;
                for (int j = 0; j < 4; j++) {
                    const uint8_t byte = w[b].qs[32 * (c % 4) + 4 * r + j];
                    const int nib = c < 4 ? byte & 0x0f : byte >> 4;
                    const int q = nib | (int)(((w[b].hm[c] >> (4 * r + j)) & 1) << 4);
                    sum += (q - 16) * a[b].qs[4 * c + j];
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

// Q8_0 × 8 in the order of the per-row kernels and of ggml's Q8_0 products (its per-row AVX2
// kernel and llamafile's batched tiles, which agree): chunk c (elements 4c..4c+3) of each block
// has its own accumulator, its exact integer sum scaled in one FMA by fp16(d_w) * fp16(d_a),
// the chunks added in ck_hsum8's order at the end. Stored bytes are q (int8).
static void group_q8_0x8_portable(int nb, const ck_block_q8_0x8 *w, const ck_block_q8_0 *a, float *y) {
    float acc[8][8] = {{0}};
    for (int b = 0; b < nb; b++) {
        const float da = ck_fp16_to_fp32(a[b].d);
        for (int r = 0; r < 8; r++) {
            const float d = ck_fp16_to_fp32(w[b].d[r]) * da;
            for (int c = 0; c < 8; c++) {
                int32_t sum = 0;
                for (int j = 0; j < 4; j++) sum += (int32_t)(int8_t)w[b].qs[32 * c + 4 * r + j] * a[b].qs[4 * c + j];
                acc[r][c] = fmaf(d, (float)sum, acc[r][c]);
            }
        }
    }
    for (int r = 0; r < 8; r++) {
        const float *v = acc[r];
        y[r] = ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]));
    }
}

// MARK: - VNNI kernels

#if CK_X86
#define CK_Q41_AHEAD 16  // blocks of 160 bytes
#define CK_Q80_AHEAD 9   // blocks of 272 bytes
#define CK_Q50_AHEAD 14  // blocks of 176 bytes
#define CK_VNNI __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))

// One Q8_0 activation block against eight rows' signed chunks q[c] (lane r: row r's
// values 4c..4c+3): each chunk's exact integer sum, |q| (128 for -128 reads as unsigned 128)
// times x with q's sign, scaled by fp16(d_w) * fp16(d_a) in one FMA into acc[c].
static inline __attribute__((always_inline)) CK_VNNI void add_signed_chunks(__m256 *acc, const __m256i *q, __m256 dw,
                                                                            const ck_block_q8_0 *a) {
    const __m256 d = _mm256_mul_ps(dw, _mm256_broadcastss_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(a->d))));
    for (int c = 0; c < 8; c++) {
        const __m256i s =
            _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_abs_epi8(q[c]), _mm256_sign_epi8(ck_bcast4(a->qs + 4 * c), q[c]));
        acc[c] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(s), acc[c]);
    }
}

// Eight rows × T tokens (T = 1 or 2, a constant after inlining): each weight vector is loaded
// and unpacked once for all T tokens. The float arithmetic is that of ggml's AVX2 Q4_1 kernel,
// row by row and bit for bit: its eight lanes are the eight 4-element chunks of a block, so
// here chunk c keeps its own accumulator vector (lane r = row r), the block scale d_w * d_a
// multiplies each chunk's integer sum in an FMA, and the chunks are added at the end in the
// order of its horizontal sum. The model's answers depend on that rounding (this small model
// turns last-bit differences into different tokens), so the order is kept, not improved.
static inline __attribute__((always_inline)) CK_VNNI void tile_q4_1x8(int nb, const ck_block_q4_1x8 *w,
                                                                      const ck_block_q8_1 *const *x, float *const *y,
                                                                      const int T) {
    __m256 acc[2][8], macc[2];
    for (int t = 0; t < T; t++) {
        macc[t] = _mm256_setzero_ps();
        for (int c = 0; c < 8; c++) acc[t][c] = _mm256_setzero_ps();
    }
    const __m256i mask = _mm256_set1_epi8(0x0f);
    for (int b = 0; b < nb; b++) {
        // About 2.5 KiB ahead: the distance that took a single-core read sweep here from
        // 10.2 to 11.3 GB/s (decode is bound by it).
        _mm_prefetch((const char *)(w + b + CK_AHEAD(CK_Q41_AHEAD)), _MM_HINT_T0);
        _mm_prefetch((const char *)(w + b + CK_AHEAD(CK_Q41_AHEAD)) + 64, _MM_HINT_T0);
        _mm_prefetch((const char *)(w + b + CK_AHEAD(CK_Q41_AHEAD)) + 128, _MM_HINT_T0);
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].d));
        const __m256 mw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].m));
        __m256i q[8];
        for (int c = 0; c < 4; c++) {
            const __m256i v = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * c));
            q[c] = _mm256_and_si256(v, mask);
            q[4 + c] = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
        }
        for (int t = 0; t < T; t++) {
            const ck_block_q8_1 *a = x[t] + b;
            int32_t ds;
            memcpy(&ds, a, 4);
            const __m128 das = _mm_cvtph_ps(_mm_cvtsi32_si128(ds));
            const __m256 d = _mm256_mul_ps(dw, _mm256_broadcastss_ps(das));
            macc[t] = _mm256_fmadd_ps(mw, _mm256_broadcastss_ps(_mm_movehdup_ps(das)), macc[t]);
            for (int c = 0; c < 8; c++) {
                // Chunk c is elements 4c..4c+3 (c < 4) or 16+4(c-4)... (c >= 4) of the block.
                const int e = c < 4 ? 4 * c : 16 + 4 * (c - 4);
                const __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), q[c], ck_bcast4(a->qs + e));
                acc[t][c] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(s), acc[t][c]);
            }
        }
    }
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y[t], _mm256_add_ps(ck_chunks_in_hsum8_order(acc[t]), macc[t]));
}

static inline __attribute__((always_inline)) CK_VNNI void tile_q8_0x8(int nb, const ck_block_q8_0x8 *w,
                                                                      const ck_block_q8_0 *const *x, float *const *y,
                                                                      const int T) {
    __m256 acc[2][8];
    for (int t = 0; t < T; t++) {
        for (int c = 0; c < 8; c++) acc[t][c] = _mm256_setzero_ps();
    }
    for (int b = 0; b < nb; b++) {
        _mm_prefetch((const char *)(w + b + CK_AHEAD(CK_Q80_AHEAD)), _MM_HINT_T0);
        _mm_prefetch((const char *)(w + b + CK_AHEAD(CK_Q80_AHEAD)) + 64, _MM_HINT_T0);
        _mm_prefetch((const char *)(w + b + CK_AHEAD(CK_Q80_AHEAD)) + 128, _MM_HINT_T0);
        _mm_prefetch((const char *)(w + b + CK_AHEAD(CK_Q80_AHEAD)) + 192, _MM_HINT_T0);
        _mm_prefetch((const char *)(w + b + CK_AHEAD(CK_Q80_AHEAD)) + 256, _MM_HINT_T0);
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].d));
        __m256i q[8];
        for (int c = 0; c < 8; c++) q[c] = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * c));
        for (int t = 0; t < T; t++) add_signed_chunks(acc[t], q, dw, x[t] + b);
    }
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y[t], ck_chunks_in_hsum8_order(acc[t]));
}

// Eight rows × T tokens of Q5_0 (T = 1 or 2 after inlining), each row's arithmetic that of
// dot_q5_0_vnni (dot_legacy.c) bit for bit: chunk c (elements 4c..4c+3) has its own
// accumulator vector (lane r = row r), its exact integer sum scaled in one FMA per block,
// the chunks added in ck_hsum8's order at the end. Values q - 16 are made signed with the
// fifth-bit mask; the sign trick (|x| times y with x's sign) feeds vpdpbusd's u8 x s8.
static inline __attribute__((always_inline)) CK_VNNI void tile_q5_0x8(int nb, const ck_block_q5_0x8 *w,
                                                                      const ck_block_q8_0 *const *x, float *const *y,
                                                                      const int T) {
    __m256 acc[2][8];
    for (int t = 0; t < T; t++) {
        for (int c = 0; c < 8; c++) acc[t][c] = _mm256_setzero_ps();
    }
    const __m256i mask = _mm256_set1_epi8(0x0f);
    const __m256i high = _mm256_set1_epi8((char)0xf0);
    for (int b = 0; b < nb; b++) {
        _mm_prefetch((const char *)(w + b + CK_AHEAD(CK_Q50_AHEAD)), _MM_HINT_T0);
        _mm_prefetch((const char *)(w + b + CK_AHEAD(CK_Q50_AHEAD)) + 64, _MM_HINT_T0);
        _mm_prefetch((const char *)(w + b + CK_AHEAD(CK_Q50_AHEAD)) + 128, _MM_HINT_T0);
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].d));
        __m256i q[8];
        for (int c = 0; c < 4; c++) {
            const __m256i v = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * c));
            const __m256i lo = _mm256_and_si256(v, mask);
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
            q[c] = _mm256_mask_blend_epi8((__mmask32)w[b].hm[c], _mm256_or_si256(lo, high), lo);
            q[4 + c] = _mm256_mask_blend_epi8((__mmask32)w[b].hm[4 + c], _mm256_or_si256(hi, high), hi);
        }
        for (int t = 0; t < T; t++) add_signed_chunks(acc[t], q, dw, x[t] + b);
    }
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y[t], ck_chunks_in_hsum8_order(acc[t]));
}

CK_VNNI static void groups_q5_0x8_vnni(int nb, const char *w, size_t group_bytes, int g0, int g1,
                                       const ck_block_q8_0 *const *x, float *const *y, int T) {
    for (int g = g0; g < g1; g++) {
        const ck_block_q5_0x8 *wg = (const ck_block_q5_0x8 *)(w + (size_t)g * group_bytes);
        float *yg[4];
        for (int t = 0; t < T; t++) yg[t] = y[t] + 8 * g;
        int t = 0;
        for (; t + 2 <= T; t += 2) tile_q5_0x8(nb, wg, x + t, yg + t, 2);
        if (t < T) tile_q5_0x8(nb, wg, x + t, yg + t, 1);
    }
}

CK_VNNI static void groups_q4_1x8_vnni(int nb, const char *w, size_t group_bytes, int g0, int g1,
                                       const ck_block_q8_1 *const *x, float *const *y, int T) {
    for (int g = g0; g < g1; g++) {
        const ck_block_q4_1x8 *wg = (const ck_block_q4_1x8 *)(w + (size_t)g * group_bytes);
        float *yg[4];
        for (int t = 0; t < T; t++) yg[t] = y[t] + 8 * g;
        int t = 0;
        for (; t + 2 <= T; t += 2) tile_q4_1x8(nb, wg, x + t, yg + t, 2);
        if (t < T) tile_q4_1x8(nb, wg, x + t, yg + t, 1);
    }
}

CK_VNNI static void groups_q8_0x8_vnni(int nb, const char *w, size_t group_bytes, int g0, int g1,
                                       const ck_block_q8_0 *const *x, float *const *y, int T) {
    for (int g = g0; g < g1; g++) {
        const ck_block_q8_0x8 *wg = (const ck_block_q8_0x8 *)(w + (size_t)g * group_bytes);
        float *yg[4];
        for (int t = 0; t < T; t++) yg[t] = y[t] + 8 * g;
        int t = 0;
        for (; t + 2 <= T; t += 2) tile_q8_0x8(nb, wg, x + t, yg + t, 2);
        if (t < T) tile_q8_0x8(nb, wg, x + t, yg + t, 1);
    }
}
#endif

// MARK: - Matrix product over a range of rows

// Rows r0..<r1 (multiples of 8) of an interleaved matrix, every token, with the kernels `fast`
// names (CK_INTERLEAVED_*; the packed Q5_0 form, made only where the VNNI kernel reads it, has no
// AVX2 kernel and runs the portable one if VNNI is switched off later). Tokens go in tiles of
// four over the rows a pass at a time (ck_pass_groups), so each pass stays in L2 while they go.
static void interleaved_pass(const ck_matmul_args *p, int g0, int g1, int fast, int base_type, int nb, const char *w,
                             const char *x);

void ck_matmul_interleaved_rows(const ck_matmul_args *p, int r0, int r1, int fast) {
    if (p->type == CK_TYPE_Q4_K_X8) {
        ck_matmul_q4_kx8_rows(p, r0, r1, fast);
        return;
    }
    if (p->type == CK_TYPE_Q5_K_X8) {
        ck_matmul_q5_kx8_rows(p, r0, r1, fast);
        return;
    }
    if (p->type == CK_TYPE_Q6_K_X8) {
        ck_matmul_q6_kx8_rows(p, r0, r1, fast);
        return;
    }
    if (p->type == CK_TYPE_Q3_K_X8) {
        ck_matmul_q3_kx8_rows(p, r0, r1, fast);
        return;
    }
    if (p->type == CK_TYPE_Q2_K_X8) {
        ck_matmul_q2_kx8_rows(p, r0, r1, fast);
        return;
    }
    if (p->type == CK_TYPE_Q4_0_X8) {
        ck_matmul_q4_0x8_rows(p, r0, r1, fast);
        return;
    }
    if (p->type == CK_TYPE_Q5_1_X8) {
        ck_matmul_q5_1x8_rows(p, r0, r1, fast);
        return;
    }
    if (p->type == CK_TYPE_MXFP4_X8) {
        ck_matmul_mxfp4x8_rows(p, r0, r1, fast);
        return;
    }
    const int base_type = p->type == CK_TYPE_Q4_1_X8   ? CK_TYPE_Q4_1
                          : p->type == CK_TYPE_Q5_0_X8 ? CK_TYPE_Q5_0
                                                       : CK_TYPE_Q8_0;
#if CK_X86
    // Two groups per 16-lane vector where the CPU has AVX-512 BW (the same bits), for five tokens
    // or more. Fewer are bound by the weight reads, which the eight-lane kernel's one stream and
    // one tile of up to four tokens serve better: forward(decodeRows:) of the 135M Q4_1 model,
    // one thread, CPU ms eight-lane / wide: 1 row 8.2 / 8.9, 2 rows 9.4 / 10.9, 4 rows 14.6 /
    // 15.2, 5 rows 19.5 / 17.2, 6 rows 21.9 / 19.3.
    if (fast == CK_INTERLEAVED_VNNI && (p->type == CK_TYPE_Q4_1_X8 || p->type == CK_TYPE_Q8_0_X8) && p->n >= 5 &&
        ck_wide_groups_enabled() && ck_cpu_avx512bw && ck_matmul_x16_rows(p, r0, r1)) {
        return;
    }
    // Q5_0's prompt kernels: sixteen rows a vector, the -16 as a correction (interleave_q5_0.c).
    if (fast == CK_INTERLEAVED_VNNI && p->type == CK_TYPE_Q5_0_X8 && p->n >= 2 && ck_cpu_avx512bw &&
        ck_matmul_q5_0x8_tokens(p, r0, r1)) {
        return;
    }
#endif
    const int nb = p->k / CK_QK;
    const size_t group_bytes = p->w_row_bytes;
    const char *w = (const char *)p->w;
    const char *x = (const char *)p->x;
    // One tile of four tokens or fewer walks all the rows at once.
    const int per = p->n > 4 ? ck_pass_groups(group_bytes) : r1 / 8 - r0 / 8;
    for (int g0 = r0 / 8; g0 < r1 / 8; g0 += per) {
        const int g1 = g0 + per < r1 / 8 ? g0 + per : r1 / 8;
        interleaved_pass(p, g0, g1, fast, base_type, nb, w, x);
    }
}

// Groups g0..<g1 of a Q4_1, Q5_0 or Q8_0 form against every token, four at a time.
static void interleaved_pass(const ck_matmul_args *p, int g0, int g1, int fast, int base_type, int nb, const char *w,
                             const char *x) {
    const size_t group_bytes = p->w_row_bytes;
    for (int t0 = 0; t0 < p->n; t0 += 4) {
        const int T = p->n - t0 < 4 ? p->n - t0 : 4;
        const void *xs[4];
        float *ys[4];
        for (int t = 0; t < T; t++) {
            xs[t] = x + (size_t)(t0 + t) * p->x_row_bytes;
            ys[t] = p->y + (size_t)(t0 + t) * p->ldy;
        }
#if CK_X86
        if (fast == CK_INTERLEAVED_AVX2 && base_type != CK_TYPE_Q5_0) {
            if (base_type == CK_TYPE_Q4_1) {
                ck_groups_q4_1x8_avx2(nb, w, group_bytes, g0, g1, (const ck_block_q8_1 *const *)xs, ys, T);
            } else {
                ck_groups_q8_0x8_avx2(nb, w, group_bytes, g0, g1, (const ck_block_q8_0 *const *)xs, ys, T);
            }
            continue;
        }
        if (fast == CK_INTERLEAVED_VNNI && (base_type != CK_TYPE_Q5_0 || ck_cpu_avx512bw)) {
            if (base_type == CK_TYPE_Q4_1) {
                groups_q4_1x8_vnni(nb, w, group_bytes, g0, g1, (const ck_block_q8_1 *const *)xs, ys, T);
            } else if (base_type == CK_TYPE_Q5_0) {
                groups_q5_0x8_vnni(nb, w, group_bytes, g0, g1, (const ck_block_q8_0 *const *)xs, ys, T);
            } else {
                groups_q8_0x8_vnni(nb, w, group_bytes, g0, g1, (const ck_block_q8_0 *const *)xs, ys, T);
            }
            continue;
        }
#endif
        (void)fast;
        for (int g = g0; g < g1; g++) {
            for (int t = 0; t < T; t++) {
                if (base_type == CK_TYPE_Q4_1) {
                    group_q4_1x8_portable(nb, (const ck_block_q4_1x8 *)(w + (size_t)g * group_bytes),
                                          (const ck_block_q8_1 *)xs[t], ys[t] + 8 * g);
                } else if (base_type == CK_TYPE_Q5_0) {
                    group_q5_0x8_portable(nb, (const ck_block_q5_0x8 *)(w + (size_t)g * group_bytes),
                                          (const ck_block_q8_0 *)xs[t], ys[t] + 8 * g);
                } else {
                    group_q8_0x8_portable(nb, (const ck_block_q8_0x8 *)(w + (size_t)g * group_bytes),
                                          (const ck_block_q8_0 *)xs[t], ys[t] + 8 * g);
                }
            }
        }
    }
}

void ck_matmul_kx8_order(const ck_matmul_args *p, int r0, int r1, int fast, int tiled, ck_kx8_tokens_fn tokens) {
    const int most = tiled ? 8 : 1, g_lo = r0 / 8, g_hi = r1 / 8;
    const ck_block_q8_K *xs[CK_KX8_BATCH];
    float *ys[CK_KX8_BATCH];
    int t = 0;
    while (t < p->n) {
        int count = 0;
        for (; t < p->n && count < CK_KX8_BATCH; t++) {
            if (ck_token_tiled(p, t) != tiled) continue;
            xs[count] = (const ck_block_q8_K *)((const char *)p->x + (size_t)t * p->x_row_bytes);
            ys[count++] = p->y + (size_t)t * p->ldy;
        }
        if (count == 0) break;
        const int per = count > most ? ck_pass_groups(p->w_row_bytes) : g_hi - g_lo;
        for (int g0 = g_lo; g0 < g_hi; g0 += per) {
            const int g1 = g0 + per < g_hi ? g0 + per : g_hi;
            for (int v = 0; v < count; v += most) {
                tokens(p, 8 * g0, 8 * g1, fast, tiled, xs + v, ys + v, count - v < most ? count - v : most);
            }
        }
    }
}

void ck_matmul_kx8_by_order(const ck_matmul_args *p, int r0, int r1, int fast, ck_kx8_tokens_fn tokens) {
    ck_matmul_kx8_order(p, r0, r1, fast, 1, tokens);
    ck_matmul_kx8_order(p, r0, r1, fast, 0, tokens);
}

#if CK_X86
// Weight bytes one pass of the token tiles walks over (a 2048 × 8192 Q4_0 matrix is 9.4 MB;
// without the passes one thread streamed it from memory once per four tokens).
#define CK_CORRECTED_PASS_BYTES (128 * 1024)

int ck_matmul_corrected_passes(const ck_matmul_args *p, int r0, int r1, ck_corrections_fn corrections,
                               ck_corrected_groups_fn groups) {
    const int nb = p->k / CK_QK;
    const int tile = CK_CORRECTION_TABLE_BLOCKS / nb < 4 ? CK_CORRECTION_TABLE_BLOCKS / nb : 4;
    if (tile <= 0) return 0;
    const int n_groups = r1 / 8 - r0 / 8;
    if (n_groups <= 0) return 1;
    // Passes of equal size (each computes the corrections again), an even count of groups each.
    const int most = p->w_row_bytes < CK_CORRECTED_PASS_BYTES / 2 ? (int)(CK_CORRECTED_PASS_BYTES / p->w_row_bytes) : 2;
    const int passes = (n_groups + most - 1) / most;
    const int pass_groups = ((n_groups + passes - 1) / passes + 1) & ~1;
    const char *w = (const char *)p->w;
    const char *x = (const char *)p->x;
    int32_t table[CK_CORRECTION_TABLE_BLOCKS * 8];
    for (int g0 = r0 / 8; g0 < r1 / 8; g0 += pass_groups) {
        const int g1 = g0 + pass_groups < r1 / 8 ? g0 + pass_groups : r1 / 8;
        for (int t0 = 0; t0 < p->n; t0 += tile) {
            const int T = p->n - t0 < tile ? p->n - t0 : tile;
            const ck_block_q8_0 *xs[4];
            const int32_t *corr[4];
            float *ys[4];
            for (int t = 0; t < T; t++) {
                xs[t] = (const ck_block_q8_0 *)(x + (size_t)(t0 + t) * p->x_row_bytes);
                ys[t] = p->y + (size_t)(t0 + t) * p->ldy;
                corr[t] = table + (size_t)t * nb * 8;
                corrections(nb, xs[t], table + (size_t)t * nb * 8);
            }
            groups(nb, w, p->w_row_bytes, g0, g1, xs, corr, ys, T);
        }
    }
    return 1;
}
#endif

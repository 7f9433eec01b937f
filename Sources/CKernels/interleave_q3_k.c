// Q3_K re-laid out at load time for eight rows per vector (ck_block_q3_Kx8: 912 bytes per eight
// rows and super-block against the file's 880, the 16 scales per row unpacked from 12 bytes).
//
// The per-row kernels spend most of their time per row and super-block unpacking the 6-bit
// scales, the 2-bit codes and the high bits, and on a shuffle per pair of groups. Here the codes
// and high bits keep the file's packing, in four-byte chunks of eight rows (vector 8h + c of qs
// and vector c of hmask: lane r = row r's bytes 4c..4c+3), so two shifts, an and and a
// ternary-logic op per chunk (AVX2: two ands and an or) give eight rows' q + 4 in 0..7, which vpdpbusd
// multiplies by four activation bytes broadcast. The bias is taken out exactly in the integer
// sums: a group's Σ q a = Σ (q + 4) a - 4 Σ a, the -4 Σ a (the Q8_K group sum for a group, the
// four bytes' sum for a chunk) put in the low int16 of the accumulator the products go into.
// The true sum fits an int16 (|Σ q a| <= 16 * 4 * 128), so the low int16 holds it exactly and
// vpdpwssd (vpmaddwd on AVX2) against the scale in the low int16 (0 in the high one) gives
// scale × sum in int32 whatever the high half holds.
//
// Both of llama.cpp's orders are kept bit for bit (dot_kquants_low.c, dot_kquants_tiled.c):
// - tiled (CK_ORDER_TILED, a prompt's rows): per super-block the exact s1 = Σ_g scale_g Σ q a,
//   then r = s1 * fp16(d_w); acc = fma(r, d_a, acc).
// - the one-token order (decode): eight integer lanes per row (lane c: values 32m + 4c..+3 of
//   each 32-value chunk m, times their group's scale), one FMA by d_a * fp16(d_w) per lane and
//   super-block, the lanes added in ck_hsum8's order. Lane c of a row is accumulator c's lane r.
// The portable kernel (tiled, or the portable per-row kernel's order) is the reference.
#include <stdlib.h>
#include <string.h>

#include "interleave_forms.h"

size_t ck_q3_kx8_group_bytes(int k) { return (size_t)(k / CK_QK_K) * sizeof(ck_block_q3_Kx8); }

void ck_interleave_q3_kx8(const void *src, size_t src_row_bytes, int rows, int k, void *dst) {
    const int nb = k / CK_QK_K;
    for (int g = 0; g < rows / 8; g++) {
        ck_block_q3_Kx8 *out = (ck_block_q3_Kx8 *)((char *)dst + (size_t)g * ck_q3_kx8_group_bytes(k));
        for (int b = 0; b < nb; b++, out++) {
            for (int r = 0; r < 8; r++) {
                const ck_block_q3_K *in = (const ck_block_q3_K *)((const char *)src + (size_t)(8 * g + r) * src_row_bytes) + b;
                int8_t sc[16];
                ck_q3_k_scales(in->scales, sc);
                out->d[r] = in->d;
                for (int s = 0; s < 16; s++) out->sc[s][r] = sc[s];
                for (int h = 0; h < 2; h++) {
                    for (int c = 0; c < 8; c++) memcpy(out->qs + 32 * (8 * h + c) + 4 * r, in->qs + 32 * h + 4 * c, 4);
                }
                for (int c = 0; c < 8; c++) memcpy(out->hm + 32 * c + 4 * r, in->hmask + 4 * c, 4);
            }
        }
    }
}

// MARK: - Portable (the reference beside the fast kernels)

// Value e (0..255) of row r, q in -4..3.
static inline int q3_value(const ck_block_q3_Kx8 *w, int r, int e) {
    const int h = e / 128, s = (e % 128) / 32, l = e % 32;
    const int low = (w->qs[32 * (8 * h + l / 4) + 4 * r + l % 4] >> (2 * s)) & 3;
    const int high = (w->hm[32 * (l / 4) + 4 * r + l % 4] >> (4 * h + s)) & 1;
    return low - (high ? 0 : 4);
}

// Eight rows against one activation row: in the tiled order (tiled != 0), else in the portable
// per-row kernel's (dot_q3_k_portable). The fast kernels' one-token order is the fast per-row
// kernel's, which the tests hold them to.
static void group_q3_kx8_portable(int nb, const ck_block_q3_Kx8 *w, const ck_block_q8_K *a, int tiled, float *y) {
    for (int r = 0; r < 8; r++) {
        float acc = 0.0f;
        for (int b = 0; b < nb; b++) {
            int s1 = 0;
            for (int g = 0; g < 16; g++) {
                int s = 0;
                for (int e = 16 * g; e < 16 * g + 16; e++) s += q3_value(&w[b], r, e) * a[b].qs[e];
                s1 += w[b].sc[g][r] * s;
            }
            if (tiled) {
                const float t = (float)s1 * ck_fp16_to_fp32(w[b].d[r]);
                acc = fmaf(t, a[b].d, acc);
            } else {
                acc += a[b].d * ck_fp16_to_fp32(w[b].d[r]) * (float)s1;
            }
        }
        y[r] = acc;
    }
}

#if CK_X86
#define CK_Q3K_AHEAD 2  // super-blocks of 912 bytes ahead (decode)

// -4 Σ a over each four activation bytes of one super-block, in the low int16 of 64 int32 words
// (word w: bytes 4w..4w+3): the one-token kernels' chunk biases.
CK_FAST static void q3_chunk_biases(const ck_block_q8_K *a, int32_t *out) {
    const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
    for (int v = 0; v < 8; v++) {
        const __m256i q = _mm256_loadu_si256((const __m256i *)(a->qs + 32 * v));
        const __m256i sums = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, q), ones16);
        const __m256i bias = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(sums, 2));
        _mm256_storeu_si256((__m256i *)(out + 8 * v), _mm256_and_si256(bias, _mm256_set1_epi32(0xffff)));
    }
}

// The chunk biases of one token's nb super-blocks, in a buffer per thread grown as needed.
static _Thread_local int32_t *q3_bias_buffer;
static _Thread_local size_t q3_bias_words;

static const int32_t *q3_biases(int nb, const ck_block_q8_K *a) {
    const size_t words = (size_t)nb * 64;
    if (words > q3_bias_words) {
        free(q3_bias_buffer);
        q3_bias_buffer = (int32_t *)malloc(words * sizeof(int32_t));
        q3_bias_words = q3_bias_buffer ? words : 0;
        if (!q3_bias_buffer) return 0;
    }
    for (int b = 0; b < nb; b++) q3_chunk_biases(&a[b], q3_bias_buffer + 64 * b);
    return q3_bias_buffer;
}

// Group g's bias for the tiled kernels: -4 × its Q8_K sum in the low int16, every lane.
static inline __attribute__((always_inline)) CK_FAST __m256i q3_group_bias(const ck_block_q8_K *a, int g) {
    return _mm256_set1_epi32((int32_t)(uint16_t)(-4 * a->bsums[g]));
}

// Eight rows' scales of group g: VNNI, the int8 scale in the low int16 of each lane (high 0),
// for vpdpwssd; AVX2, in both int16 halves, for vpmaddwd against two pair sums.
static inline __attribute__((always_inline)) CK_FAST __m256i q3_scale_low(const int8_t *p) {
    return _mm256_and_si256(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p)), _mm256_set1_epi32(0xffff));
}

static inline __attribute__((always_inline)) CK_FAST __m256i q3_scale_both(const int8_t *p) {
    const __m256i s = q3_scale_low(p);
    return _mm256_or_si256(s, _mm256_slli_epi32(s, 16));
}

// The codes vector v and high-bit vector h moved so that chunk (h, s)'s bits are at 0-1 and 2.
#define Q3_MOVED(v, hm, h, s, SRL, SLL)                                               \
    const __m256i lo = (s) ? SRL((v), 2 * (s)) : (v);                                 \
    const int hb = 4 * (h) + (s);                                                     \
    const __m256i hi = hb > 2 ? SRL((hm), hb - 2) : hb < 2 ? SLL((hm), 2 - hb) : (hm)

// q + 4 (0..7) of eight rows' chunk: bits 0-1 the code, bit 2 the high bit.
static inline __attribute__((always_inline)) CK_FORMS_VNNI __m256i q3_codes_vnni(__m256i v, __m256i hm, int h, int s) {
    Q3_MOVED(v, hm, h, s, _mm256_srli_epi16, _mm256_slli_epi16);
    // imm 0xE4: c ? a : b per bit, c the two code bits.
    return _mm256_ternarylogic_epi32(lo, _mm256_and_si256(hi, _mm256_set1_epi8(4)), _mm256_set1_epi8(3), 0xE4);
}

static inline __attribute__((always_inline)) CK_FAST __m256i q3_codes_avx2(__m256i v, __m256i hm, int h, int s) {
    Q3_MOVED(v, hm, h, s, _mm256_srli_epi16, _mm256_slli_epi16);
    return _mm256_or_si256(_mm256_and_si256(lo, _mm256_set1_epi8(3)), _mm256_and_si256(hi, _mm256_set1_epi8(4)));
}

// MARK: - VNNI

// The tiled order, eight rows × T <= 4 tokens (a constant after inlining): each group's four
// chunks into one accumulator per token that starts at the group's bias, then scaled.
static inline __attribute__((always_inline)) CK_FORMS_VNNI void tile_q3_kx8_tiled_vnni(int nb, const ck_block_q3_Kx8 *w,
                                                                                      const ck_block_q8_K *const *x,
                                                                                      float *const *y, const int T) {
    __m256 acc[4];
    for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();
    for (int b = 0; b < nb; b++) {
        __m256i s1[4];
        for (int t = 0; t < T; t++) s1[t] = _mm256_setzero_si256();
        for (int m = 0; m < 8; m++) {
            const int h = m / 4, s = m % 4;
            for (int half = 0; half < 2; half++) {
                const int g = 2 * m + half;
                __m256i sum[4];
                for (int t = 0; t < T; t++) sum[t] = q3_group_bias(&x[t][b], g);
                for (int c = 4 * half; c < 4 * half + 4; c++) {
                    const __m256i v = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * (8 * h + c)));
                    const __m256i hm = _mm256_loadu_si256((const __m256i *)(w[b].hm + 32 * c));
                    const __m256i q = q3_codes_vnni(v, hm, h, s);
                    for (int t = 0; t < T; t++) sum[t] = _mm256_dpbusd_epi32(sum[t], q, ck_bcast4(x[t][b].qs + 32 * m + 4 * c));
                }
                const __m256i sc = q3_scale_low(w[b].sc[g]);
                for (int t = 0; t < T; t++) s1[t] = _mm256_dpwssd_epi32(s1[t], sum[t], sc);
            }
        }
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].d));
        for (int t = 0; t < T; t++) {
            const __m256 r = _mm256_mul_ps(_mm256_cvtepi32_ps(s1[t]), dw);
            acc[t] = _mm256_fmadd_ps(r, _mm256_set1_ps(x[t][b].d), acc[t]);
        }
    }
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y[t], acc[t]);
}

// The one-token order, eight rows: chunk c of each 32 values goes to lane c's accumulator, its
// product starting at the chunk's bias (bias: q3_biases' words).
CK_FORMS_VNNI static void group_q3_kx8_lanes_vnni(int nb, const ck_block_q3_Kx8 *w, const ck_block_q8_K *a,
                                                  const int32_t *bias, float *y) {
    __m256 acc[8];
    for (int c = 0; c < 8; c++) acc[c] = _mm256_setzero_ps();
    for (int b = 0; b < nb; b++) {
        for (int l = 0; l < (int)sizeof(ck_block_q3_Kx8); l += 64) _mm_prefetch((const char *)(w + b + CK_AHEAD(CK_Q3K_AHEAD)) + l, _MM_HINT_T0);
        const __m256 d = _mm256_mul_ps(_mm256_set1_ps(a[b].d), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].d)));
        __m256i lane[8];
        for (int c = 0; c < 8; c++) lane[c] = _mm256_setzero_si256();
        for (int m = 0; m < 8; m++) {
            const int h = m / 4, s = m % 4;
            const __m256i sl = q3_scale_low(w[b].sc[2 * m]), su = q3_scale_low(w[b].sc[2 * m + 1]);
            for (int c = 0; c < 8; c++) {
                const __m256i v = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * (8 * h + c)));
                const __m256i hm = _mm256_loadu_si256((const __m256i *)(w[b].hm + 32 * c));
                const __m256i q = q3_codes_vnni(v, hm, h, s);
                const __m256i p =
                    _mm256_dpbusd_epi32(_mm256_set1_epi32(bias[64 * b + 8 * m + c]), q, ck_bcast4(a[b].qs + 32 * m + 4 * c));
                lane[c] = _mm256_dpwssd_epi32(lane[c], p, c < 4 ? sl : su);
            }
        }
        for (int c = 0; c < 8; c++) acc[c] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(lane[c]), acc[c]);
    }
    _mm256_storeu_ps(y, ck_chunks_in_hsum8_order(acc));
}

// MARK: - AVX2 (vpmaddubsw's int16 pair sums added in int16, then vpmaddwd by the scale)

// The tiled order, eight rows × T <= 4 tokens: a group's four chunks' pair sums and its bias
// (|each int16| <= 8192 + 4 * 1792) in one int16 accumulator per token, then × the scale.
static inline __attribute__((always_inline)) CK_FAST void tile_q3_kx8_tiled_avx2(int nb, const ck_block_q3_Kx8 *w,
                                                                                const ck_block_q8_K *const *x,
                                                                                float *const *y, const int T) {
    __m256 acc[4];
    for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();
    for (int b = 0; b < nb; b++) {
        __m256i s1[4];
        for (int t = 0; t < T; t++) s1[t] = _mm256_setzero_si256();
        for (int m = 0; m < 8; m++) {
            const int h = m / 4, s = m % 4;
            for (int half = 0; half < 2; half++) {
                const int g = 2 * m + half;
                __m256i sum[4];
                for (int t = 0; t < T; t++) sum[t] = q3_group_bias(&x[t][b], g);
                for (int c = 4 * half; c < 4 * half + 4; c++) {
                    const __m256i v = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * (8 * h + c)));
                    const __m256i hm = _mm256_loadu_si256((const __m256i *)(w[b].hm + 32 * c));
                    const __m256i q = q3_codes_avx2(v, hm, h, s);
                    for (int t = 0; t < T; t++) {
                        sum[t] = _mm256_add_epi16(sum[t], _mm256_maddubs_epi16(q, ck_bcast4(x[t][b].qs + 32 * m + 4 * c)));
                    }
                }
                const __m256i sc = q3_scale_both(w[b].sc[g]);
                for (int t = 0; t < T; t++) s1[t] = _mm256_add_epi32(s1[t], _mm256_madd_epi16(sum[t], sc));
            }
        }
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].d));
        for (int t = 0; t < T; t++) {
            const __m256 r = _mm256_mul_ps(_mm256_cvtepi32_ps(s1[t]), dw);
            acc[t] = _mm256_fmadd_ps(r, _mm256_set1_ps(x[t][b].d), acc[t]);
        }
    }
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y[t], acc[t]);
}

CK_FAST static void group_q3_kx8_lanes_avx2(int nb, const ck_block_q3_Kx8 *w, const ck_block_q8_K *a, const int32_t *bias,
                                            float *y) {
    __m256 acc[8];
    for (int c = 0; c < 8; c++) acc[c] = _mm256_setzero_ps();
    for (int b = 0; b < nb; b++) {
        for (int l = 0; l < (int)sizeof(ck_block_q3_Kx8); l += 64) _mm_prefetch((const char *)(w + b + CK_AHEAD(CK_Q3K_AHEAD)) + l, _MM_HINT_T0);
        const __m256 d = _mm256_mul_ps(_mm256_set1_ps(a[b].d), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].d)));
        // Lane c's sum over the eight 32-value steps m in one register (the integer sums do not
        // depend on the order they are added in): eight sums kept across the steps, as the VNNI
        // kernel keeps them in its 32 registers, lived on the stack here, a store and a load
        // per step (42 % of a Q3_K_M decode at one thread on these two instructions).
        __m256i scales[16];
        for (int g = 0; g < 16; g++) scales[g] = q3_scale_both(w[b].sc[g]);
        for (int c = 0; c < 8; c++) {
            const __m256i hm = _mm256_loadu_si256((const __m256i *)(w[b].hm + 32 * c));
            const __m256i v0 = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * c));
            const __m256i v1 = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * (8 + c)));
            __m256i lane = _mm256_setzero_si256();
            // (Unrolled, so each step's shift and half are constants.)
#pragma clang loop unroll(full)
            for (int m = 0; m < 8; m++) {
                const __m256i q = q3_codes_avx2(m < 4 ? v0 : v1, hm, m / 4, m % 4);
                const __m256i p = _mm256_add_epi16(_mm256_set1_epi32(bias[64 * b + 8 * m + c]),
                                                   _mm256_maddubs_epi16(q, ck_bcast4(a[b].qs + 32 * m + 4 * c)));
                lane = _mm256_add_epi32(lane, _mm256_madd_epi16(p, scales[2 * m + (c >= 4)]));
            }
            acc[c] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(lane), acc[c]);
        }
    }
    _mm256_storeu_ps(y, ck_chunks_in_hsum8_order(acc));
}

CK_KX8_TILES(groups_q3_kx8_tiled_vnni, ck_block_q3_Kx8, tile_q3_kx8_tiled_vnni, CK_FORMS_VNNI)
CK_KX8_TILES(groups_q3_kx8_tiled_avx2, ck_block_q3_Kx8, tile_q3_kx8_tiled_avx2, CK_FAST)
#endif

// MARK: - Matrix product over a range of rows

// Rows r0..<r1 against `count` tokens all in one order: tiled (up to eight) or not (one).
static void q3_kx8_tokens(const ck_matmul_args *p, int r0, int r1, int fast, int tiled, const ck_block_q8_K *const *xs,
                          float *const *ys, int count) {
    const int nb = p->k / CK_QK_K;
    const char *w = (const char *)p->w;
    const size_t gb = p->w_row_bytes;
#if CK_X86
    if (fast != CK_INTERLEAVED_PORTABLE) {
        const int vnni = fast == CK_INTERLEAVED_VNNI;
        if (tiled) {
            const int g = vnni ? ck_groups_q3_kx16_tiled(nb, w, gb, r0 / 8, r1 / 8, xs, ys, count) : r0 / 8;
            (vnni ? groups_q3_kx8_tiled_vnni : groups_q3_kx8_tiled_avx2)(nb, w, gb, g, r1 / 8, xs, ys, count);
            return;
        }
        const int32_t *bias = q3_biases(nb, xs[0]);
        if (bias) {
            for (int g = r0 / 8; g < r1 / 8; g++) {
                const ck_block_q3_Kx8 *wg = (const ck_block_q3_Kx8 *)(w + (size_t)g * gb);
                (vnni ? group_q3_kx8_lanes_vnni : group_q3_kx8_lanes_avx2)(nb, wg, xs[0], bias, ys[0] + 8 * g);
            }
            return;
        }
    }
#endif
    (void)fast;
    for (int g = r0 / 8; g < r1 / 8; g++) {
        const ck_block_q3_Kx8 *wg = (const ck_block_q3_Kx8 *)(w + (size_t)g * gb);
        for (int u = 0; u < count; u++) group_q3_kx8_portable(nb, wg, xs[u], tiled, ys[u] + 8 * g);
    }
}

void ck_matmul_q3_kx8_rows(const ck_matmul_args *p, int r0, int r1, int fast) {
    ck_matmul_kx8_by_order(p, r0, r1, fast, q3_kx8_tokens);
}

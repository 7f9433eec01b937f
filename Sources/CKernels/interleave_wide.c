// The Q4_1, Q5_1 and Q8_0 interleaved forms read two groups of eight rows at a time, in 16-lane
// AVX-512 vectors (lanes 0-7: group g's rows, 8-15: group g + 1's).
//
// Why: the eight-lane VNNI kernels (interleave.c) spend, per token and block, one integer dot,
// one conversion and one FMA per 4-value chunk per row: a decode step is about as much
// arithmetic as memory traffic, and every further token of a pass (drafted tokens verified
// together, a batch's sequences) adds the arithmetic again, so verifying five drafted tokens
// cost 3.6 decode steps. This CPU family issues those instructions on 16 lanes at the rate it
// issues them on 8, so two groups per instruction halve the arithmetic per token.
//
// Every lane does exactly what the eight-lane kernels do for its row (each chunk's exact integer
// sum, converted, one FMA with fp16(d_w) * fp16(d_a) into its own accumulator, the chunks added
// in ck_hsum8's order, Q4_1's and Q5_1's m * s term last): the same bits, only twice the rows at once.
// Q8_0 has no 16-lane byte sign instruction, so its signed weights are read as q + 128 (an
// exact u8) and each chunk's sum starts from -128 * (its activations' sum): the same integer.
// An odd last group is read as both halves and only the low half stored.
#include <string.h>

#include "interleave_forms.h"

static _Atomic int ck_wide_groups = 1;
void ck_set_wide_groups(int enabled) { atomic_store(&ck_wide_groups, enabled ? 1 : 0); }
int ck_wide_groups_enabled(void) { return atomic_load_explicit(&ck_wide_groups, memory_order_relaxed); }

#if CK_X86
#define CK_WIDE __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
#define CK_WIDE_INLINE static inline __attribute__((always_inline)) CK_WIDE

// Eight fp16 of group A in lanes 0-7 and eight of group B in lanes 8-15, widened.
CK_WIDE_INLINE __m512 halves_ph(const uint16_t *a, const uint16_t *b) {
    const __m256i h = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)a)),
                                              _mm_loadu_si128((const __m128i *)b), 1);
    return _mm512_cvtph_ps(h);
}

// 32 bytes of group A in the low half, 32 of group B in the high half.
CK_WIDE_INLINE __m512i halves(const uint8_t *a, const uint8_t *b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)a)),
                              _mm256_loadu_si256((const __m256i *)b), 1);
}

// Four activation bytes broadcast to all 16 lanes.
CK_WIDE_INLINE __m512i bcast4_wide(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

// The chunks added in ck_hsum8's order, as ck_chunks_in_hsum8_order does on eight lanes.
CK_WIDE_INLINE __m512 chunks_in_hsum8_order_wide(const __m512 *acc) {
    return _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(acc[0], acc[4]), _mm512_add_ps(acc[2], acc[6])),
                         _mm512_add_ps(_mm512_add_ps(acc[1], acc[5]), _mm512_add_ps(acc[3], acc[7])));
}

// 16 lanes to y (rows 8g..8g+15), or only the low 8 when the pair is one group read twice.
CK_WIDE_INLINE void store_rows(float *y, __m512 v, int both) {
    if (both) {
        _mm512_storeu_ps(y, v);
    } else {
        _mm256_storeu_ps(y, _mm512_castps512_ps256(v));
    }
}

// MARK: - Q4_1

// Groups A and B (16 rows) × T tokens (1 or 2 after inlining), block by block: each weight
// vector is loaded and unpacked once for the T tokens, chunk pair by chunk pair (c, c + 4: one
// load's low and high nibbles) so that only T × 8 accumulators stay live; per lane,
// tile_q4_1x8's arithmetic.
CK_WIDE_INLINE void tile_q4_1x16(int nb, const ck_block_q4_1x8 *wa, const ck_block_q4_1x8 *wb,
                                 const ck_block_q8_1 *const *x, float *const *y, int both, const int T) {
    __m512 acc[2][8], macc[2];
    for (int t = 0; t < T; t++) {
        macc[t] = _mm512_setzero_ps();
        for (int c = 0; c < 8; c++) acc[t][c] = _mm512_setzero_ps();
    }
    const __m512i mask = _mm512_set1_epi8(0x0f);
    for (int b = 0; b < nb; b++) {
        // Both streams about 2.5 KiB ahead, as the eight-row kernel reads its one.
        for (int line = 0; line < 3; line++) {
            _mm_prefetch((const char *)(wa + b + 16) + 64 * line, _MM_HINT_T0);
            _mm_prefetch((const char *)(wb + b + 16) + 64 * line, _MM_HINT_T0);
        }
        const __m512 dw = halves_ph(wa[b].d, wb[b].d);
        const __m512 mw = halves_ph(wa[b].m, wb[b].m);
        __m512 d[2];
        for (int t = 0; t < T; t++) {
            int32_t ds;
            memcpy(&ds, x[t] + b, 4);
            const __m128 das = _mm_cvtph_ps(_mm_cvtsi32_si128(ds));
            d[t] = _mm512_mul_ps(dw, _mm512_broadcastss_ps(das));
            macc[t] = _mm512_fmadd_ps(mw, _mm512_broadcastss_ps(_mm_movehdup_ps(das)), macc[t]);
        }
#pragma clang loop unroll(full)
        for (int c = 0; c < 4; c++) {
            const __m512i v = halves(wa[b].qs + 32 * c, wb[b].qs + 32 * c);
            const __m512i lo = _mm512_and_si512(v, mask);
            const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), mask);
            for (int t = 0; t < T; t++) {
                // Chunk c is elements 4c..4c+3, chunk c + 4 elements 16+4c..16+4c+3.
                const ck_block_q8_1 *a = x[t] + b;
                const __m512i sl = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, bcast4_wide(a->qs + 4 * c));
                const __m512i sh = _mm512_dpbusd_epi32(_mm512_setzero_si512(), hi, bcast4_wide(a->qs + 16 + 4 * c));
                acc[t][c] = _mm512_fmadd_ps(d[t], _mm512_cvtepi32_ps(sl), acc[t][c]);
                acc[t][4 + c] = _mm512_fmadd_ps(d[t], _mm512_cvtepi32_ps(sh), acc[t][4 + c]);
            }
        }
    }
    for (int t = 0; t < T; t++) store_rows(y[t], _mm512_add_ps(chunks_in_hsum8_order_wide(acc[t]), macc[t]), both);
}

// MARK: - Q5_1

// Groups A and B × T tokens (1 or 2) of Q5_1: tile_q4_1x16 with the fifth bits added to the
// nibbles by a masked byte add, one 64-bit mask per chunk (A's 32 bits low, B's high, as the
// vector's halves); per lane, tile_q5_1x8's arithmetic (interleave_q5_1.c).
CK_WIDE_INLINE void tile_q5_1x16(int nb, const ck_block_q5_1x8 *wa, const ck_block_q5_1x8 *wb,
                                 const ck_block_q8_1 *const *x, float *const *y, int both, const int T) {
    __m512 acc[2][8], macc[2];
    for (int t = 0; t < T; t++) {
        macc[t] = _mm512_setzero_ps();
        for (int c = 0; c < 8; c++) acc[t][c] = _mm512_setzero_ps();
    }
    const __m512i mask = _mm512_set1_epi8(0x0f);
    const __m512i fifth = _mm512_set1_epi8(0x10);
    for (int b = 0; b < nb; b++) {
        for (int line = 0; line < 3; line++) {
            _mm_prefetch((const char *)(wa + b + 13) + 64 * line, _MM_HINT_T0);
            _mm_prefetch((const char *)(wb + b + 13) + 64 * line, _MM_HINT_T0);
        }
        const __m512 dw = halves_ph(wa[b].d, wb[b].d);
        const __m512 mw = halves_ph(wa[b].m, wb[b].m);
        __m512 d[2];
        for (int t = 0; t < T; t++) {
            int32_t ds;
            memcpy(&ds, x[t] + b, 4);
            const __m128 das = _mm_cvtph_ps(_mm_cvtsi32_si128(ds));
            d[t] = _mm512_mul_ps(dw, _mm512_broadcastss_ps(das));
            macc[t] = _mm512_fmadd_ps(mw, _mm512_broadcastss_ps(_mm_movehdup_ps(das)), macc[t]);
        }
#pragma clang loop unroll(full)
        for (int c = 0; c < 4; c++) {
            const __m512i v = halves(wa[b].qs + 32 * c, wb[b].qs + 32 * c);
            const __m512i lo4 = _mm512_and_si512(v, mask);
            const __m512i hi4 = _mm512_and_si512(_mm512_srli_epi16(v, 4), mask);
            const __mmask64 klo = (__mmask64)wa[b].hm[c] | (__mmask64)wb[b].hm[c] << 32;
            const __mmask64 khi = (__mmask64)wa[b].hm[4 + c] | (__mmask64)wb[b].hm[4 + c] << 32;
            const __m512i lo = _mm512_mask_add_epi8(lo4, klo, lo4, fifth);
            const __m512i hi = _mm512_mask_add_epi8(hi4, khi, hi4, fifth);
            for (int t = 0; t < T; t++) {
                const ck_block_q8_1 *a = x[t] + b;
                const __m512i sl = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, bcast4_wide(a->qs + 4 * c));
                const __m512i sh = _mm512_dpbusd_epi32(_mm512_setzero_si512(), hi, bcast4_wide(a->qs + 16 + 4 * c));
                acc[t][c] = _mm512_fmadd_ps(d[t], _mm512_cvtepi32_ps(sl), acc[t][c]);
                acc[t][4 + c] = _mm512_fmadd_ps(d[t], _mm512_cvtepi32_ps(sh), acc[t][4 + c]);
            }
        }
    }
    for (int t = 0; t < T; t++) store_rows(y[t], _mm512_add_ps(chunks_in_hsum8_order_wide(acc[t]), macc[t]), both);
}

// MARK: - Q8_0

// -128 × the sum of each chunk's four activations, for every block of n tokens (bias[t * nb * 8 +
// 8 * b + c]), into the calling thread's scratch; 0 when there is no memory for it.
CK_WIDE static const int32_t *q8_0_chunk_biases(const char *x, size_t xrb, int n, int nb) {
    int32_t *bias = (int32_t *)ck_thread_scratch((size_t)n * nb * 8 * sizeof(int32_t));
    if (!bias) return 0;
    for (int t = 0; t < n; t++) {
        ck_chunk_corrections(nb, (const ck_block_q8_0 *)(x + (size_t)t * xrb), 128, bias + (size_t)t * nb * 8);
    }
    return bias;
}

// Groups A and B × T tokens (1 or 2) of Q8_0, chunk by chunk as Q4_1's: weights as q + 128
// (u8), each chunk's sum started from -128 times the chunk's activation sum (bias[t], from
// q8_0_chunk_biases), so it is Σ q·a exactly, as add_signed_chunks' is. The biases are read from
// memory as broadcasts: computed in the tile, they stayed in registers and each took two shuffles
// beside the products' conversions.
CK_WIDE_INLINE void tile_q8_0x16(int nb, const ck_block_q8_0x8 *wa, const ck_block_q8_0x8 *wb,
                                 const ck_block_q8_0 *const *x, const int32_t *const *bias, float *const *y, int both,
                                 const int T) {
    __m512 acc[2][8];
    for (int t = 0; t < T; t++) {
        for (int c = 0; c < 8; c++) acc[t][c] = _mm512_setzero_ps();
    }
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    for (int b = 0; b < nb; b++) {
        for (int line = 0; line < 5; line++) {
            _mm_prefetch((const char *)(wa + b + 9) + 64 * line, _MM_HINT_T0);
            _mm_prefetch((const char *)(wb + b + 9) + 64 * line, _MM_HINT_T0);
        }
        const __m512 dw = halves_ph(wa[b].d, wb[b].d);
        __m512 d[2];
        for (int t = 0; t < T; t++) d[t] = _mm512_mul_ps(dw, _mm512_set1_ps(_cvtsh_ss(x[t][b].d)));
#pragma clang loop unroll(full)
        for (int c = 0; c < 8; c++) {
            const __m512i q = _mm512_xor_si512(halves(wa[b].qs + 32 * c, wb[b].qs + 32 * c), flip);
            for (int t = 0; t < T; t++) {
                const __m512i s = _mm512_dpbusd_epi32(_mm512_set1_epi32(bias[t][8 * b + c]), q,
                                                      bcast4_wide(x[t][b].qs + 4 * c));
                acc[t][c] = _mm512_fmadd_ps(d[t], _mm512_cvtepi32_ps(s), acc[t][c]);
            }
        }
    }
    for (int t = 0; t < T; t++) store_rows(y[t], chunks_in_hsum8_order_wide(acc[t]), both);
}

// Rows r0..<r1 (multiples of 8) of an interleaved Q4_1, Q5_1 or Q8_0 matrix, every token: group pairs
// outside, tiles of up to two tokens inside, so a pair's weights (16 rows, at most a few tens of KiB) are
// read from memory once and stay in L1 while every token passes over them. (Tiles of four
// tokens over the whole range, as the eight-lane path goes, stream a matrix too big for L2 -
// the 49152-row output head - from memory once per tile: a fifth verified token cost a pass.)
CK_WIDE int ck_matmul_x16_rows(const ck_matmul_args *p, int r0, int r1) {
    const int nb = p->k / CK_QK;
    const size_t gb = p->w_row_bytes;
    const char *w = (const char *)p->w;
    const char *x = (const char *)p->x;
    const int q4_1 = p->type == CK_TYPE_Q4_1_X8, q5_1 = p->type == CK_TYPE_Q5_1_X8;
    const int g1 = r1 / 8;
    const int32_t *bias = q4_1 || q5_1 ? 0 : q8_0_chunk_biases(x, p->x_row_bytes, p->n, nb);
    if (!q4_1 && !q5_1 && !bias) return 0;  // no memory for the biases: the caller's kernels, same bits
    for (int g = r0 / 8; g < g1; g += 2) {
        const int both = g + 1 < g1;
        const char *wa = w + (size_t)g * gb;
        const char *wb = both ? wa + gb : wa;
        for (int t = 0; t < p->n;) {
            // Tiles of two tokens: each chunk loop is unrolled so that the 16 (Q4_1, Q5_1: 18)
            // accumulators stay in registers. With three tokens, 24 or 27, clang kept them on the
            // stack, a load and a store beside every FMA: 1.7B-shape pp128 at one thread, Q4_1
            // 32.6 -> 42.2 tokens/s, Q8_0 32.7 -> 34.5 (and 42.4 with the biases from memory).
            const int T = p->n - t >= 2 ? 2 : 1;
            const void *xs[2];
            float *ys[2];
            for (int u = 0; u < T; u++) {
                xs[u] = x + (size_t)(t + u) * p->x_row_bytes;
                ys[u] = p->y + (size_t)(t + u) * p->ldy + 8 * g;
            }
            if (q4_1) {
                const ck_block_q4_1x8 *a = (const ck_block_q4_1x8 *)wa, *b = (const ck_block_q4_1x8 *)wb;
                const ck_block_q8_1 *const *xq = (const ck_block_q8_1 *const *)xs;
                if (T == 2) {
                    tile_q4_1x16(nb, a, b, xq, ys, both, 2);
                } else {
                    tile_q4_1x16(nb, a, b, xq, ys, both, 1);
                }
            } else if (q5_1) {
                const ck_block_q5_1x8 *a = (const ck_block_q5_1x8 *)wa, *b = (const ck_block_q5_1x8 *)wb;
                const ck_block_q8_1 *const *xq = (const ck_block_q8_1 *const *)xs;
                if (T == 2) {
                    tile_q5_1x16(nb, a, b, xq, ys, both, 2);
                } else {
                    tile_q5_1x16(nb, a, b, xq, ys, both, 1);
                }
            } else {
                const ck_block_q8_0x8 *a = (const ck_block_q8_0x8 *)wa, *b = (const ck_block_q8_0x8 *)wb;
                const ck_block_q8_0 *const *xq = (const ck_block_q8_0 *const *)xs;
                const int32_t *bs[2] = {bias + (size_t)t * nb * 8, bias + (size_t)(t + T - 1) * nb * 8};
                if (T == 2) {
                    tile_q8_0x16(nb, a, b, xq, bs, ys, both, 2);
                } else {
                    tile_q8_0x16(nb, a, b, xq, bs, ys, both, 1);
                }
            }
            t += T;
        }
    }
    return 1;
}
#endif

// Interleaved Q6_K (ck_block_q6_Kx8, interleave_q6_k.c) on CPUs with AVX2 but no AVX-512 VNNI
// (AMD Zen 3; INFERD_CPU=avx2 elsewhere), in both of ggml's orders, bit for bit.
//
// Without vpdpbusd a 4-value chunk's product is vpmaddubsw (pairs of u8 value q + 32, 0..63,
// times s8 activations in int16: at most 2 × 63 × 128, exact) then vpmaddwd against the group's
// int8 scale in both int16 halves of the row's lane: scale × chunk sum, exact in int32. Both
// orders only ever add such products and the −32 × scale × (16-value sum) corrections as
// integers before their float steps, so the integers, and every float step after them (those of
// interleave_q6_k.c's VNNI kernels), are the same:
// - tiled: per super-block the exact Σ scale × (q − 32) · a, times fp16(d_w), one FMA with d_a;
// - one-token (ggml's AVX2 lanes): lane L of a row gets chunks 32n + 8i + L, less its offset
//   32 × (bsums[2L] × scale[2L] + bsums[2L + 1] × scale[2L + 1]), one FMA per lane and
//   super-block, the lanes added in ck_hsum8's order.
// Prompts read the form directly (no unpacked copy as on VNNI): a chunk vector is unpacked once
// for up to four tokens, and the tokens go over the rows a pass at a time (ck_pass_groups) so
// each pass is read from memory once.
#include "interleave_forms.h"

#if CK_X86

// The four chunks (quarters i = 0..3) of lane L in half n of super-block w, as bytes q + 32:
// interleave_q6_k.c's q6_chunks without AVX-512's ternary logic.
CK_FAST static inline __attribute__((always_inline)) void q6_chunks_avx2(const ck_block_q6_Kx8 *w, int n, int L,
                                                                         __m256i v[4]) {
    const uint8_t *t = w->q + 96 * (8 * n + L);  // ql vectors 16n + L, 16n + 8 + L, qh vector 8n + L
    const __m256i a = _mm256_loadu_si256((const __m256i *)t);
    const __m256i b = _mm256_loadu_si256((const __m256i *)(t + 32));
    const __m256i h = _mm256_loadu_si256((const __m256i *)(t + 64));
    const __m256i m = _mm256_set1_epi8(0x30), low = _mm256_set1_epi8(0x0f);
    // 16-bit shifts: the bits kept never cross a byte (they move within bits 0-5 of their own).
    v[0] = _mm256_or_si256(_mm256_and_si256(a, low), _mm256_and_si256(_mm256_slli_epi16(h, 4), m));
    v[1] = _mm256_or_si256(_mm256_and_si256(b, low), _mm256_and_si256(_mm256_slli_epi16(h, 2), m));
    v[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), low), _mm256_and_si256(h, m));
    v[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b, 4), low), _mm256_and_si256(_mm256_srli_epi16(h, 2), m));
}

// Lane r: row r's int8 scale of a group in both int16 halves (vpmaddwd's other operand).
CK_FAST static inline __attribute__((always_inline)) __m256i q6_scale_pairs(const int8_t *scales) {
    const __m256i s = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)scales));
    return _mm256_or_si256(_mm256_and_si256(s, _mm256_set1_epi32(0xffff)), _mm256_slli_epi32(s, 16));
}

// Lane r: groups 2u and 2u + 1's int8 scales as the int16 halves of lane r (u = 0..7).
CK_FAST static inline __attribute__((always_inline)) void q6_scale_halves(const ck_block_q6_Kx8 *w, __m256i pairs[8]) {
    for (int u = 0; u < 8; u++) {
        const __m256i lo = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)w->scales[2 * u]));
        const __m256i hi = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)w->scales[2 * u + 1]));
        pairs[u] = _mm256_or_si256(_mm256_and_si256(lo, _mm256_set1_epi32(0xffff)), _mm256_slli_epi32(hi, 16));
    }
}

// Lane r: Σ over groups s of scale[s][r] × bsums[s] (each sum at most 16 × 128: an int16), the
// scales as q6_scale_halves gives them.
CK_FAST static inline __attribute__((always_inline)) __m256i q6_scaled_bsums(const __m256i pairs[8], const int16_t *bs) {
    __m256i sum = _mm256_setzero_si256();
    for (int u = 0; u < 8; u++) {
        const uint32_t b2 = (uint32_t)(uint16_t)bs[2 * u] | (uint32_t)(uint16_t)bs[2 * u + 1] << 16;
        sum = _mm256_add_epi32(sum, _mm256_madd_epi16(pairs[u], _mm256_set1_epi32((int32_t)b2)));
    }
    return sum;
}

// The tiled order, eight rows × T tokens (a constant after inlining). Per half n and half h of
// the lanes, lanes L = 4h..4h+3 unpack to chunks of groups 8n + 2i + h (i = 0..3): four scale
// vectors, four values and T sums in AVX2's sixteen registers.
static inline __attribute__((always_inline)) CK_FAST void tile_q6_kx8_tiled_avx2(int nb, const ck_block_q6_Kx8 *w,
                                                                                const ck_block_q8_K *const *x,
                                                                                float *const *y, const int T) {
    __m256 acc[4];
    for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();
    for (int b = 0; b < nb; b++) {
        __m256i sumi[4];
        for (int t = 0; t < T; t++) sumi[t] = _mm256_setzero_si256();
        for (int n = 0; n < 2; n++) {
            for (int h = 0; h < 2; h++) {
                __m256i sc[4];
                for (int i = 0; i < 4; i++) sc[i] = q6_scale_pairs(w[b].scales[8 * n + 2 * i + h]);
                for (int L = 4 * h; L < 4 * h + 4; L++) {
                    __m256i v[4];
                    q6_chunks_avx2(&w[b], n, L, v);
                    for (int i = 0; i < 4; i++) {
                        const int ch = 32 * n + 8 * i + L;
                        for (int t = 0; t < T; t++) sumi[t] = _mm256_add_epi32(sumi[t], ck_scaled_chunk(v[i], x[t][b].qs + 4 * ch, sc[i]));
                    }
                }
            }
        }
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].d));
        __m256i halves[8];  // once per block for the T tokens
        q6_scale_halves(&w[b], halves);
        for (int t = 0; t < T; t++) {
            const __m256i s = _mm256_sub_epi32(sumi[t], _mm256_slli_epi32(q6_scaled_bsums(halves, x[t][b].bsums), 5));
            const __m256 r = _mm256_mul_ps(_mm256_cvtepi32_ps(s), dw);
            acc[t] = _mm256_fmadd_ps(r, _mm256_set1_ps(x[t][b].d), acc[t]);
        }
    }
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y[t], acc[t]);
}

// The one-token order, eight rows, one token. Chunk 32n + 8i + L (group 8n + 2i + L / 4) goes to
// lane L's integer accumulator; the block is read from start to end (half n, then lane L), as
// the VNNI kernel reads it: lane by lane across both halves read at half the speed.
CK_FAST void ck_group_q6_kx8_lanes_avx2(int nb, const ck_block_q6_Kx8 *w, const ck_block_q8_K *a, float *y) {
    __m256 acc[8];
    for (int L = 0; L < 8; L++) acc[L] = _mm256_setzero_ps();
    for (int b = 0; b < nb; b++) {
        ck_prefetch_block(w + b + CK_AHEAD(2), sizeof *w);
        const __m256 d = _mm256_mul_ps(_mm256_set1_ps(a[b].d), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].d)));
        __m256i lane[8], halves[8];
        q6_scale_halves(&w[b], halves);
        for (int L = 0; L < 8; L++) {
            // Lane L's offset: 32 × (its two groups' sums times their scales), taken off first.
            const __m256i pair = halves[L];
            const uint32_t b2 = (uint32_t)(uint16_t)a[b].bsums[2 * L] | (uint32_t)(uint16_t)a[b].bsums[2 * L + 1] << 16;
            lane[L] = _mm256_sub_epi32(_mm256_setzero_si256(),
                                       _mm256_slli_epi32(_mm256_madd_epi16(pair, _mm256_set1_epi32((int32_t)b2)), 5));
        }
        for (int n = 0; n < 2; n++) {
            for (int L = 0; L < 8; L++) {
                __m256i v[4];
                q6_chunks_avx2(&w[b], n, L, v);
                for (int i = 0; i < 4; i++) {
                    const int ch = 32 * n + 8 * i + L;
                    const __m256i sc = q6_scale_pairs(w[b].scales[8 * n + 2 * i + L / 4]);
                    lane[L] = _mm256_add_epi32(lane[L], ck_scaled_chunk(v[i], a[b].qs + 4 * ch, sc));
                }
            }
        }
        for (int L = 0; L < 8; L++) acc[L] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(lane[L]), acc[L]);
    }
    _mm256_storeu_ps(y, ck_chunks_in_hsum8_order(acc));
}

// Groups g0..<g1 against T <= 4 tiled tokens.
CK_FAST static void q6_groups_tiled_avx2(int nb, const char *w, size_t gb, int g0, int g1, const ck_block_q8_K *const *xs,
                                         float *const *ys, int T) {
    for (int g = g0; g < g1; g++) {
        const ck_block_q6_Kx8 *wg = (const ck_block_q6_Kx8 *)(w + (size_t)g * gb);
        float *yg[4];
        for (int t = 0; t < T; t++) yg[t] = ys[t] + 8 * g;
        switch (T) {
        case 4: tile_q6_kx8_tiled_avx2(nb, wg, xs, yg, 4); break;
        case 3: tile_q6_kx8_tiled_avx2(nb, wg, xs, yg, 3); break;
        case 2: tile_q6_kx8_tiled_avx2(nb, wg, xs, yg, 2); break;
        default: tile_q6_kx8_tiled_avx2(nb, wg, xs, yg, 1); break;
        }
    }
}

// Rows r0..<r1 for the tiled tokens, a pass of groups at a time, four per walk over each pass
// (the one-token ones: ck_matmul_kx8_order with ck_group_q6_kx8_lanes_avx2).
CK_FAST void ck_matmul_q6_kx8_tiled_avx2(const ck_matmul_args *p, int r0, int r1) {
    const int nb = p->k / CK_QK_K;
    const char *w = (const char *)p->w;
    const size_t gb = p->w_row_bytes;
    int any_tiled = 0;
    for (int t = 0; t < p->n; t++) any_tiled |= ck_token_tiled(p, t);
    const int per = ck_pass_groups(gb);
    for (int g0 = r0 / 8; g0 < r1 / 8 && any_tiled; g0 += per) {
        const int g1 = g0 + per < r1 / 8 ? g0 + per : r1 / 8;
        const ck_block_q8_K *xs[4];
        float *ys[4];
        int count = 0;
        for (int t = 0; t < p->n; t++) {
            if (!ck_token_tiled(p, t)) continue;
            xs[count] = (const ck_block_q8_K *)((const char *)p->x + (size_t)t * p->x_row_bytes);
            ys[count++] = p->y + (size_t)t * p->ldy;
            if (count == 4) {
                q6_groups_tiled_avx2(nb, w, gb, g0, g1, xs, ys, 4);
                count = 0;
            }
        }
        if (count > 0) q6_groups_tiled_avx2(nb, w, gb, g0, g1, xs, ys, count);
    }
}

#endif

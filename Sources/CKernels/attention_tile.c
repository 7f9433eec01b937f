// Prompt attention in tiles: a block of tokens with the query heads of one KV head.
//
// A prompt chunk's tokens each read every key and value before them. Done token by token
// (attention_group.c), every K and V row is loaded and converted from f16 once per token, and a
// long prompt's cache (1.5 MB of K and V per layer at 4,096 tokens for SmolLM2) streams from
// outer caches once per token: the cost grows with the square of the length at memory speed.
// A tile of T tokens (T * R query heads) reads each K row once, converted for all of its heads,
// and each V row once per lane pass; keys after the tile's last token are never read (the
// causal half), keys between its first and last token only by the heads that see them.
//
// The arithmetic is that of the per-token grouped kernel for a batch (dot_f16_tiny scores, the
// softmax of softmax_weights_ggml, llamafile's 16-lane sum over the keys for V), operation for
// operation, so the outputs are bit-identical to ck_attention_units_per_head; only the loops
// are arranged differently. An online (one pass, rescaling) softmax would read the keys once
// instead of twice but changes the rounding order, and llama.cpp's references are matched bit
// for bit by this order; the tile keeps all its scores instead (a few hundred KB, in L2).
#include <math.h>

#include "attention_simd.h"

#if CK_X86

#define CK_INLINE __attribute__((always_inline)) inline
#define CK_TILE_KEYS 8  // keys converted and scored at a time
#define CK_FAST512 __attribute__((target("avx2,fma,f16c,avx512f,avx512vl")))
// Loops over register-held sums, unrolled so the sums stay in registers.
#define CK_UNROLL _Pragma("clang loop unroll(full)")

int ck_attention_tile_tokens(int ratio) {
    const int t = 24 / (ratio < 1 ? 1 : ratio);
    return t < 1 ? 1 : t > 16 ? 16 : t;
}

// Floats between score rows: the keys rounded up to 16, with room for the lane order's extra
// step (below), an odd number of 16s so that rows are not a power of two apart (a tile's rows,
// read side by side, would share a few cache sets).
static int tile_row_floats(const ck_attention_args *p) { return (((p->pos0 + p->n_tokens + 15) & ~15) + 16) | 16; }

// Floats of one tile's scratch: the rounded queries, a converted key block, the scores, the
// weights in lane order and the lane sums of one 8-dim slice of the output.
size_t ck_attention_tile_scratch_floats(const ck_attention_args *p) {
    const size_t nq = (size_t)ck_attention_tile_tokens(p->n_head / p->n_kv_head) * (size_t)(p->n_head / p->n_kv_head);
    const size_t sstride = (size_t)tile_row_floats(p);
    return nq * ((size_t)p->head_dim + 2 * sstride + 16 * 8) + (size_t)CK_TILE_KEYS * p->head_dim + 16;
}

// Eight 8-lane vectors reduced each as ck_hsum8 does ((x0+x4)+(x2+x6)) + ((x1+x5)+(x3+x7)),
// the eight sums in one vector (lane j: v[j]). Same tree, same roundings, transposed.
CK_FAST static CK_INLINE __m256 hsum8x8(const __m256 *v) {
    __m256 p[4];
    for (int i = 0; i < 4; i++) {
        // [v_a lo, v_b lo] + [v_a hi, v_b hi]: lanes x_i + x_{i+4} of v_a, then of v_b
        p[i] = _mm256_add_ps(_mm256_permute2f128_ps(v[2 * i], v[2 * i + 1], 0x20),
                             _mm256_permute2f128_ps(v[2 * i], v[2 * i + 1], 0x31));
    }
    // (s0 + s2), (s1 + s3) of v0, v2 | v1, v3 and of v4, v6 | v5, v7
    const __m256 q0 = _mm256_add_ps(_mm256_shuffle_ps(p[0], p[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                    _mm256_shuffle_ps(p[0], p[1], _MM_SHUFFLE(3, 2, 3, 2)));
    const __m256 q1 = _mm256_add_ps(_mm256_shuffle_ps(p[2], p[3], _MM_SHUFFLE(1, 0, 1, 0)),
                                    _mm256_shuffle_ps(p[2], p[3], _MM_SHUFFLE(3, 2, 3, 2)));
    // the last pair: lanes v0, v2, v4, v6 | v1, v3, v5, v7
    const __m256 r = _mm256_add_ps(_mm256_shuffle_ps(q0, q1, _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm256_shuffle_ps(q0, q1, _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm256_permutevar8x32_ps(r, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// Scores of nq query heads (qf: nq rows of hd rounded floats) against the CK_TILE_KEYS keys of
// kf (converted rows), as dot_f16_tiny: two 8-lane sums over steps of 16, then ck_hsum8 of their
// sum, times the scale. NV: hd / 8 when known at compile time (the query stays in registers).
CK_FAST static CK_INLINE void tile_scores_block(const float *qf, int nq, int hd, const float *kf, __m256 scale,
                                                float *scores, int sstride, const int NV) {
    const int nv = NV ? NV : hd / 8;
    for (int s = 0; s < nq; s++) {
        const float *qs = qf + (size_t)s * hd;
        __m256 v[CK_TILE_KEYS];
        for (int j = 0; j < CK_TILE_KEYS; j++) {
            const float *kj = kf + (size_t)j * hd;
            __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
            for (int m = 0; m < nv; m += 2) {
                lo = _mm256_fmadd_ps(_mm256_loadu_ps(qs + 8 * m), _mm256_loadu_ps(kj + 8 * m), lo);
                hi = _mm256_fmadd_ps(_mm256_loadu_ps(qs + 8 * m + 8), _mm256_loadu_ps(kj + 8 * m + 8), hi);
            }
            v[j] = _mm256_add_ps(hi, lo);
        }
        _mm256_storeu_ps(scores + (size_t)s * sstride, _mm256_mul_ps(hsum8x8(v), scale));
    }
}

// Output dims 8c..8c+7 of S query heads from lane-ordered weights (head s, lane l, step m at
// w[(s * 16 + l) * m_stride + m] = weight of key 16 m + l), as accumulate_lanes with 16 lanes:
// per lane, fma(v_j, w_j, sum) over its keys in increasing order, then reduce16_lanes. Keys at
// or after nk[s] are not head s's and are skipped (not multiplied by 0: an f16 inf in V would
// make a NaN).
CK_FAST static CK_INLINE void tile_values_block(const uint16_t *vbase, int kv_stride, const float *w, int m_stride,
                                                const int *nk, int j0, int nk_min, int nk_max, int c, float *acc,
                                                float *const *out, const int S) {
    for (int l = 0; l < 16; l++) {
        __m256 a[24];
        CK_UNROLL for (int s = 0; s < S; s++) a[s] = _mm256_setzero_ps();
        int j = j0 + l, m = j0 / 16;
        for (; j < nk_min; j += 16, m++) {
            const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(vbase + (size_t)j * kv_stride + 8 * c)));
            CK_UNROLL for (int s = 0; s < S; s++) {
                a[s] = _mm256_fmadd_ps(x, _mm256_broadcast_ss(w + (size_t)(s * 16 + l) * m_stride + m), a[s]);
            }
        }
        for (; j < nk_max; j += 16, m++) {
            const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(vbase + (size_t)j * kv_stride + 8 * c)));
            CK_UNROLL for (int s = 0; s < S; s++) {
                if (j < nk[s]) {
                    a[s] = _mm256_fmadd_ps(x, _mm256_broadcast_ss(w + (size_t)(s * 16 + l) * m_stride + m), a[s]);
                }
            }
        }
        CK_UNROLL for (int s = 0; s < S; s++) _mm256_storeu_ps(acc + (size_t)(s * 16 + l) * 8, a[s]);
    }
    for (int s = 0; s < S; s++) _mm256_storeu_ps(out[s] + 8 * c, reduce16_over_d(acc + (size_t)s * 128, 8, 0));
}

// Tokens t0..<t0 + nt with the R query heads of KV head g. S_MAX: the most heads whose sums
// stay in registers in the V pass (12 with 16 ymm registers, 24 with AVX-512's 32).
CK_FAST static CK_INLINE void tile_body(const ck_attention_args *p, int t0, int nt, int g, float *scratch,
                                        const int S_MAX) {
    const int hd = p->head_dim, nv = hd / 8;
    const int R = p->n_head / p->n_kv_head;
    const int nq = nt * R;  // query head s: token t0 + s / R, head g * R + s % R
    const int sstride = tile_row_floats(p);
    const int nk_min = p->pos0 + t0 + 1, nk_max = p->pos0 + t0 + nt;
    // With a sliding window, the keys before the tile's first token's window weigh 0 for every
    // head of the tile: they are neither scored nor summed, from the 16-key block holding that
    // first visible key on (blocks stay where the softmax and the lanes put them, and a sum that
    // skips weights of exactly 0 is the sum that adds them).
    const int first = p->window > 0 && nk_min > p->window ? nk_min - p->window : 0;
    const int j0 = first & ~15;
    const int m_stride = ((nk_max + 15) / 16) | 1;  // steps per lane, odd for the same reason
    const size_t nq_max = (size_t)ck_attention_tile_tokens(R) * R;
    float *qf = scratch;
    float *kf = qf + nq_max * hd;
    float *scores = kf + (size_t)CK_TILE_KEYS * hd;
    float *lanes = scores + nq_max * sstride;
    float *acc = lanes + nq_max * sstride;
    int nk[CK_MAX_GROUP * 16];
    float *out[CK_MAX_GROUP * 16];
    for (int s = 0; s < nq; s++) {
        const int t = t0 + s / R, h = g * R + s % R;
        nk[s] = p->pos0 + t + 1;
        out[s] = p->out + (size_t)t * p->out_stride + (size_t)h * hd;
        const float *qh = p->q + (size_t)t * p->q_stride + (size_t)h * hd;
        for (int v = 0; v < nv; v++) {
            const __m256 x = _mm256_loadu_ps(qh + 8 * v);
            _mm256_storeu_ps(qf + (size_t)s * hd + 8 * v, _mm256_cvtph_ps(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT)));
        }
    }
    // Scores, CK_TILE_KEYS keys at a time up to the tile's last token (rows past the cache's
    // valid keys convert as zeros; scores past a head's own keys are never read).
    const uint16_t *kbase = p->k_cache + (size_t)g * hd;
    const __m256 scale = _mm256_set1_ps(p->scale);
    for (int jb = j0; jb < nk_max; jb += CK_TILE_KEYS) {
        for (int j = 0; j < CK_TILE_KEYS; j++) {
            const uint16_t *kj = kbase + (size_t)(jb + j) * p->kv_stride;
            for (int v = 0; v < nv; v++) {
                const __m256 x = jb + j < nk_max ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(kj + 8 * v)))
                                                 : _mm256_setzero_ps();
                _mm256_storeu_ps(kf + (size_t)j * hd + 8 * v, x);
            }
        }
        float *sb = scores + jb;
        switch (nv) {
        case 8: tile_scores_block(qf, nq, hd, kf, scale, sb, sstride, 8); break;
        case 16: tile_scores_block(qf, nq, hd, kf, scale, sb, sstride, 16); break;
        case 32: tile_scores_block(qf, nq, hd, kf, scale, sb, sstride, 32); break;
        default: tile_scores_block(qf, nq, hd, kf, scale, sb, sstride, 0); break;
        }
    }
    // Softmax per head, then its weights in lane order (lane l, step m: key 16 m + l).
    for (int s = 0; s < nq; s++) {
        float *row = scores + (size_t)s * sstride;
        ck_attention_mask_window(p, t0 + s / R, row);
        softmax_weights_ggml(row + j0, nk[s] - j0, ck_attention_sink(p, g * R + s % R));
        float *ws = lanes + (size_t)s * 16 * m_stride;
        for (int l = 0; l < 16; l++) {
            for (int m = j0 / 16; m < m_stride; m++) {
                const int j = 16 * m + l;
                ws[l * m_stride + m] = j < nk[s] ? row[j] : 0.0f;
            }
        }
    }
    // V: heads in blocks whose sums fit the registers, 8 output dims at a time.
    const uint16_t *vbase = p->v_cache + (size_t)g * hd;
    int s0 = 0;
    while (s0 < nq) {
        const int left = nq - s0;
        const float *w = lanes + (size_t)s0 * 16 * m_stride;
        const int *nks = nk + s0;
        float *const *outs = out + s0;
        int S;
        if (S_MAX >= 24 && left >= 24) {
            S = 24;
            for (int c = 0; c < nv; c++) tile_values_block(vbase, p->kv_stride, w, m_stride, nks, j0, nk_min, nk_max, c, acc, outs, 24);
        } else if (left >= 12) {
            S = 12;
            for (int c = 0; c < nv; c++) tile_values_block(vbase, p->kv_stride, w, m_stride, nks, j0, nk_min, nk_max, c, acc, outs, 12);
        } else if (left >= 8) {
            S = 8;
            for (int c = 0; c < nv; c++) tile_values_block(vbase, p->kv_stride, w, m_stride, nks, j0, nk_min, nk_max, c, acc, outs, 8);
        } else if (left >= 4) {
            S = 4;
            for (int c = 0; c < nv; c++) tile_values_block(vbase, p->kv_stride, w, m_stride, nks, j0, nk_min, nk_max, c, acc, outs, 4);
        } else if (left >= 2) {
            S = 2;
            for (int c = 0; c < nv; c++) tile_values_block(vbase, p->kv_stride, w, m_stride, nks, j0, nk_min, nk_max, c, acc, outs, 2);
        } else {
            S = 1;
            for (int c = 0; c < nv; c++) tile_values_block(vbase, p->kv_stride, w, m_stride, nks, j0, nk_min, nk_max, c, acc, outs, 1);
        }
        s0 += S;
    }
}

CK_FAST void ck_attention_tile_avx2(const ck_attention_args *p, int t0, int nt, int g, float *scratch) {
    tile_body(p, t0, nt, g, scratch, 12);
}

// The same code built for AVX-512VL: 32 vector registers, so 24 heads' sums in the V pass and
// the query and the key block's sums in registers while scoring. Same instructions' results.
CK_FAST512 void ck_attention_tile_avx512(const ck_attention_args *p, int t0, int nt, int g, float *scratch) {
    tile_body(p, t0, nt, g, scratch, 24);
}
#endif

// Q5_K re-laid out at load time for eight rows per vector (see interleave_q4_k.c), the fifth
// bits kept packed (1,440 bytes per eight rows and super-block against the file's 1,408).
//
// Q5_K is Q4_K with a fifth bit per value (qh[l] bit g: value 32g + l), so the nibbles go in
// Q4_K × 8's layout and qh in the same four-byte chunks: vector c, lane r = row r's
// qh[4c..4c+3]. The nibble vector 8j + c (values 64j + 4c.. in its low nibbles, 64j + 32 + 4c..
// in its high ones) takes its fifth bits from qh vector c, bits 2j and 2j + 1: one shift and
// one mask each move them to bit 4, where an or (AVX-512: one ternary-logic op with the nibble
// mask) joins them to the nibbles. Decode reads 2 % more bytes than the file; no byte is
// unpacked at load time, since decode is bound by the reads.
//
// Both of llama.cpp's orders are kept bit for bit (dot_kquants.c, dot_kquants_tiled.c):
// - tiled (micro-batches of 8+ rows, CK_ORDER_TILED, a prompt's rows): per super-block the
//   exact integer sums s1 = Σ scale_g Σ q a and s2 = Σ min_g (group sums), then
//   r = s1 * fp16(d_w); r = fma(-fp16(dmin_w), s2, r); acc = fma(r, d_a, acc). Eight rows in the
//   lanes give s1 and s2 out of vpdpbusd already separated by row, and the float steps run on
//   eight rows at once.
// - its AVX2 one-token order (rows alone, decode): eight integer lanes per row (lane L: values
//   4L..4L+3 of each 32-value group, times the group's scale), one FMA of d_a * fp16(d_w) per
//   lane and super-block, the lanes added in ck_hsum8's order, plus an FMA chain of
//   -d_a * fp16(dmin) times the exact mins sum. Here lane L of a row is accumulator L's lane r.
// The portable kernel (tiled, or the portable per-row kernel's order) is the reference; the
// AVX2 kernels are in interleave_q5_k_avx2.c.
#include <stdlib.h>
#include <string.h>

#include "interleave_forms.h"

size_t ck_q5_kx8_group_bytes(int k) { return (size_t)(k / CK_QK_K) * sizeof(ck_block_q5_Kx8); }

void ck_interleave_q5_kx8(const void *src, size_t src_row_bytes, int rows, int k, void *dst) {
    const int nb = k / CK_QK_K;
    for (int g = 0; g < rows / 8; g++) {
        ck_block_q5_Kx8 *out = (ck_block_q5_Kx8 *)((char *)dst + (size_t)g * ck_q5_kx8_group_bytes(k));
        for (int b = 0; b < nb; b++, out++) {
            for (int r = 0; r < 8; r++) {
                const ck_block_q5_K *in = (const ck_block_q5_K *)((const char *)src + (size_t)(8 * g + r) * src_row_bytes) + b;
                out->d[r] = in->d;
                out->dmin[r] = in->dmin;
                for (int s = 0; s < 8; s++) ck_scale_min_k4(s, in->scales, &out->sc[s][r], &out->m[s][r]);
                for (int j = 0; j < 4; j++) {
                    for (int c = 0; c < 8; c++) memcpy(out->qs + 32 * (8 * j + c) + 4 * r, in->qs + 32 * j + 4 * c, 4);
                }
                for (int c = 0; c < 8; c++) memcpy(out->qh + 32 * c + 4 * r, in->qh + 4 * c, 4);
            }
        }
    }
}

// MARK: - Portable (the reference beside the fast kernels)

// Value e (0..255) of row r: group e / 32, position l = e % 32 in it.
static inline int q5_value(const ck_block_q5_Kx8 *w, int r, int e) {
    const int g = e / 32, l = e % 32;
    const uint8_t byte = w->qs[32 * (8 * (g / 2) + l / 4) + 4 * r + l % 4];
    const int nib = g % 2 ? byte >> 4 : byte & 0x0f;
    return nib | (((w->qh[32 * (l / 4) + 4 * r + l % 4] >> g) & 1) << 4);
}

// Row r's exact sums over super-block w against a: Σ_g scale_g Σ q a, and Σ_g min_g (group sums).
static void q5_sums(const ck_block_q5_Kx8 *w, int r, const ck_block_q8_K *a, int *s1, int *s2) {
    int sumi = 0, summ = 0;
    for (int g = 0; g < 8; g++) {
        int s = 0;
        for (int e = 32 * g; e < 32 * g + 32; e++) s += q5_value(w, r, e) * a->qs[e];
        sumi += w->sc[g][r] * s;
        summ += w->m[g][r] * (a->bsums[2 * g] + a->bsums[2 * g + 1]);
    }
    *s1 = sumi;
    *s2 = summ;
}

// The portable per-row kernel's step (dot_q45_k_portable), written as it is so it rounds alike.
static float q5_scalar_step(int sumi, int summ, uint16_t dw, uint16_t dminw, float da) {
    const float d = da * ck_fp16_to_fp32(dw), dmin = da * ck_fp16_to_fp32(dminw);
    return d * (float)sumi - dmin * (float)summ;
}

// Eight rows against one activation row: in the tiled order (tiled != 0), else in the portable
// per-row kernel's (dot_q5_k_portable: the super-blocks' d s1 - dmin s2 added up). The fast
// kernels' one-token order is the fast per-row kernel's, which the tests hold them to.
static void group_q5_kx8_portable(int nb, const ck_block_q5_Kx8 *w, const ck_block_q8_K *a, int tiled, float *y) {
    for (int r = 0; r < 8; r++) {
        float acc = 0.0f;
        for (int b = 0; b < nb; b++) {
            int s1, s2;
            q5_sums(&w[b], r, &a[b], &s1, &s2);
            if (tiled) {
                float t = (float)s1 * ck_fp16_to_fp32(w[b].d[r]);
                t = fmaf(-ck_fp16_to_fp32(w[b].dmin[r]), (float)s2, t);
                acc = fmaf(t, a[b].d, acc);
            } else {
                acc += q5_scalar_step(s1, s2, w[b].d[r], w[b].dmin[r], a[b].d);
            }
        }
        y[r] = acc;
    }
}

// MARK: - VNNI

#if CK_X86
#define CK_Q5K_AHEAD 2  // super-blocks of 1,440 bytes ahead (decode)

// Nibble vector v with its fifth bits from qh vector h (bit `bit` of each byte), values 0..31:
// (v & 0x0f) | ((h moved so `bit` is bit 4) & 0x10), the select in one ternary-logic op.
static inline __attribute__((always_inline)) CK_FORMS_VNNI __m256i q5_join(__m256i v, __m256i h, int bit) {
    const __m256i moved = bit <= 4 ? _mm256_slli_epi16(h, 4 - bit) : _mm256_srli_epi16(h, bit - 4);
    const __m256i fifth = _mm256_and_si256(moved, _mm256_set1_epi8(0x10));
    // imm 0xE4: c ? a : b per bit, c the nibble mask.
    return _mm256_ternarylogic_epi32(v, fifth, _mm256_set1_epi8(0x0f), 0xE4);
}

static inline __attribute__((always_inline)) CK_FORMS_VNNI __m256i q5_lanes_u8(const uint8_t *p) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p));
}

// The tiled order, eight rows × T tokens (a constant after inlining): each vector unpacked once
// for the T tokens.
static inline __attribute__((always_inline)) CK_FORMS_VNNI void tile_q5_kx8_tiled(int nb, const ck_block_q5_Kx8 *w,
                                                                                 const ck_block_q8_K *const *x,
                                                                                 float *const *y, const int T) {
    __m256 acc[4];
    for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();
    for (int b = 0; b < nb; b++) {
        __m256i s1[4], s2[4];
        for (int t = 0; t < T; t++) s1[t] = s2[t] = _mm256_setzero_si256();
        for (int j = 0; j < 4; j++) {
            __m256i lo[4], hi[4];
            for (int t = 0; t < T; t++) lo[t] = hi[t] = _mm256_setzero_si256();
            for (int c = 0; c < 8; c++) {
                const __m256i v = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * (8 * j + c)));
                const __m256i h = _mm256_loadu_si256((const __m256i *)(w[b].qh + 32 * c));
                const __m256i ql = q5_join(v, h, 2 * j);
                const __m256i qu = q5_join(_mm256_srli_epi16(v, 4), h, 2 * j + 1);
                for (int t = 0; t < T; t++) {
                    lo[t] = _mm256_dpbusd_epi32(lo[t], ql, ck_bcast4(x[t][b].qs + 64 * j + 4 * c));
                    hi[t] = _mm256_dpbusd_epi32(hi[t], qu, ck_bcast4(x[t][b].qs + 64 * j + 32 + 4 * c));
                }
            }
            const __m256i sl = q5_lanes_u8(w[b].sc[2 * j]), sh = q5_lanes_u8(w[b].sc[2 * j + 1]);
            for (int t = 0; t < T; t++) {
                s1[t] = _mm256_add_epi32(s1[t], _mm256_add_epi32(_mm256_mullo_epi32(lo[t], sl), _mm256_mullo_epi32(hi[t], sh)));
            }
        }
        for (int j = 0; j < 4; j++) {
            const __m256i mp = ck_q5_k_min_pairs(&w[b], j);
            for (int t = 0; t < T; t++) s2[t] = _mm256_dpwssd_epi32(s2[t], mp, ck_q5_k_bsum_pair(&x[t][b], j));
        }
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].d));
        const __m256 dm = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].dmin));
        for (int t = 0; t < T; t++) {
            __m256 r = _mm256_mul_ps(_mm256_cvtepi32_ps(s1[t]), dw);
            r = _mm256_fnmadd_ps(dm, _mm256_cvtepi32_ps(s2[t]), r);
            acc[t] = _mm256_fmadd_ps(r, _mm256_set1_ps(x[t][b].d), acc[t]);
        }
    }
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y[t], acc[t]);
}

// Nibble vector v (16 rows: two groups joined) with its fifth bits from h, as q5_join. The
// shifts are on 32-bit lanes (AVX-512F; the 16-bit ones need BW): bit 4 of every byte still comes
// from the same byte, and the rest is masked off.
static inline __attribute__((always_inline)) CK_FORMS_VNNI __m512i q5_join16(__m512i v, __m512i h, int bit) {
    const __m512i moved = bit <= 4 ? _mm512_slli_epi32(h, 4 - bit) : _mm512_srli_epi32(h, bit - 4);
    const __m512i fifth = _mm512_and_si512(moved, _mm512_set1_epi8(0x10));
    return _mm512_ternarylogic_epi32(v, fifth, _mm512_set1_epi8(0x0f), 0xE4);
}

// 32 bytes at offset `at` of two groups' super-blocks joined: lanes 0-7 group a's rows, 8-15 b's.
static inline __attribute__((always_inline)) CK_FORMS_VNNI __m512i q5_join_groups(const uint8_t *a, const uint8_t *b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)a)),
                              _mm256_loadu_si256((const __m256i *)b), 1);
}

// Sixteen bytes (eight per group) as sixteen int32 lanes.
static inline __attribute__((always_inline)) CK_FORMS_VNNI __m512i q5_lanes16_u8(const uint8_t *a, const uint8_t *b) {
    return _mm512_cvtepu8_epi32(_mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)a), _mm_loadl_epi64((const __m128i *)b)));
}

// Up to eight tokens' activations gathered for the 16-row kernel, per super-block b: word w
// (values 4w..4w+3) of token t at q[(64b + w) T + t], the group-pair sums (ck_q5_k_bsum_pair)
// at bs[(4b + j) T + t], the scale at d[bT + t]. Every activation load in the kernel is then one
// base register plus a constant: eight tokens' row pointers wanted more registers than there
// are, and reloading them from the stack in the inner loop halved its speed.
typedef struct {
    const int32_t *q;
    const int32_t *bs;
    const float *d;
} q5_tokens;

// The gathered words live in a buffer per thread, grown as needed (276 B per token and
// super-block).
static _Thread_local int32_t *q5_gather_buffer;
static _Thread_local size_t q5_gather_words;

static int q5_reserve(size_t words) {
    if (words > q5_gather_words) {
        free(q5_gather_buffer);
        q5_gather_buffer = (int32_t *)malloc(words * sizeof(int32_t));
        q5_gather_words = q5_gather_buffer ? words : 0;
        if (!q5_gather_buffer) return 0;
    }
    return 1;
}

// T tokens' activations gathered into `at` (nb × T × 69 words).
static void q5_gather_into(int nb, const ck_block_q8_K *const *x, int T, int32_t *at, q5_tokens *out) {
    int32_t *q = at, *bs = q + (size_t)nb * T * 64;
    float *d = (float *)(bs + (size_t)nb * T * 4);
    for (int b = 0; b < nb; b++) {
        for (int t = 0; t < T; t++) {
            const ck_block_q8_K *a = &x[t][b];
            for (int w = 0; w < 64; w++) memcpy(&q[((size_t)64 * b + w) * T + t], a->qs + 4 * w, 4);
            for (int j = 0; j < 4; j++) {
                const uint16_t lo = (uint16_t)(a->bsums[4 * j] + a->bsums[4 * j + 1]);
                const uint16_t hi = (uint16_t)(a->bsums[4 * j + 2] + a->bsums[4 * j + 3]);
                bs[((size_t)4 * b + j) * T + t] = (int32_t)((uint32_t)lo | (uint32_t)hi << 16);
            }
            d[(size_t)b * T + t] = a->d;
        }
    }
    out->q = q;
    out->bs = bs;
    out->d = d;
}

// One half of 64-value step j (half 0: the low nibbles, group 2j; 1: the high ones, group
// 2j + 1) of one super-block for sixteen rows and T tokens (tq: its gathered words): s1[t] +=
// scale × the group's sum. j, half and T are constants at every call (written out below: as a
// loop it was left rolled, with variable shifts and branches in the inner loop).
static inline __attribute__((always_inline)) CK_FORMS_VNNI void q5_half16(__m512i *s1, const ck_block_q5_Kx8 *wa,
                                                                         const ck_block_q5_Kx8 *wb, const int32_t *tq,
                                                                         const int T, const int j, const int half) {
    __m512i sum[8];
    for (int t = 0; t < T; t++) sum[t] = _mm512_setzero_si512();
    for (int c = 0; c < 8; c++) {
        const __m512i v = q5_join_groups(wa->qs + 32 * (8 * j + c), wb->qs + 32 * (8 * j + c));
        const __m512i h = q5_join_groups(wa->qh + 32 * c, wb->qh + 32 * c);
        const __m512i q = half ? q5_join16(_mm512_srli_epi32(v, 4), h, 2 * j + 1) : q5_join16(v, h, 2 * j);
        const int32_t *a = tq + (16 * j + 8 * half + c) * T;
        for (int t = 0; t < T; t++) sum[t] = _mm512_dpbusd_epi32(sum[t], q, _mm512_set1_epi32(a[t]));
    }
    const __m512i sc = q5_lanes16_u8(wa->sc[2 * j + half], wb->sc[2 * j + half]);
    for (int t = 0; t < T; t++) s1[t] = _mm512_add_epi32(s1[t], _mm512_mullo_epi32(sum[t], sc));
}

// tile_q5_kx8_tiled for two neighbouring groups at once in 512-bit vectors (lanes 0-7 group
// a's rows, 8-15 group b's; each lane's arithmetic exactly the 8-row kernel's) and up to eight
// tokens: the unpacking, a third of the instructions at four tokens and eight rows, is shared by
// sixteen rows and eight tokens. Eight tokens' sums of both nibble halves would take more than
// the 32 registers, so each 64-value step is walked twice, low nibbles then high (the second
// walk finds the 2 KiB in L1). Where 512-bit products run on two ports (Intel's server cores)
// this doubles the products per cycle; where they are split in two (Zen 4) it saves the
// front end the repeated unpacking.
static inline __attribute__((always_inline)) CK_FORMS_VNNI void tile_q5_kx16_tiled(int nb, const ck_block_q5_Kx8 *wa,
                                                                                  const ck_block_q5_Kx8 *wb,
                                                                                  const q5_tokens *x, float *const *y,
                                                                                  const int T) {
    __m512 acc[8];
    for (int t = 0; t < T; t++) acc[t] = _mm512_setzero_ps();
    for (int b = 0; b < nb; b++) {
        __m512i s1[8];
        for (int t = 0; t < T; t++) s1[t] = _mm512_setzero_si512();
        const int32_t *tq = x->q + (size_t)64 * b * T;
        q5_half16(s1, &wa[b], &wb[b], tq, T, 0, 0);
        q5_half16(s1, &wa[b], &wb[b], tq, T, 0, 1);
        q5_half16(s1, &wa[b], &wb[b], tq, T, 1, 0);
        q5_half16(s1, &wa[b], &wb[b], tq, T, 1, 1);
        q5_half16(s1, &wa[b], &wb[b], tq, T, 2, 0);
        q5_half16(s1, &wa[b], &wb[b], tq, T, 2, 1);
        q5_half16(s1, &wa[b], &wb[b], tq, T, 3, 0);
        q5_half16(s1, &wa[b], &wb[b], tq, T, 3, 1);
        __m512i mp[4];
        for (int j = 0; j < 4; j++) {
            mp[j] = _mm512_inserti64x4(_mm512_castsi256_si512(ck_q5_k_min_pairs(&wa[b], j)), ck_q5_k_min_pairs(&wb[b], j), 1);
        }
        const __m512 dw = _mm512_cvtph_ps(_mm256_inserti128_si256(
            _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)wa[b].d)), _mm_loadu_si128((const __m128i *)wb[b].d), 1));
        const __m512 dm = _mm512_cvtph_ps(_mm256_inserti128_si256(
            _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)wa[b].dmin)), _mm_loadu_si128((const __m128i *)wb[b].dmin), 1));
        const int32_t *tb = x->bs + (size_t)4 * b * T;
        for (int t = 0; t < T; t++) {
            __m512i s2 = _mm512_setzero_si512();
            for (int j = 0; j < 4; j++) s2 = _mm512_dpwssd_epi32(s2, mp[j], _mm512_set1_epi32(tb[j * T + t]));
            __m512 r = _mm512_mul_ps(_mm512_cvtepi32_ps(s1[t]), dw);
            r = _mm512_fnmadd_ps(dm, _mm512_cvtepi32_ps(s2), r);
            acc[t] = _mm512_fmadd_ps(r, _mm512_set1_ps(x->d[(size_t)b * T + t]), acc[t]);
        }
    }
    for (int t = 0; t < T; t++) _mm512_storeu_ps(y[t], acc[t]);
}

// Groups g0..<g1 against T <= 8 tokens (xt: their words gathered): pairs through the 16-row
// kernel, an odd last group through the 8-row one, four tokens at a time.
CK_FORMS_VNNI static void groups_q5_kx8_tiled_vnni(int nb, const char *w, size_t group_bytes, int g0, int g1,
                                                   const q5_tokens *xt, const ck_block_q8_K *const *x,
                                                   float *const *y, int T) {
    int g = g0;
    for (; g + 2 <= g1; g += 2) {
        const ck_block_q5_Kx8 *wa = (const ck_block_q5_Kx8 *)(w + (size_t)g * group_bytes);
        const ck_block_q5_Kx8 *wb = (const ck_block_q5_Kx8 *)(w + (size_t)(g + 1) * group_bytes);
        float *yg[8];
        for (int t = 0; t < T; t++) yg[t] = y[t] + 8 * g;
        switch (T) {
        case 8: tile_q5_kx16_tiled(nb, wa, wb, xt, yg, 8); break;
        case 7: tile_q5_kx16_tiled(nb, wa, wb, xt, yg, 7); break;
        case 6: tile_q5_kx16_tiled(nb, wa, wb, xt, yg, 6); break;
        case 5: tile_q5_kx16_tiled(nb, wa, wb, xt, yg, 5); break;
        case 4: tile_q5_kx16_tiled(nb, wa, wb, xt, yg, 4); break;
        case 3: tile_q5_kx16_tiled(nb, wa, wb, xt, yg, 3); break;
        case 2: tile_q5_kx16_tiled(nb, wa, wb, xt, yg, 2); break;
        default: tile_q5_kx16_tiled(nb, wa, wb, xt, yg, 1); break;
        }
    }
    for (; g < g1; g++) {
        const ck_block_q5_Kx8 *wg = (const ck_block_q5_Kx8 *)(w + (size_t)g * group_bytes);
        for (int t0 = 0; t0 < T; t0 += 4) {
            float *yg[4];
            const int n = T - t0 < 4 ? T - t0 : 4;
            for (int t = 0; t < n; t++) yg[t] = y[t0 + t] + 8 * g;
            if (n == 4) {
                tile_q5_kx8_tiled(nb, wg, x + t0, yg, 4);
            } else if (n == 3) {
                tile_q5_kx8_tiled(nb, wg, x + t0, yg, 3);
            } else if (n == 2) {
                tile_q5_kx8_tiled(nb, wg, x + t0, yg, 2);
            } else {
                tile_q5_kx8_tiled(nb, wg, x + t0, yg, 1);
            }
        }
    }
}

// Tiled tokens gathered at a time (eight walks; 276 B per token and super-block).
#define Q5_PASS_TOKENS 64

// Rows r0..<r1 against the tiled tokens on VNNI: up to 64 of them gathered once, then the rows a
// pass at a time (ck_pass_groups), every walk of eight tokens over each pass. Returns 0, having
// done nothing, when the buffer could not be had.
CK_FORMS_VNNI static int q5_kx8_tiled_vnni(const ck_matmul_args *p, int r0, int r1) {
    const int nb = p->k / CK_QK_K, groups = (r1 - r0) / 8;
    if (groups <= 0) return 1;
    if (!q5_reserve((size_t)nb * Q5_PASS_TOKENS * 69)) return 0;
    const int per = ck_pass_groups(p->w_row_bytes);
    const char *w = (const char *)p->w;
    int t = 0;
    while (t < p->n) {
        // The next (up to) 64 tiled tokens, in walks of eight, each walk's words gathered.
        const ck_block_q8_K *xs[Q5_PASS_TOKENS];
        float *ys[Q5_PASS_TOKENS];
        int count = 0;
        for (; t < p->n && count < Q5_PASS_TOKENS; t++) {
            if (!ck_token_tiled(p, t)) continue;
            xs[count] = (const ck_block_q8_K *)((const char *)p->x + (size_t)t * p->x_row_bytes);
            ys[count++] = p->y + (size_t)t * p->ldy;
        }
        if (count == 0) break;
        q5_tokens xt[Q5_PASS_TOKENS / 8];
        const int walks = (count + 7) / 8;
        for (int v = 0; v < walks; v++) {
            const int T = count - 8 * v < 8 ? count - 8 * v : 8;
            q5_gather_into(nb, xs + 8 * v, T, q5_gather_buffer + (size_t)nb * 8 * v * 69, &xt[v]);
        }
        for (int g0 = r0 / 8; g0 < r1 / 8; g0 += per) {
            const int g1 = g0 + per < r1 / 8 ? g0 + per : r1 / 8;
            for (int v = 0; v < walks; v++) {
                const int T = count - 8 * v < 8 ? count - 8 * v : 8;
                groups_q5_kx8_tiled_vnni(nb, w, p->w_row_bytes, g0, g1, &xt[v], xs + 8 * v, ys + 8 * v, T);
            }
        }
    }
    return 1;
}

// Eight rows' scales of group s as int16 in the low half of eight int32 lanes (high half 0):
// the form vpdpwssd multiplies a chunk's sum by (|sum| <= 4 * 31 * 128 fits an int16).
static inline __attribute__((always_inline)) CK_FORMS_VNNI __m256i q5_scale_words(const uint8_t *p) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p));
}

// The one-token order, eight rows: chunk c of each group goes to lane c's integer accumulator.
CK_FORMS_VNNI static void group_q5_kx8_lanes_vnni(int nb, const ck_block_q5_Kx8 *w, const ck_block_q8_K *a, float *y) {
    __m256 acc[8];
    for (int L = 0; L < 8; L++) acc[L] = _mm256_setzero_ps();
    __m256 summs = _mm256_setzero_ps();
    for (int b = 0; b < nb; b++) {
        for (int l = 0; l < (int)sizeof(ck_block_q5_Kx8); l += 64) _mm_prefetch((const char *)(w + b + CK_AHEAD(CK_Q5K_AHEAD)) + l, _MM_HINT_T0);
        const __m256 d = _mm256_mul_ps(_mm256_set1_ps(a[b].d), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].d)));
        const __m256 dmin =
            _mm256_mul_ps(_mm256_set1_ps(-a[b].d), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].dmin)));
        __m256i summ = _mm256_setzero_si256();
        for (int j = 0; j < 4; j++) summ = _mm256_dpwssd_epi32(summ, ck_q5_k_min_pairs(&w[b], j), ck_q5_k_bsum_pair(&a[b], j));
        summs = _mm256_fmadd_ps(dmin, _mm256_cvtepi32_ps(summ), summs);
        __m256i lane[8];
        for (int L = 0; L < 8; L++) lane[L] = _mm256_setzero_si256();
        for (int j = 0; j < 4; j++) {
            const __m256i sl = q5_scale_words(w[b].sc[2 * j]), sh = q5_scale_words(w[b].sc[2 * j + 1]);
            for (int c = 0; c < 8; c++) {
                const __m256i v = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * (8 * j + c)));
                const __m256i h = _mm256_loadu_si256((const __m256i *)(w[b].qh + 32 * c));
                const __m256i ql = q5_join(v, h, 2 * j);
                const __m256i qu = q5_join(_mm256_srli_epi16(v, 4), h, 2 * j + 1);
                const __m256i pl = _mm256_dpbusd_epi32(_mm256_setzero_si256(), ql, ck_bcast4(a[b].qs + 64 * j + 4 * c));
                const __m256i pu = _mm256_dpbusd_epi32(_mm256_setzero_si256(), qu, ck_bcast4(a[b].qs + 64 * j + 32 + 4 * c));
                lane[c] = _mm256_dpwssd_epi32(_mm256_dpwssd_epi32(lane[c], pl, sl), pu, sh);
            }
        }
        for (int L = 0; L < 8; L++) acc[L] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(lane[L]), acc[L]);
    }
    _mm256_storeu_ps(y, _mm256_add_ps(ck_chunks_in_hsum8_order(acc), summs));
}
#endif

// MARK: - Matrix product over a range of rows

// Rows r0..<r1 against `count` tokens all in one order: tiled (up to eight) or not (one).
static void q5_kx8_tokens(const ck_matmul_args *p, int r0, int r1, int fast, int tiled, const ck_block_q8_K *const *xs,
                          float *const *ys, int count) {
    const int nb = p->k / CK_QK_K;
    const char *w = (const char *)p->w;
    const size_t gb = p->w_row_bytes;
#if CK_X86
    if (fast != CK_INTERLEAVED_PORTABLE) {
        const int vnni = fast == CK_INTERLEAVED_VNNI;
        if (tiled) {
            // (The VNNI kernels take tiled tokens in ck_matmul_q5_kx8_rows.)
            ck_groups_q5_kx8_tiled_avx2(nb, w, gb, r0 / 8, r1 / 8, xs, ys, count);
            return;
        }
        for (int g = r0 / 8; g < r1 / 8; g++) {
            const ck_block_q5_Kx8 *wg = (const ck_block_q5_Kx8 *)(w + (size_t)g * gb);
            (vnni ? group_q5_kx8_lanes_vnni : ck_group_q5_kx8_lanes_avx2)(nb, wg, xs[0], ys[0] + 8 * g);
        }
        return;
    }
#endif
    (void)fast;
    for (int g = r0 / 8; g < r1 / 8; g++) {
        const ck_block_q5_Kx8 *wg = (const ck_block_q5_Kx8 *)(w + (size_t)g * gb);
        for (int u = 0; u < count; u++) group_q5_kx8_portable(nb, wg, xs[u], tiled, ys[u] + 8 * g);
    }
}

void ck_matmul_q5_kx8_rows(const ck_matmul_args *p, int r0, int r1, int fast) {
#if CK_X86
    if (fast == CK_INTERLEAVED_VNNI && q5_kx8_tiled_vnni(p, r0, r1)) {
        ck_matmul_kx8_order(p, r0, r1, fast, 0, q5_kx8_tokens);  // the one-token rows (decode's order)
        return;
    }
#endif
    ck_matmul_kx8_by_order(p, r0, r1, fast, q5_kx8_tokens);
}

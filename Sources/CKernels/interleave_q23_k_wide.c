// The tiled order of Q3_K × 8 (interleave_q3_k.c) for two neighbouring groups at once in 512-bit vectors (lanes 0-7 group a's rows, 8-15 group b's;
// each lane's arithmetic exactly the eight-row kernels') and up to eight tokens: the unpacking of
// the codes, as many instructions as the products at four tokens and eight rows, is shared by
// sixteen rows and eight tokens (Q5_K's wide kernel does the same, interleave_q5_k.c). (Q2_K's
// form had one too until it took llama.cpp's repacked order on these CPUs: interleave_q2_k.c.)
//
// The shifts are on 32-bit lanes (AVX-512F; the 16-bit ones need BW): every bit kept after the
// masks still comes from its own byte (right by at most 6 for the codes, at most 5 right or 2
// left for Q3_K's high bits). The tokens' activation words are gathered per super-block first
// (word w of token t at q[(64b + w) T + t]) so that every load in the inner loop is one base
// register plus a constant: eight row pointers do not fit the general registers.
#include <stdlib.h>
#include <string.h>

#include "interleave_forms.h"

#if CK_X86
typedef struct {
    const int32_t *q;   // (64b + w) T + t: activation bytes 4w..4w+3 of token t, super-block b
    const int32_t *bs;  // (16b + j) T + t: -4 × Q8_K sum j in the low int16
    const float *d;     // bT + t
} k_low_tokens;

static _Thread_local int32_t *k_low_buffer;
static _Thread_local size_t k_low_words;

static int k_low_gather(int nb, const ck_block_q8_K *const *x, int T, k_low_tokens *out) {
    const size_t words = (size_t)nb * T * (64 + 16 + 1);
    if (words > k_low_words) {
        free(k_low_buffer);
        k_low_buffer = (int32_t *)malloc(words * sizeof(int32_t));
        k_low_words = k_low_buffer ? words : 0;
        if (!k_low_buffer) return 0;
    }
    int32_t *q = k_low_buffer, *bs = q + (size_t)nb * T * 64;
    float *d = (float *)(bs + (size_t)nb * T * 16);
    for (int b = 0; b < nb; b++) {
        for (int t = 0; t < T; t++) {
            const ck_block_q8_K *a = &x[t][b];
            for (int w = 0; w < 64; w++) memcpy(&q[((size_t)64 * b + w) * T + t], a->qs + 4 * w, 4);
            for (int j = 0; j < 16; j++) bs[((size_t)16 * b + j) * T + t] = (int32_t)(uint16_t)(-4 * a->bsums[j]);
            d[(size_t)b * T + t] = a->d;
        }
    }
    out->q = q;
    out->bs = bs;
    out->d = d;
    return 1;
}

// 32 bytes at the same offset of two groups' super-blocks: lanes 0-7 a's, 8-15 b's.
static inline __attribute__((always_inline)) CK_FORMS_VNNI __m512i k_low_join(const void *a, const void *b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)a)),
                              _mm256_loadu_si256((const __m256i *)b), 1);
}

// Sixteen scale bytes (eight per group) as sixteen int32 lanes, the value in the low int16.
static inline __attribute__((always_inline)) CK_FORMS_VNNI __m512i k_low_scales_i8(const int8_t *a, const int8_t *b) {
    const __m128i s = _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)a), _mm_loadl_epi64((const __m128i *)b));
    return _mm512_and_si512(_mm512_cvtepi8_epi32(s), _mm512_set1_epi32(0xffff));
}

static inline __attribute__((always_inline)) CK_FORMS_VNNI __m512 k_low_d16(const uint16_t *a, const uint16_t *b) {
    return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)a)),
                                                   _mm_loadu_si128((const __m128i *)b), 1));
}

// MARK: - Q3_K

// Group g = 2m + half of one super-block, sixteen rows × T tokens: s1[t] += scale × Σ q a.
static inline __attribute__((always_inline)) CK_FORMS_VNNI void q3_group16(__m512i *s1, const ck_block_q3_Kx8 *wa,
                                                                          const ck_block_q3_Kx8 *wb, const int32_t *tq,
                                                                          const int32_t *tb, const int T, const int m,
                                                                          const int half) {
    const int h = m / 4, s = m % 4, g = 2 * m + half, hb = 4 * h + s;
    __m512i sum[8];
    for (int t = 0; t < T; t++) sum[t] = _mm512_set1_epi32(tb[g * T + t]);
    for (int c = 4 * half; c < 4 * half + 4; c++) {
        const __m512i v = k_low_join(wa->qs + 32 * (8 * h + c), wb->qs + 32 * (8 * h + c));
        const __m512i hm = k_low_join(wa->hm + 32 * c, wb->hm + 32 * c);
        const __m512i lo = s ? _mm512_srli_epi32(v, 2 * s) : v;
        const __m512i hi = hb > 2 ? _mm512_srli_epi32(hm, hb - 2) : hb < 2 ? _mm512_slli_epi32(hm, 2 - hb) : hm;
        const __m512i q =
            _mm512_ternarylogic_epi32(lo, _mm512_and_si512(hi, _mm512_set1_epi8(4)), _mm512_set1_epi8(3), 0xE4);
        const int32_t *a = tq + (8 * m + c) * T;
        for (int t = 0; t < T; t++) sum[t] = _mm512_dpbusd_epi32(sum[t], q, _mm512_set1_epi32(a[t]));
    }
    const __m512i sc = k_low_scales_i8(wa->sc[g], wb->sc[g]);
    for (int t = 0; t < T; t++) s1[t] = _mm512_dpwssd_epi32(s1[t], sum[t], sc);
}

#define K_LOW_GROUPS(F, ...)                                                                                           \
    F(__VA_ARGS__, 0, 0); F(__VA_ARGS__, 0, 1); F(__VA_ARGS__, 1, 0); F(__VA_ARGS__, 1, 1); F(__VA_ARGS__, 2, 0);      \
    F(__VA_ARGS__, 2, 1); F(__VA_ARGS__, 3, 0); F(__VA_ARGS__, 3, 1); F(__VA_ARGS__, 4, 0); F(__VA_ARGS__, 4, 1);      \
    F(__VA_ARGS__, 5, 0); F(__VA_ARGS__, 5, 1); F(__VA_ARGS__, 6, 0); F(__VA_ARGS__, 6, 1); F(__VA_ARGS__, 7, 0);      \
    F(__VA_ARGS__, 7, 1)

static inline __attribute__((always_inline)) CK_FORMS_VNNI void tile_q3_kx16(int nb, const ck_block_q3_Kx8 *wa,
                                                                            const ck_block_q3_Kx8 *wb, const k_low_tokens *x,
                                                                            float *const *y, const int T) {
    __m512 acc[8];
    for (int t = 0; t < T; t++) acc[t] = _mm512_setzero_ps();
    for (int b = 0; b < nb; b++) {
        __m512i s1[8];
        for (int t = 0; t < T; t++) s1[t] = _mm512_setzero_si512();
        const int32_t *tq = x->q + (size_t)64 * b * T, *tb = x->bs + (size_t)16 * b * T;
        K_LOW_GROUPS(q3_group16, s1, &wa[b], &wb[b], tq, tb, T);
        const __m512 dw = k_low_d16(wa[b].d, wb[b].d);
        for (int t = 0; t < T; t++) {
            const __m512 r = _mm512_mul_ps(_mm512_cvtepi32_ps(s1[t]), dw);
            acc[t] = _mm512_fmadd_ps(r, _mm512_set1_ps(x->d[(size_t)b * T + t]), acc[t]);
        }
    }
    for (int t = 0; t < T; t++) _mm512_storeu_ps(y[t], acc[t]);
}

// MARK: - Groups

#define K_LOW_PAIRS(NAME, BLOCK, TILE)                                                                                 \
    CK_FORMS_VNNI int NAME(int nb, const char *w, size_t gb, int g0, int g1, const ck_block_q8_K *const *x,            \
                           float *const *y, int T) {                                                                   \
        k_low_tokens xt;                                                                                               \
        if (g1 - g0 < 2 || !k_low_gather(nb, x, T, &xt)) return g0;                                                     \
        int g = g0;                                                                                                    \
        for (; g + 2 <= g1; g += 2) {                                                                                  \
            const BLOCK *wa = (const BLOCK *)(w + (size_t)g * gb), *wb = (const BLOCK *)(w + (size_t)(g + 1) * gb);    \
            float *yg[8];                                                                                              \
            for (int t = 0; t < T; t++) yg[t] = y[t] + 8 * g;                                                          \
            switch (T) {                                                                                               \
            case 8: TILE(nb, wa, wb, &xt, yg, 8); break;                                                               \
            case 7: TILE(nb, wa, wb, &xt, yg, 7); break;                                                               \
            case 6: TILE(nb, wa, wb, &xt, yg, 6); break;                                                               \
            case 5: TILE(nb, wa, wb, &xt, yg, 5); break;                                                               \
            case 4: TILE(nb, wa, wb, &xt, yg, 4); break;                                                               \
            case 3: TILE(nb, wa, wb, &xt, yg, 3); break;                                                               \
            case 2: TILE(nb, wa, wb, &xt, yg, 2); break;                                                               \
            default: TILE(nb, wa, wb, &xt, yg, 1); break;                                                              \
            }                                                                                                          \
        }                                                                                                              \
        return g;                                                                                                      \
    }
K_LOW_PAIRS(ck_groups_q3_kx16_tiled, ck_block_q3_Kx8, tile_q3_kx16)
#endif

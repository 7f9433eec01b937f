// Q6_K re-laid out at load time for eight rows per VNNI instruction (see interleave_q4_k.c); the
// AVX2 kernels are in interleave_q6_k_avx2.c.
//
// The form keeps the file's bytes (210 per row and super-block): ql and qh are interleaved four
// bytes at a time, as Q4_K's nibbles are. Element e = 128n + 32i + 4L + j (half n, quarter i of
// the half, chunk L of the quarter, j < 4) of row r is
//   low four bits   ql vector 16n + 8(i & 1) + L, lane r, byte j, nibble i >> 1
//   high two bits   qh vector 8n + L,              lane r, byte j, bits 2i, 2i + 1
// so one qh vector and two ql vectors give the four chunks (i = 0..3) of lane L in a half. The
// three are stored side by side (triple 8n + L, 96 bytes), so decode reads the block from start
// to end: read from three places at once (the ql and qh arrays of the file's block), a Zen 4 core
// streamed a Q6_K decode walk at half the speed.
// Decode reads the form as it is; a prompt's tokens (the tiled order) read values unpacked into
// bytes in a buffer per thread, a pass of rows at a time, so the unpacking is paid once for
// every token of the pass (the form was 274 bytes per row unpacked before: decode read 1.3x the
// file's bytes).
//
// Both of ggml's orders are kept bit for bit (dot_kquants.c):
// - tiled (micro-batches of 8+ rows, CK_ORDER_TILED): per super-block the exact integer sum of
//   scale * (q - 32) * a, times fp16(d_w), one FMA with d_a. With rows in lanes this is
//   vpdpbusd per chunk, one multiply by the group's scales per 16 values, and the FMA on eight
//   rows at once: the time goes from ~9 % of a Gemma 3 prompt to a third of that.
// - its AVX2 one-token order: eight integer lanes per row (lane L: bytes 4L..4L+3 of each
//   32-value quarter, each scaled by its group's scale, less 32 * its two groups' sums), one
//   FMA per lane and super-block, the lanes added in ck_hsum8's order. Here lane L of a row is
//   accumulator L's lane r; each chunk's sum is multiplied by its scale in a vpdpwssd (integer
//   sums, so the order the chunks come in does not matter). That serves decode and rows alone.
#include <string.h>

#include "interleave_forms.h"

// Where ql vector v (16n + 8h + L) and qh vector v (8n + L) start in a block's q.
static inline int q6_ql_at(int v) { return 96 * (8 * (v / 16) + v % 8) + 32 * (v / 8 % 2); }
static inline int q6_qh_at(int v) { return 96 * v + 64; }

size_t ck_q6_kx8_group_bytes(int k) { return (size_t)(k / CK_QK_K) * sizeof(ck_block_q6_Kx8); }

void ck_interleave_q6_kx8(const void *src, size_t src_row_bytes, int rows, int k, void *dst) {
    const int nb = k / CK_QK_K;
    for (int g = 0; g < rows / 8; g++) {
        ck_block_q6_Kx8 *out = (ck_block_q6_Kx8 *)((char *)dst + (size_t)g * ck_q6_kx8_group_bytes(k));
        for (int b = 0; b < nb; b++, out++) {
            for (int r = 0; r < 8; r++) {
                const ck_block_q6_K *in = (const ck_block_q6_K *)((const char *)src + (size_t)(8 * g + r) * src_row_bytes) + b;
                out->d[r] = in->d;
                for (int s = 0; s < 16; s++) out->scales[s][r] = in->scales[s];
                for (int v = 0; v < 32; v++) memcpy(out->q + q6_ql_at(v) + 4 * r, in->ql + 4 * v, 4);
                for (int v = 0; v < 16; v++) memcpy(out->q + q6_qh_at(v) + 4 * r, in->qh + 4 * v, 4);
            }
        }
    }
}

// The values unpacked into bytes q + 32 (0..63), what the tiled kernels read: 64 vectors of 32
// bytes, vector ch, lane r = row r's values 4ch..4ch+3 (2,192 bytes per eight rows).
typedef struct {
    uint16_t d[8];
    int8_t scales[16][8];
    uint8_t q[2048];
} ck_block_q6_Kx8u;

// Two neighbouring groups' values unpacked side by side for the 16-row kernel (4,384 bytes per
// super-block): lanes 0-7 the first group's rows, 8-15 the second's; vector ch (64 bytes) is the
// first group's chunk ch, then the second's.
typedef struct {
    uint16_t d[16];
    int8_t scales[16][16];
    uint8_t q[4096];
} ck_block_q6_Kx16u;
_Static_assert(sizeof(ck_block_q6_Kx16u) == 2 * sizeof(ck_block_q6_Kx8u), "a pair takes the room of two groups");

// MARK: - Portable (the reference beside the VNNI kernel)

// Eight rows against one activation row in `order`: Q6_ORDER_TILED, Q6_ORDER_LANES (ggml's
// AVX2 one-token order, what the fast per-row kernels give) or Q6_ORDER_SCALAR (the portable
// per-row kernel's: the super-block's exact sum times d_a * fp16(d_w), added up).
enum { Q6_ORDER_TILED, Q6_ORDER_LANES, Q6_ORDER_SCALAR };

// Element e of row r as q + 32 (0..63).
static inline int q6_value(const ck_block_q6_Kx8 *w, int r, int e) {
    const int n = e / 128, i = (e % 128) / 32, L = (e % 32) / 4, j = e % 4;
    const int lo = w->q[q6_ql_at(16 * n + 8 * (i & 1) + L) + 4 * r + j] >> (4 * (i >> 1)) & 0x0f;
    const int hi = w->q[q6_qh_at(8 * n + L) + 4 * r + j] >> (2 * i) & 3;
    return lo | hi << 4;
}

static void group_q6_kx8_portable(int nb, const ck_block_q6_Kx8 *w, const ck_block_q8_K *a, int order, float *y) {
    for (int r = 0; r < 8; r++) {
        float acc = 0.0f, sum = 0.0f, lanes[8] = {0};
        for (int b = 0; b < nb; b++) {
            const float dw = ck_fp16_to_fp32(w[b].d[r]);
            if (order != Q6_ORDER_LANES) {
                int sumi = 0;
                for (int s = 0; s < 16; s++) {
                    int part = 0;
                    for (int e = 16 * s; e < 16 * s + 16; e++) part += (q6_value(&w[b], r, e) - 32) * a[b].qs[e];
                    sumi += w[b].scales[s][r] * part;
                }
                if (order == Q6_ORDER_TILED) {
                    acc = fmaf((float)sumi * dw, a[b].d, acc);
                } else {
                    sum += a[b].d * dw * (float)sumi;
                }
                continue;
            }
            const float d = a[b].d * dw;
            for (int L = 0; L < 8; L++) {
                int lane = 0;
                for (int quarter = 0; quarter < 8; quarter++) {
                    const int e0 = 32 * quarter + 4 * L;
                    int part = 0;
                    for (int e = e0; e < e0 + 4; e++) part += q6_value(&w[b], r, e) * a[b].qs[e];
                    lane += w[b].scales[e0 / 16][r] * part;
                }
                lane -= 32 * (a[b].bsums[2 * L] * w[b].scales[2 * L][r] + a[b].bsums[2 * L + 1] * w[b].scales[2 * L + 1][r]);
                lanes[L] = fmaf(d, (float)lane, lanes[L]);
            }
        }
        y[r] = order == Q6_ORDER_TILED    ? acc
               : order == Q6_ORDER_SCALAR ? sum
                                          : ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) +
                                                ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]));
    }
}

// MARK: - VNNI

#ifndef CK_Q6K_AHEAD
#define CK_Q6K_AHEAD 2  // super-blocks ahead where the far distance is taken (Intel; measured unpacked: 1, 3 and 4 within noise of 2)
#endif

#if CK_X86
// Eight rows' scales of group s as eight int32 lanes.
static inline __attribute__((always_inline)) CK_FORMS_VNNI __m256i scale_lanes(const int8_t *scales) {
    return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)scales));
}

// The tiled order, eight rows × T tokens (a constant after inlining).
static inline __attribute__((always_inline)) CK_FORMS_VNNI void tile_q6_kx8_tiled(int nb, const ck_block_q6_Kx8u *w,
                                                                                 const ck_block_q8_K *const *x,
                                                                                 float *const *y, const int T) {
    __m256 acc[4];
    for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();
    for (int b = 0; b < nb; b++) {
        __m256i sumi[4];
        for (int t = 0; t < T; t++) sumi[t] = _mm256_setzero_si256();
        for (int s = 0; s < 16; s++) {
            __m256i g[4];
            for (int t = 0; t < T; t++) g[t] = _mm256_set1_epi32(-32 * x[t][b].bsums[s]);
            for (int c = 0; c < 4; c++) {
                const __m256i v = _mm256_loadu_si256((const __m256i *)(w[b].q + 32 * (4 * s + c)));
                for (int t = 0; t < T; t++) g[t] = _mm256_dpbusd_epi32(g[t], v, ck_bcast4(x[t][b].qs + 16 * s + 4 * c));
            }
            const __m256i sc = scale_lanes(w[b].scales[s]);
            for (int t = 0; t < T; t++) sumi[t] = _mm256_add_epi32(sumi[t], _mm256_mullo_epi32(g[t], sc));
        }
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].d));
        for (int t = 0; t < T; t++) {
            const __m256 r = _mm256_mul_ps(_mm256_cvtepi32_ps(sumi[t]), dw);
            acc[t] = _mm256_fmadd_ps(r, _mm256_set1_ps(x[t][b].d), acc[t]);
        }
    }
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y[t], acc[t]);
}

// Eight rows' scales of group s as int16 in the low half of eight int32 lanes (high half 0):
// the form vpdpwssd multiplies a chunk's sum by (the sum fits an int16: |4 * 63 * 128| < 2^15).
static inline __attribute__((always_inline)) CK_FORMS_VNNI __m256i scale_words(const int8_t *scales) {
    return _mm256_cvtepu16_epi32(_mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)scales)));
}

// Lane r of a ql and a qh vector (`lo`: ql's nibbles already shifted down, or not) into the bytes
// q + 32 of one chunk, bits 0-3 from lo and 4-5 from hi (whose other bits are clear).
static inline __attribute__((always_inline)) CK_FORMS_VNNI __m256i q6_join(__m256i lo, __m256i hi) {
    return _mm256_ternarylogic_epi32(lo, hi, _mm256_set1_epi8(0x0f), 0xec);  // (lo & 0x0f) | hi
}

// The four chunks (quarters i = 0..3) of lane L in half n of super-block w, unpacked.
static inline __attribute__((always_inline)) CK_FORMS_VNNI void q6_chunks(const ck_block_q6_Kx8 *w, int n, int L,
                                                                          __m256i v[4]) {
    const uint8_t *t = w->q + 96 * (8 * n + L);  // ql vectors 16n + L, 16n + 8 + L, qh vector 8n + L
    const __m256i a = _mm256_loadu_si256((const __m256i *)t);
    const __m256i b = _mm256_loadu_si256((const __m256i *)(t + 32));
    const __m256i h = _mm256_loadu_si256((const __m256i *)(t + 64));
    const __m256i m = _mm256_set1_epi8(0x30);
    // 16-bit shifts: the bits kept never cross a byte (they move within bits 0-5 of their own).
    v[0] = q6_join(a, _mm256_and_si256(_mm256_slli_epi16(h, 4), m));
    v[1] = q6_join(b, _mm256_and_si256(_mm256_slli_epi16(h, 2), m));
    v[2] = q6_join(_mm256_srli_epi16(a, 4), _mm256_and_si256(h, m));
    v[3] = q6_join(_mm256_srli_epi16(b, 4), _mm256_and_si256(_mm256_srli_epi16(h, 2), m));
}

// q6_chunks for two groups at once, a's chunks in the low 256 bits and b's in the high (32-bit
// shifts: like the 16-bit ones, they keep every bit used within its own byte).
static inline __attribute__((always_inline)) CK_FORMS_VNNI void q6_chunks_pair(const ck_block_q6_Kx8 *a,
                                                                               const ck_block_q6_Kx8 *b, int n, int L,
                                                                               __m512i v[4]) {
#define Q6_PAIR(at)                                                                                     \
    _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(a->q + (at)))),       \
                       _mm256_loadu_si256((const __m256i *)(b->q + (at))), 1)
    const int t = 96 * (8 * n + L);
    const __m512i lo = Q6_PAIR(t), hi = Q6_PAIR(t + 32), h = Q6_PAIR(t + 64);
#undef Q6_PAIR
    const __m512i m = _mm512_set1_epi32(0x30303030), low = _mm512_set1_epi32(0x0f0f0f0f);
    v[0] = _mm512_ternarylogic_epi32(lo, _mm512_and_si512(_mm512_slli_epi32(h, 4), m), low, 0xec);
    v[1] = _mm512_ternarylogic_epi32(hi, _mm512_and_si512(_mm512_slli_epi32(h, 2), m), low, 0xec);
    v[2] = _mm512_ternarylogic_epi32(_mm512_srli_epi32(lo, 4), _mm512_and_si512(h, m), low, 0xec);
    v[3] = _mm512_ternarylogic_epi32(_mm512_srli_epi32(hi, 4), _mm512_and_si512(_mm512_srli_epi32(h, 2), m), low, 0xec);
}

// The one-token order, eight rows, one token, read from the form as it is. Chunk
// 32n + 8i + L (group 8n + 2i + L / 4) goes to lane L's integer accumulator.
CK_FORMS_VNNI static void group_q6_kx8_lanes_vnni(int nb, const ck_block_q6_Kx8 *w, const ck_block_q8_K *a, float *y) {
    __m256 acc[8];
    for (int L = 0; L < 8; L++) acc[L] = _mm256_setzero_ps();
    for (int b = 0; b < nb; b++) {
        ck_prefetch_block(w + b + CK_AHEAD(CK_Q6K_AHEAD), sizeof *w);
        const __m256 d = _mm256_mul_ps(_mm256_set1_ps(a[b].d), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].d)));
        __m256i lane[8];
        for (int L = 0; L < 8; L++) {
            // Lane L's offset: 32 * (its two groups' sums times their scales), taken off first.
            const __m256i o = _mm256_add_epi32(_mm256_mullo_epi32(_mm256_set1_epi32(a[b].bsums[2 * L]), scale_lanes(w[b].scales[2 * L])),
                                               _mm256_mullo_epi32(_mm256_set1_epi32(a[b].bsums[2 * L + 1]),
                                                                  scale_lanes(w[b].scales[2 * L + 1])));
            lane[L] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(o, 5));
        }
        for (int n = 0; n < 2; n++) {
            __m256i sw[8];  // group 8n + g's scales
            for (int g = 0; g < 8; g++) sw[g] = scale_words(w[b].scales[8 * n + g]);
            // Unrolled so the eight lane sums stay in registers (rolled, each vpdpwssd loaded and
            // stored its lane's sum: 33.8-33.9 against 36.7-37.8 GB/s, a 1.7 MB matrix in cache).
#pragma clang loop unroll(full)
            for (int L = 0; L < 8; L++) {
                __m256i v[4];
                q6_chunks(&w[b], n, L, v);
                for (int i = 0; i < 4; i++) {
                    const int ch = 32 * n + 8 * i + L;
                    const __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), v[i], ck_bcast4(a[b].qs + 4 * ch));
                    lane[L] = _mm256_dpwssd_epi32(lane[L], s, sw[2 * i + L / 4]);
                }
            }
        }
        for (int L = 0; L < 8; L++) acc[L] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(lane[L]), acc[L]);
    }
    _mm256_storeu_ps(y, ck_chunks_in_hsum8_order(acc));
}

// Groups g0..<g1 of the form into the unpacked blocks of `out` (nb per group).
CK_FORMS_VNNI static void q6_unpack_groups(int nb, const char *w, size_t group_bytes, int g0, int g1, ck_block_q6_Kx8u *out) {
    for (int g = g0; g < g1; g++) {
        const ck_block_q6_Kx8 *in = (const ck_block_q6_Kx8 *)(w + (size_t)g * group_bytes);
        for (int b = 0; b < nb; b++, in++, out++) {
            memcpy(out->d, in->d, sizeof out->d);
            memcpy(out->scales, in->scales, sizeof out->scales);
            for (int n = 0; n < 2; n++) {
                for (int L = 0; L < 8; L++) {
                    __m256i v[4];
                    q6_chunks(in, n, L, v);
                    for (int i = 0; i < 4; i++) _mm256_storeu_si256((__m256i *)(out->q + 32 * (32 * n + 8 * i + L)), v[i]);
                }
            }
        }
    }
}

// tile_q6_kx8_tiled for two neighbouring groups in 512-bit vectors (lanes 0-7 group a's rows,
// 8-15 group b's, each lane's arithmetic exactly the 8-row kernel's) and up to eight tokens: where
// 512-bit products run on two ports (Intel's server cores) twice the products per cycle, and each
// weight vector serves eight tokens (a Q5_K_M prompt's Q6_K matrices took a quarter of its time
// at 1.8x the 8-row Q5_K kernel's cost per product).
static inline __attribute__((always_inline)) CK_FORMS_VNNI void tile_q6_kx16_tiled(int nb, const ck_block_q6_Kx16u *w,
                                                                                  const ck_block_q8_K *const *x,
                                                                                  float *const *y, const int T) {
    __m512 acc[8];
    for (int t = 0; t < T; t++) acc[t] = _mm512_setzero_ps();
    for (int b = 0; b < nb; b++) {
        __m512i sumi[8];
        for (int t = 0; t < T; t++) sumi[t] = _mm512_setzero_si512();
        for (int s = 0; s < 16; s++) {
            __m512i g[8];
            for (int t = 0; t < T; t++) g[t] = _mm512_set1_epi32(-32 * x[t][b].bsums[s]);
            for (int c = 0; c < 4; c++) {
                const __m512i v = _mm512_loadu_si512((const void *)(w[b].q + 64 * (4 * s + c)));
                for (int t = 0; t < T; t++) {
                    int32_t a4;
                    memcpy(&a4, x[t][b].qs + 16 * s + 4 * c, 4);
                    g[t] = _mm512_dpbusd_epi32(g[t], v, _mm512_set1_epi32(a4));
                }
            }
            const __m512i sc = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)w[b].scales[s]));
            for (int t = 0; t < T; t++) sumi[t] = _mm512_add_epi32(sumi[t], _mm512_mullo_epi32(g[t], sc));
        }
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)w[b].d));
        for (int t = 0; t < T; t++) {
            const __m512 r = _mm512_mul_ps(_mm512_cvtepi32_ps(sumi[t]), dw);
            acc[t] = _mm512_fmadd_ps(r, _mm512_set1_ps(x[t][b].d), acc[t]);
        }
    }
    for (int t = 0; t < T; t++) _mm512_storeu_ps(y[t], acc[t]);
}

// Groups g0..<g1 of the form unpacked for the tiled kernels into `out`: pairs as Kx16u, an odd
// last group as Kx8u (nb blocks each; a pair takes the room of two groups).
CK_FORMS_VNNI static void q6_unpack_pass(int nb, const char *w, size_t group_bytes, int g0, int g1, char *out) {
    const size_t ub = (size_t)nb * sizeof(ck_block_q6_Kx8u);
    int g = g0;
    for (; g + 2 <= g1; g += 2) {
        const ck_block_q6_Kx8 *a = (const ck_block_q6_Kx8 *)(w + (size_t)g * group_bytes);
        const ck_block_q6_Kx8 *b = (const ck_block_q6_Kx8 *)(w + (size_t)(g + 1) * group_bytes);
        ck_block_q6_Kx16u *o = (ck_block_q6_Kx16u *)(out + (size_t)(g - g0) * ub);
        for (int blk = 0; blk < nb; blk++, a++, b++, o++) {
            memcpy(o->d, a->d, sizeof a->d);
            memcpy(o->d + 8, b->d, sizeof b->d);
            for (int s = 0; s < 16; s++) {
                memcpy(o->scales[s], a->scales[s], 8);
                memcpy(o->scales[s] + 8, b->scales[s], 8);
            }
            for (int n = 0; n < 2; n++) {
                for (int L = 0; L < 8; L++) {
                    __m512i v[4];
                    q6_chunks_pair(a, b, n, L, v);
                    for (int i = 0; i < 4; i++) _mm512_storeu_si512((void *)(o->q + 64 * (32 * n + 8 * i + L)), v[i]);
                }
            }
        }
    }
    if (g < g1) q6_unpack_groups(nb, w, group_bytes, g, g1, (ck_block_q6_Kx8u *)(out + (size_t)(g - g0) * ub));
}

// A pass of `groups` groups unpacked by q6_unpack_pass against T <= 8 tokens (y[t]: the pass's
// first row): pairs through the 16-row kernel, an odd last group through the 8-row one, four
// tokens at a time.
CK_FORMS_VNNI static void q6_pass_tiled(int nb, const char *u, int groups, const ck_block_q8_K *const *x, float *const *y,
                                        int T) {
    const size_t ub = (size_t)nb * sizeof(ck_block_q6_Kx8u);
    int g = 0;
    for (; g + 2 <= groups; g += 2) {
        const ck_block_q6_Kx16u *w = (const ck_block_q6_Kx16u *)(u + (size_t)g * ub);
        float *yg[8];
        for (int t = 0; t < T; t++) yg[t] = y[t] + 8 * g;
        switch (T) {
        case 8: tile_q6_kx16_tiled(nb, w, x, yg, 8); break;
        case 7: tile_q6_kx16_tiled(nb, w, x, yg, 7); break;
        case 6: tile_q6_kx16_tiled(nb, w, x, yg, 6); break;
        case 5: tile_q6_kx16_tiled(nb, w, x, yg, 5); break;
        case 4: tile_q6_kx16_tiled(nb, w, x, yg, 4); break;
        case 3: tile_q6_kx16_tiled(nb, w, x, yg, 3); break;
        case 2: tile_q6_kx16_tiled(nb, w, x, yg, 2); break;
        default: tile_q6_kx16_tiled(nb, w, x, yg, 1); break;
        }
    }
    if (g < groups) {
        const ck_block_q6_Kx8u *wg = (const ck_block_q6_Kx8u *)(u + (size_t)g * ub);
        float *yg[8];
        for (int t = 0; t < T; t++) yg[t] = y[t] + 8 * g;
        int t = 0;
        for (; t + 4 <= T; t += 4) tile_q6_kx8_tiled(nb, wg, x + t, yg + t, 4);
        for (; t + 2 <= T; t += 2) tile_q6_kx8_tiled(nb, wg, x + t, yg + t, 2);
        if (t < T) tile_q6_kx8_tiled(nb, wg, x + t, yg + t, 1);
    }
}
#endif

// MARK: - Matrix product over a range of rows

// Rows r0..<r1 against `count` tokens all in one order, reading the form as it is: the VNNI
// one-token kernel, and the portable references (the AVX2 kernels are interleave_q6_k_avx2.c's;
// the VNNI path falls back here only when its buffer could not be had).
static void q6_kx8_tokens(const ck_matmul_args *p, int r0, int r1, int fast, int tiled, const ck_block_q8_K *const *xs,
                          float *const *ys, int count) {
    const int nb = p->k / CK_QK_K;
    const char *w = (const char *)p->w;
    const size_t gb = p->w_row_bytes;
#if CK_X86
    if (fast != CK_INTERLEAVED_PORTABLE && !tiled) {
        for (int g = r0 / 8; g < r1 / 8; g++) {
            const ck_block_q6_Kx8 *wg = (const ck_block_q6_Kx8 *)(w + (size_t)g * gb);
            if (fast == CK_INTERLEAVED_VNNI) {
                group_q6_kx8_lanes_vnni(nb, wg, xs[0], ys[0] + 8 * g);
            } else {
                ck_group_q6_kx8_lanes_avx2(nb, wg, xs[0], ys[0] + 8 * g);
            }
        }
        return;
    }
#endif
    // The portable paths keep the portable per-row kernel's one-token order, the AVX2 ones ggml's.
    const int order = tiled ? Q6_ORDER_TILED : fast == CK_INTERLEAVED_PORTABLE ? Q6_ORDER_SCALAR : Q6_ORDER_LANES;
    for (int g = r0 / 8; g < r1 / 8; g++) {
        const ck_block_q6_Kx8 *wg = (const ck_block_q6_Kx8 *)(w + (size_t)g * gb);
        for (int u = 0; u < count; u++) group_q6_kx8_portable(nb, wg, xs[u], order, ys[u] + 8 * g);
    }
}

#if CK_X86
// A pass of groups unpacked is about this many bytes, or two groups where those are more (it
// stays in L2 while every tiled token of the product walks it).
#define Q6_PASS_BYTES (128 * 1024)

// The unpacked pass lives in a buffer per thread, grown as needed.
static _Thread_local ck_block_q6_Kx8u *q6_unpacked;
static _Thread_local size_t q6_unpacked_blocks;

// Rows r0..<r1 on VNNI: tiled tokens a pass of groups at a time from the values unpacked (each
// pass unpacked once for all of them, eight tokens per walk), then the one-token ones from the
// form. Returns 0, having done nothing, when the buffer could not be had.
CK_FORMS_VNNI static int q6_kx8_rows_vnni(const ck_matmul_args *p, int r0, int r1) {
    const int nb = p->k / CK_QK_K, groups = (r1 - r0) / 8;
    const size_t ub = (size_t)nb * sizeof(ck_block_q6_Kx8u);
    int tiled = 0;
    for (int t = 0; t < p->n; t++) tiled += ck_token_tiled(p, t);
    if (tiled > 0 && groups > 0) {
        // Whole pairs of groups, at least one: the 16-row kernel takes groups two at a time.
        int per = (int)(Q6_PASS_BYTES / ub) & ~1;
        per = per < 2 ? 2 : per;
        per = per > groups ? groups : per;
        const size_t blocks = (size_t)per * nb;
        if (blocks > q6_unpacked_blocks) {
            free(q6_unpacked);
            q6_unpacked = (ck_block_q6_Kx8u *)malloc(blocks * sizeof(ck_block_q6_Kx8u));
            q6_unpacked_blocks = q6_unpacked ? blocks : 0;
            if (!q6_unpacked) return 0;
        }
        const int walks = (tiled + 7) / 8;
        for (int g0 = r0 / 8; g0 < r1 / 8; g0 += per) {
            const int g1 = g0 + per < r1 / 8 ? g0 + per : r1 / 8;
            q6_unpack_pass(nb, (const char *)p->w, p->w_row_bytes, g0, g1, (char *)q6_unpacked);
            // The next pass's weights are asked for a slice before each walk of this one, so they
            // arrive while this pass computes (-DQ6_NO_NEXT leaves it out, to measure: the
            // unpacking's share of a two-thread 2048 x 8192 product, 128 tokens, went from 11 % to
            // 9 % with it).
            const char *next = (const char *)p->w + (size_t)g1 * p->w_row_bytes;
            const int g2 = g1 + per < r1 / 8 ? g1 + per : r1 / 8;
            const size_t next_bytes = g2 > g1 ? (size_t)(g2 - g1) * p->w_row_bytes : 0;
            const size_t slice = (next_bytes / walks + 63) & ~(size_t)63;
            size_t asked = 0;
            const ck_block_q8_K *xs[8];
            float *ys[8];
            int count = 0;
            for (int t = 0; t < p->n; t++) {
                if (!ck_token_tiled(p, t)) continue;
                xs[count] = (const ck_block_q8_K *)((const char *)p->x + (size_t)t * p->x_row_bytes);
                ys[count++] = p->y + (size_t)t * p->ldy + 8 * g0;
                if (count == 8 || t == p->n - 1) {
#ifndef Q6_NO_NEXT
                    for (size_t end = asked + slice < next_bytes ? asked + slice : next_bytes; asked < end; asked += 64) {
                        _mm_prefetch(next + asked, _MM_HINT_T1);
                    }
#endif
                    q6_pass_tiled(nb, (const char *)q6_unpacked, g1 - g0, xs, ys, count);
                    count = 0;
                }
            }
            if (count > 0) q6_pass_tiled(nb, (const char *)q6_unpacked, g1 - g0, xs, ys, count);
        }
    }
    ck_matmul_kx8_order(p, r0, r1, CK_INTERLEAVED_VNNI, 0, q6_kx8_tokens);  // the one-token rows
    return 1;
}
#endif

void ck_matmul_q6_kx8_rows(const ck_matmul_args *p, int r0, int r1, int fast) {
#if CK_X86
    if (fast == CK_INTERLEAVED_VNNI && q6_kx8_rows_vnni(p, r0, r1)) return;
    if (fast == CK_INTERLEAVED_AVX2) {
        ck_matmul_q6_kx8_tiled_avx2(p, r0, r1);
        ck_matmul_kx8_order(p, r0, r1, fast, 0, q6_kx8_tokens);  // the one-token rows
        return;
    }
#endif
    ck_matmul_kx8_by_order(p, r0, r1, fast, q6_kx8_tokens);
}

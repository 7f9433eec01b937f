// The interleaved weight forms (made by interleave.c), shared by its kernels and the AVX2 ones
// (interleave_avx2.c); not part of the public header.
#ifndef INFERD_CKERNELS_INTERLEAVE_FORMS_H
#define INFERD_CKERNELS_INTERLEAVE_FORMS_H
#include <string.h>

#include "internal.h"

// MARK: - Layouts

// Q4_1 × 8 rows, one 32-column block (160 bytes, the same 20 bytes per row as Q4_1):
// d[8], m[8] as fp16, then 4 vectors of 32 bytes: vector c, lane r = row r's qs[4c..4c+3],
// whose low nibbles are elements 4c..4c+3 and high nibbles elements 16+4c..16+4c+3.
typedef struct {
    uint16_t d[8];
    uint16_t m[8];
    uint8_t qs[128];
} ck_block_q4_1x8;

// Q4_0 × 8 rows, one 32-column block (144 bytes, the same 18 bytes per row as Q4_0): d[8] as
// fp16, then 4 vectors of 32 bytes as in Q4_1 × 8 (vector c, lane r = row r's qs[4c..4c+3]: low
// nibbles elements 4c..4c+3, high nibbles 16+4c..16+4c+3), the nibbles q stored as they are
// (the value is d * (q - 8)).
typedef struct {
    uint16_t d[8];
    uint8_t qs[128];
} ck_block_q4_0x8;

// Q8_0 × 8 rows, one block (272 bytes, 34 per row as Q8_0): d[8] as fp16, then 8 vectors of
// 32 bytes: vector c, lane r = row r's qs[4c..4c+3] (int8; the kernels give vpdpbusd |q| and
// the activations with q's sign).
typedef struct {
    uint16_t d[8];
    uint8_t qs[256];
} ck_block_q8_0x8;

// Q5_0 × 8 rows, one block (176 bytes, the same 22 per row as Q5_0): d[8] as fp16; hm[c], the
// fifth bits of chunk c (elements 4c..4c+3) as a byte mask: bit 4r + j is that of element
// 4c + j of row r; then the nibbles as in Q4_1 × 8 (vector c, lane r = row r's qs[4c..4c+3]).
typedef struct {
    uint16_t d[8];
    uint32_t hm[8];
    uint8_t qs[128];
} ck_block_q5_0x8;

// Q5_1 × 8 rows, one block (192 bytes, the same 24 per row as Q5_1): d[8], m[8] as fp16; hm[c]
// the fifth bits of chunk c (elements 4c..4c+3) as a byte mask, bit 4r + j that of element
// 4c + j of row r (as Q5_0 × 8's); then the nibbles as in Q4_1 × 8 (interleave_q5_1.c).
typedef struct {
    uint16_t d[8];
    uint16_t m[8];
    uint32_t hm[8];
    uint8_t qs[128];
} ck_block_q5_1x8;

// Q4_K × 8 rows, one 256-value super-block (1,184 bytes; 1,152 as Q4_K): d[8], dmin[8] as fp16;
// the 6-bit scales and mins unpacked, sc[s][r] and m[s][r] for group s of row r; then 32
// vectors of 32 bytes: vector 8j + c, lane r = row r's qs[32j + 4c..32j + 4c + 3], whose low
// nibbles are values 64j + 4c.. (group 2j) and high nibbles values 64j + 32 + 4c.. (group 2j + 1).
typedef struct {
    uint16_t d[8];
    uint16_t dmin[8];
    uint8_t sc[8][8];
    uint8_t m[8][8];
    uint8_t qs[1024];
} ck_block_q4_Kx8;

// Q6_K × 8 rows, one super-block (1,680 bytes, the same 210 per row as Q6_K): d[8] as fp16;
// scales[s][r], the int8 scale of group s (16 values) of row r; then the file's ql and qh in
// four-byte chunks, in the order decode reads them: sixteen triples of 32-byte vectors, triple
// 8n + L = ql vector 16n + L, ql vector 16n + 8 + L, qh vector 8n + L (ql vector v, lane r = row
// r's ql[4v..4v+3]; qh likewise; interleave_q6_k.c says which values each holds).
typedef struct {
    uint16_t d[8];
    int8_t scales[16][8];
    uint8_t q[1536];
} ck_block_q6_Kx8;

// Q5_K × 8 rows, one super-block (1,440 bytes; 1,408 as Q5_K): d, dmin, sc and m as in Q4_K × 8,
// the nibbles as Q4_K × 8's qs; then qh as 8 vectors of 32 bytes: vector c, lane r = row r's
// qh[4c..4c+3], whose bit g is the fifth bit of value 32g + 4c (+ 0..3) (interleave_q5_k.c).
typedef struct {
    uint16_t d[8];
    uint16_t dmin[8];
    uint8_t sc[8][8];
    uint8_t m[8][8];
    uint8_t qs[1024];
    uint8_t qh[256];
} ck_block_q5_Kx8;

// Q3_K × 8 rows, one super-block (912 bytes; 880 as Q3_K): d[8] as fp16; sc[g][r], row r's
// scale of group g (16 values) unpacked to int8 (-32..31); then the 2-bit codes as they are, 16
// vectors of 32 bytes: vector 8h + c, lane r = row r's qs[32h + 4c..32h + 4c + 3], whose bits
// 2s, 2s + 1 are the codes of values 128h + 32s + 4c.. (+ 0..3); then hmask in the same chunks,
// 8 vectors: vector c, lane r = row r's hmask[4c..4c+3], bit 4h + s the high bit of those values
// (interleave_q3_k.c).
typedef struct {
    uint16_t d[8];
    int8_t sc[16][8];
    uint8_t qs[512];
    uint8_t hm[256];
} ck_block_q3_Kx8;

// Q2_K × 8 rows, one super-block (672 bytes, the same 84 per row as Q2_K): d[8], dmin[8] as
// fp16; scales[g][r], row r's byte of group g as in the file (low nibble the scale, high the
// min); then the 2-bit codes as Q3_K × 8's qs (interleave_q2_k.c).
typedef struct {
    uint16_t d[8];
    uint16_t dmin[8];
    uint8_t scales[16][8];
    uint8_t qs[512];
} ck_block_q2_Kx8;

// MXFP4 × 8 rows, one 32-column block (136 bytes, the same 17 per row as MXFP4): e[8], the rows'
// E8M0 scale bytes, then 4 vectors of 32 bytes as in Q4_0 × 8 (vector c, lane r = row r's
// qs[4c..4c+3]: low nibbles elements 4c..4c+3, high nibbles 16+4c..16+4c+3), the codes as stored
// (interleave_mxfp4.c).
typedef struct {
    uint8_t e[8];
    uint8_t qs[128];
} ck_block_mxfp4x8;

_Static_assert(sizeof(ck_block_mxfp4x8) == 136, "MXFP4x8 block");
_Static_assert(sizeof(ck_block_q4_Kx8) == 1184, "Q4_Kx8 block");
_Static_assert(sizeof(ck_block_q3_Kx8) == 912, "Q3_Kx8 block");
_Static_assert(sizeof(ck_block_q2_Kx8) == 672, "Q2_Kx8 block");
_Static_assert(sizeof(ck_block_q5_Kx8) == 1440, "Q5_Kx8 block");
_Static_assert(sizeof(ck_block_q6_Kx8) == 1680, "Q6_Kx8 block");
_Static_assert(sizeof(ck_block_q4_0x8) == 144, "Q4_0x8 block");
_Static_assert(sizeof(ck_block_q4_1x8) == 160, "Q4_1x8 block");
_Static_assert(sizeof(ck_block_q5_0x8) == 176, "Q5_0x8 block");
_Static_assert(sizeof(ck_block_q5_1x8) == 192, "Q5_1x8 block");
_Static_assert(sizeof(ck_block_q8_0x8) == 272, "Q8_0x8 block");

/// The K-quants' forms (interleave_q4_k.c, interleave_q6_k.c): bytes per group of eight rows of
/// k columns (k a multiple of 256), the interleaving, and rows r0..<r1 (multiples of 8) of a
/// product, every token in its order (ck_matmul_args.orders: Q4_K's CK_ORDER_GROUP4, Q6_K's
/// CK_ORDER_TILED), with the VNNI kernels for CK_INTERLEAVED_VNNI, else the portable ones.
size_t ck_q4_kx8_group_bytes(int k);
void ck_interleave_q4_kx8(const void *src, size_t src_row_bytes, int rows, int k, void *dst);
void ck_matmul_q4_kx8_rows(const ck_matmul_args *p, int r0, int r1, int fast);
/// Q4_K's AVX2 kernels (interleave_q4_k_avx2.c): groups g0..<g1 against T <= 4 tokens, token t in
/// the CK_ORDER_GROUP4 order when pairs[t], else the one-token order.
void ck_groups_q4_kx8_avx2(int nb, const char *w, size_t group_bytes, int g0, int g1,
                           const ck_block_q8_K *const *x, const int *pairs, float *const *y, int T);
/// Q4_0's form (interleave_q4_0.c), k a multiple of 32: the same, with the AVX2 kernels for
/// CK_INTERLEAVED_AVX2.
size_t ck_q4_0x8_group_bytes(int k);
void ck_interleave_q4_0x8(const void *src, size_t src_row_bytes, int rows, int k, void *dst);
void ck_matmul_q4_0x8_rows(const ck_matmul_args *p, int r0, int r1, int fast);
/// Q5_1's form (interleave_q5_1.c), k a multiple of 32: the same, with the VNNI kernels (AVX-512
/// BW too) for CK_INTERLEAVED_VNNI, the AVX2 ones for CK_INTERLEAVED_AVX2.
size_t ck_q5_1x8_group_bytes(int k);
void ck_interleave_q5_1x8(const void *src, size_t src_row_bytes, int rows, int k, void *dst);
void ck_matmul_q5_1x8_rows(const ck_matmul_args *p, int r0, int r1, int fast);
/// Q5_1's AVX2 kernels (interleave_q5_1_avx2.c): rows r0..<r1 of a product, every token.
void ck_matmul_q5_1x8_rows_avx2(const ck_matmul_args *p, int r0, int r1);
/// Q5_K's form (interleave_q5_k.c): the same, with the AVX2 kernels (interleave_q5_k_avx2.c) for
/// CK_INTERLEAVED_AVX2.
size_t ck_q5_kx8_group_bytes(int k);
void ck_interleave_q5_kx8(const void *src, size_t src_row_bytes, int rows, int k, void *dst);
void ck_matmul_q5_kx8_rows(const ck_matmul_args *p, int r0, int r1, int fast);
/// MXFP4's form (interleave_mxfp4.c), k a multiple of 32: the same, with the AVX-512 VNNI (and
/// BW) kernels for CK_INTERLEAVED_VNNI, the AVX2 ones for CK_INTERLEAVED_AVX2.
size_t ck_mxfp4x8_group_bytes(int k);
void ck_interleave_mxfp4x8(const void *src, size_t src_row_bytes, int rows, int k, void *dst);
void ck_matmul_mxfp4x8_rows(const ck_matmul_args *p, int r0, int r1, int fast);
/// Q3_K's and Q2_K's forms (interleave_q3_k.c, interleave_q2_k.c): the same, with AVX2 kernels
/// for CK_INTERLEAVED_AVX2 too; tokens flagged CK_ORDER_TILED in the tiled order, the others in
/// the per-row kernels' one-token order.
size_t ck_q3_kx8_group_bytes(int k);
void ck_interleave_q3_kx8(const void *src, size_t src_row_bytes, int rows, int k, void *dst);
void ck_matmul_q3_kx8_rows(const ck_matmul_args *p, int r0, int r1, int fast);
size_t ck_q2_kx8_group_bytes(int k);
void ck_interleave_q2_kx8(const void *src, size_t src_row_bytes, int rows, int k, void *dst);
void ck_matmul_q2_kx8_rows(const ck_matmul_args *p, int r0, int r1, int fast);
/// NAME: groups g0..<g1 of a BLOCK form against T <= 8 tokens in the tiled order, group by group,
/// the tokens four at a time (TILE(nb, group, x, y, n), n a constant) while the group's
/// super-blocks are in L1 (Q2_K's and Q3_K's VNNI and AVX2 kernels).
#define CK_KX8_TILES(NAME, BLOCK, TILE, ATTR)                                                                          \
    ATTR static void NAME(int nb, const char *w, size_t gb, int g0, int g1, const ck_block_q8_K *const *x,            \
                          float *const *y, int T) {                                                                    \
        for (int g = g0; g < g1; g++) {                                                                                \
            const BLOCK *wg = (const BLOCK *)(w + (size_t)g * gb);                                                     \
            for (int t0 = 0; t0 < T; t0 += 4) {                                                                        \
                float *yg[4];                                                                                          \
                const int n = T - t0 < 4 ? T - t0 : 4;                                                                 \
                for (int t = 0; t < n; t++) yg[t] = y[t0 + t] + 8 * g;                                                 \
                switch (n) {                                                                                           \
                case 4: TILE(nb, wg, x + t0, yg, 4); break;                                                            \
                case 3: TILE(nb, wg, x + t0, yg, 3); break;                                                            \
                case 2: TILE(nb, wg, x + t0, yg, 2); break;                                                            \
                default: TILE(nb, wg, x + t0, yg, 1); break;                                                           \
                }                                                                                                      \
            }                                                                                                          \
        }                                                                                                              \
    }

/// Groups of eight rows per pass of a prompt's product (CK_TOKEN_PASS_BYTES, internal.h): whole
/// pairs (the 16-row kernels take two), one pair at least.
static inline int ck_pass_groups(size_t group_bytes) {
    const int per = (int)(CK_TOKEN_PASS_BYTES / group_bytes) & ~1;
    return per < 2 ? 2 : per;
}

/// Whether token t of a product takes the tiled order (CK_ORDER_TILED).
static inline int ck_token_tiled(const ck_matmul_args *p, int t) { return p->orders && (p->orders[t] & CK_ORDER_TILED); }

/// Four activation bytes as one int32 (a word to broadcast to every lane of a product).
static inline int32_t ck_word4(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/// Rows r0..<r1 of a product over the Q2_K, Q3_K, Q5_K and Q6_K forms, token by token in its
/// order: tokens flagged CK_ORDER_TILED take the tiled order, eight at a time; the others (all of
/// them without orders) the one-token order, one at a time; each batch goes to `tokens`. Up to
/// CK_KX8_BATCH tokens of an order walk the rows a pass at a time (ck_pass_groups), every batch
/// over each pass while it is in L2: walking all the rows per eight tokens read a matrix from
/// memory eight times per 64-token piece at one thread (INFERD_CPU=avx2, the 1.7B Q5_K_M file's
/// pp128: 25.5 tok/s, llama.cpp's AVX2 build 34.5-35.1), and every row once per sequence of a
/// batched decode step.
typedef void (*ck_kx8_tokens_fn)(const ck_matmul_args *p, int r0, int r1, int fast, int tiled,
                                 const ck_block_q8_K *const *xs, float *const *ys, int count);
#define CK_KX8_BATCH 64
void ck_matmul_kx8_by_order(const ck_matmul_args *p, int r0, int r1, int fast, ck_kx8_tokens_fn tokens);
/// ... the tokens of one order only (`tiled` 1 or 0).
void ck_matmul_kx8_order(const ck_matmul_args *p, int r0, int r1, int fast, int tiled, ck_kx8_tokens_fn tokens);
size_t ck_q6_kx8_group_bytes(int k);
void ck_interleave_q6_kx8(const void *src, size_t src_row_bytes, int rows, int k, void *dst);
void ck_matmul_q6_kx8_rows(const ck_matmul_args *p, int r0, int r1, int fast);
/// Q6_K's AVX2 kernels (interleave_q6_k_avx2.c): rows r0..<r1 of a product for its tiled tokens,
/// and eight rows against one token in the one-token order.
void ck_matmul_q6_kx8_tiled_avx2(const ck_matmul_args *p, int r0, int r1);
void ck_group_q6_kx8_lanes_avx2(int nb, const ck_block_q6_Kx8 *w, const ck_block_q8_K *a, float *y);

#if CK_X86
// What the forms' VNNI kernels use (Q5_0's also needs AVX-512 BW: CK_VNNI in interleave.c).
#define CK_FORMS_VNNI __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512vnni")))

// Shared by the AVX2 and VNNI kernels (AVX2 only, so both inline them).
// Four activation bytes broadcast to the eight lanes (one per row) of a product.
static inline __attribute__((always_inline)) CK_FAST __m256i ck_bcast4(const int8_t *p) {
    return _mm256_set1_epi32(ck_word4(p));
}

// Lane r: row r's unsigned 8-bit scale at p[r] in both int16 halves: the other operand of the
// vpmaddwd that gives scale × chunk sum (the AVX2 K-quant kernels).
static inline __attribute__((always_inline)) CK_FAST __m256i ck_scale_pairs_u8(const uint8_t *p) {
    const __m256i s = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p));
    return _mm256_or_si256(s, _mm256_slli_epi32(s, 16));
}

// Lane r: scale × (row r's four unsigned values in q · the four activation bytes at a), exact
// where each vpmaddubsw pair sum fits an int16 (the AVX2 stand-in for vpdpbusd and a multiply).
static inline __attribute__((always_inline)) CK_FAST __m256i ck_scaled_chunk(__m256i q, const int8_t *a, __m256i scale) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(q, ck_bcast4(a)), scale);
}

// The eight chunk accumulators of a tile added in ck_hsum8's order (lane r: row r).
static inline __attribute__((always_inline)) CK_FAST __m256 ck_chunks_in_hsum8_order(const __m256 *acc) {
    return _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(acc[0], acc[4]), _mm256_add_ps(acc[2], acc[6])),
                         _mm256_add_ps(_mm256_add_ps(acc[1], acc[5]), _mm256_add_ps(acc[3], acc[7])));
}
#endif

#if CK_X86
// Decode reads each weight once, so its speed is the memory's: the hardware prefetcher alone left
// the Q4_K and Q6_K forms' one-token kernels at about half of a plain read sweep (samples pile up
// on the loads), where the forms that prefetch reached 80-90 %. This asks for every cache line of
// the block at `block`; the kernels pass the block CK_*_AHEAD blocks further on (the same group's,
// then the next group's, which is where the product goes next). Beyond the matrix it only wastes
// a request: a prefetch never faults.
static inline __attribute__((always_inline)) void ck_prefetch_block(const void *block, size_t bytes) {
    for (size_t line = 0; line < bytes; line += 64) _mm_prefetch((const char *)block + line, _MM_HINT_T0);
}

// Lane r: (min 2j, min 2j + 1) of a Q5_K × 8 super-block's row r as two int16, for vpmaddwd or
// vpdpwssd against ck_q5_k_bsum_pair (exact: mins <= 63, group sums |s| <= 32 * 128).
static inline __attribute__((always_inline)) CK_FAST __m256i ck_q5_k_min_pairs(const ck_block_q5_Kx8 *w, int j) {
    const __m128i lo = _mm_loadl_epi64((const __m128i *)w->m[2 * j]);
    const __m128i hi = _mm_loadl_epi64((const __m128i *)w->m[2 * j + 1]);
    return _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(lo, hi));
}

// (sum of group 2j, sum of group 2j + 1) of a Q8_K block (32 values each) as two int16, every lane.
static inline __attribute__((always_inline)) CK_FAST __m256i ck_q5_k_bsum_pair(const ck_block_q8_K *a, int j) {
    const int16_t *bs = a->bsums;
    const uint16_t lo = (uint16_t)(bs[4 * j] + bs[4 * j + 1]), hi = (uint16_t)(bs[4 * j + 2] + bs[4 * j + 3]);
    return _mm256_set1_epi32((int32_t)((uint32_t)lo | (uint32_t)hi << 16));
}

// Most blocks (tokens × blocks per row) one correction table holds: 32 KiB on the stack, four
// tokens of k = 8192 (the widest product of a 1.7B model) or one token of k = 32768.
#define CK_CORRECTION_TABLE_BLOCKS 1024

// A 32-value form whose kernels take, beside each activation row, a table of per-chunk integer
// corrections (Q4_0's -8 · Σx, MXFP4's -12 · Σx): `corrections` fills one row's, `groups` runs
// groups g0..<g1 against T <= 4 tokens.
typedef void (*ck_corrections_fn)(int nb, const ck_block_q8_0 *x, int32_t *corr);
typedef void (*ck_corrected_groups_fn)(int nb, const char *w, size_t group_bytes, int g0, int g1,
                                       const ck_block_q8_0 *const *x, const int32_t *const *corr, float *const *y, int T);

/// Rows r0..<r1 (multiples of 8) of such a form, every token (interleave.c): rows in passes of
/// about 128 KiB, an even count of groups each (the 16-row kernels take groups in pairs), every
/// token going over one pass before the next so the weights stay in L2 while the tiles pass;
/// tokens in tiles of up to four whose corrections fit one table. Returns 0, having done nothing,
/// when not even one token's corrections fit (rows of more than CK_CORRECTION_TABLE_BLOCKS blocks).
int ck_matmul_corrected_passes(const ck_matmul_args *p, int r0, int r1, ck_corrections_fn corrections,
                               ck_corrected_groups_fn groups);

/// Q5_0 × 8 against several tokens with AVX-512 BW and VNNI (interleave_q5_0.c): rows r0..<r1 of
/// the product, every token, bit for bit the eight-row kernel's. Returns 0, having done nothing,
/// where it cannot (as ck_matmul_corrected_passes).
int ck_matmul_q5_0x8_tokens(const ck_matmul_args *p, int r0, int r1);

/// Q5_K × 8 on AVX2 (interleave_q5_k_avx2.c): groups g0..<g1 against T <= 8 tokens in the tiled
/// order, and one group against one token in the one-token order (dot_q5_k_fast's), bit for bit.
void ck_groups_q5_kx8_tiled_avx2(int nb, const char *w, size_t group_bytes, int g0, int g1, const ck_block_q8_K *const *x,
                                 float *const *y, int T);
void ck_group_q5_kx8_lanes_avx2(int nb, const ck_block_q5_Kx8 *w, const ck_block_q8_K *a, float *y);

/// Q3_K × 8 in the tiled order, pairs of groups from g0 through the 16-row VNNI kernel
/// (interleave_q23_k_wide.c) against T <= 8 tokens, bit for bit the eight-row one; returns the
/// first group not done (an odd last one, or g0 where the gather buffer failed).
int ck_groups_q3_kx16_tiled(int nb, const char *w, size_t gb, int g0, int g1, const ck_block_q8_K *const *x,
                            float *const *y, int T);

/// Groups g0..<g1 of an interleaved Q4_1 or Q8_0 matrix against T activation rows x[t] into
/// y[t], with AVX2 only (interleave_avx2.c): each output bit for bit that of the per-row AVX2
/// kernel (dot.c).
void ck_groups_q4_1x8_avx2(int nb, const char *w, size_t group_bytes, int g0, int g1, const ck_block_q8_1 *const *x,
                           float *const *y, int T);
void ck_groups_q8_0x8_avx2(int nb, const char *w, size_t group_bytes, int g0, int g1, const ck_block_q8_0 *const *x,
                           float *const *y, int T);
/// Rows r0..<r1 (multiples of 8) of an interleaved Q4_1, Q5_1 or Q8_0 matrix (CK_TYPE_Q4_1_X8,
/// CK_TYPE_Q5_1_X8, CK_TYPE_Q8_0_X8), every token, with AVX-512 BW and VNNI, two groups per 16-lane vector
/// (interleave_wide.c): each output bit for bit that of the eight-lane VNNI kernels. Returns 0,
/// having done nothing, when it has no memory for Q8_0's per-chunk activation sums.
int ck_matmul_x16_rows(const ck_matmul_args *p, int r0, int r1);
/// corr[8b + c] = -m * (the sum of activation block b's values 4c..4c+3) for nb blocks of one
/// Q8_0 row, m <= 128 (interleave_q5_0.c; AVX2): the exact seeds of the unsigned-weight products.
void ck_chunk_corrections(int nb, const ck_block_q8_0 *x, int m, int32_t *corr);
#endif

#endif

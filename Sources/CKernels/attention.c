// Attention's units of work and their scheduling on the pool: for a batch, one unit is a tile
// of tokens with the query heads of one KV head (attention_tile.c); otherwise one token with
// them, run grouped (attention_group.c) where it can, else head by head (attention_head.c).
#include "internal.h"

// Whether the fast kernels take this shape (when `fast_paths`): head_dim a multiple of 8, at most
// CK_MAX_HEAD_DIM.
static int fast_shape(int fast_paths, const ck_attention_args *p) {
#if CK_X86
    return fast_paths && p->head_dim % 8 == 0 && p->head_dim <= CK_MAX_HEAD_DIM;
#else
    (void)fast_paths;
    (void)p;
    return 0;
#endif
}

int ck_attention_fast_shape(const ck_attention_args *p) { return fast_shape(ck_fast_paths_enabled(), p); }

// Floats of scratch a grouped unit needs: R accumulators of 64 * head_dim and R score rows
// padded to 16 keys.
static size_t group_scratch_floats(const ck_attention_args *p) {
    const size_t r = (size_t)(p->n_head / p->n_kv_head);
    return r * ((size_t)64 * p->head_dim + (size_t)((p->pos0 + p->n_tokens + 15) & ~15));
}

// How a call's units run, decided once on the calling thread (pool workers do not see its
// path switches): a batch in tiles of tokens where the tile kernel takes the shape and the
// scratch row holds a tile, else token by token.
typedef struct {
    int fast;
    int avx512;  // the tile kernel built for AVX-512VL
    int tile;    // tokens per tile, 0: units are single tokens
} attention_plan;

static attention_plan plan_for(int fast_paths, const ck_attention_args *p) {
    attention_plan plan = {fast_paths, 0, 0};
#if CK_X86
    const int r = p->n_head / p->n_kv_head;
    // Tiles for a batch's rows (ck_attention_batched); decode steps go token by token.
    if (fast_shape(fast_paths, p) && ck_attention_batched(p) && p->head_dim % 16 == 0 && r <= CK_MAX_GROUP &&
        (size_t)p->scratch_stride >= ck_attention_tile_scratch_floats(p)) {
        plan.tile = ck_attention_tile_tokens(r);
        plan.avx512 = ck_cpu_has_vnni();
    }
#endif
    return plan;
}

size_t ck_attention_scratch_floats(int n_head, int n_kv_head, int head_dim, int max_keys) {
    ck_attention_args p = {0};
    p.n_head = n_head;
    p.n_kv_head = n_kv_head < 1 ? 1 : n_kv_head;
    p.head_dim = head_dim;
    p.n_tokens = max_keys;
    const size_t group = group_scratch_floats(&p);
#if CK_X86
    const size_t tile = ck_attention_tile_scratch_floats(&p);
    return tile > group ? tile : group;
#else
    return group;
#endif
}

int ck_attention_tile_size(const ck_attention_args *args) { return plan_for(ck_fast_paths_enabled(), args).tile; }

static int unit_count(const attention_plan *plan, const ck_attention_args *p) {
    if (plan->tile) return (p->n_tokens + plan->tile - 1) / plan->tile * p->n_kv_head;
    return p->n_tokens * p->n_kv_head;
}

// Unit u is token t = u / n_kv_head with the query heads of KV head g = u % n_kv_head.
static void attention_units_with(int fast_paths, const ck_attention_args *p, int u0, int u1, int slot) {
    float *acc = p->scratch + (size_t)slot * p->scratch_stride;
    const int r = p->n_head / p->n_kv_head;
    const int fast = fast_shape(fast_paths, p);
#if CK_X86
    const int grouped = fast && r <= CK_MAX_GROUP && (size_t)p->scratch_stride >= group_scratch_floats(p);
#endif
    for (int u = u0; u < u1; u++) {
        const int t = u / p->n_kv_head, g = u % p->n_kv_head;
#if CK_X86
        if (grouped) {
            ck_attention_group_fast(p, t, g, acc);
            continue;
        }
#endif
        for (int h = g * r; h < (g + 1) * r; h++) ck_attention_head(p, t, h, fast, acc);
    }
}

// Unit u of a plan: tile u / n_kv_head with KV head u % n_kv_head, or a token's unit.
static void attention_unit_planned(const attention_plan *plan, const ck_attention_args *p, int u, int slot) {
#if CK_X86
    if (plan->tile) {
        const int t0 = u / p->n_kv_head * plan->tile, g = u % p->n_kv_head;
        const int nt = p->n_tokens - t0 < plan->tile ? p->n_tokens - t0 : plan->tile;
        float *scratch = p->scratch + (size_t)slot * p->scratch_stride;
        if (plan->avx512) {
            ck_attention_tile_avx512(p, t0, nt, g, scratch);
        } else {
            ck_attention_tile_avx2(p, t0, nt, g, scratch);
        }
        return;
    }
#endif
    attention_units_with(plan->fast, p, u, u + 1, slot);
}

void ck_attention_units(const ck_attention_args *p, int u0, int u1, int slot) {
    attention_units_with(ck_fast_paths_enabled(), p, u0, u1, slot);
}

typedef struct {
    const ck_attention_args *args;
    attention_plan plan;
} attention_job;

static void attention_chunk(void *ctx, int u, int thread) {
    const attention_job *job = (const attention_job *)ctx;
    attention_unit_planned(&job->plan, job->args, u, thread);
}

void ck_attention(ck_pool *pool, const ck_attention_args *args) {
#if CK_X86
    if (ck_attention_decode_split_applies(pool, args)) {
        ck_attention_decode_split(pool, args);
        return;
    }
#endif
    attention_job job;
    job.args = args;
    job.plan = plan_for(ck_fast_paths_enabled(), args);
    const int units = unit_count(&job.plan, args);
    if (!pool || ck_pool_size(pool) <= 1 || units < 2) {
        for (int u = 0; u < units; u++) attention_unit_planned(&job.plan, args, u, 0);
        return;
    }
    ck_pool_run_chunks(pool, attention_chunk, &job, units);
}

#define CK_ATTENTION_MANY_MAX 16

typedef struct {
    const ck_attention_args *args;
    int count;
    int first_unit[CK_ATTENTION_MANY_MAX + 1];  // prefix sums of each item's units
    attention_plan plan[CK_ATTENTION_MANY_MAX];
} attention_many_job;

static void attention_many_chunk(void *ctx, int u, int thread) {
    const attention_many_job *job = (const attention_many_job *)ctx;
    int m = 0;
    while (u >= job->first_unit[m + 1]) m++;
    const int local = u - job->first_unit[m];
    attention_unit_planned(&job->plan[m], &job->args[m], local, thread);
}

void ck_attention_many(ck_pool *pool, const ck_attention_args *args, int count) {
    if (count == 1 || count > CK_ATTENTION_MANY_MAX || !pool || ck_pool_size(pool) <= 1) {
        for (int m = 0; m < count; m++) ck_attention(pool, &args[m]);
        return;
    }
    attention_many_job job;
    job.args = args;
    job.count = count;
    job.first_unit[0] = 0;
    for (int m = 0; m < count; m++) {
        job.plan[m] = plan_for(ck_fast_paths_enabled(), &args[m]);
        job.first_unit[m + 1] = job.first_unit[m] + unit_count(&job.plan[m], &args[m]);
    }
    ck_pool_run_chunks(pool, attention_many_chunk, &job, job.first_unit[count]);
}

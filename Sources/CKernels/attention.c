// Attention's units of work and their scheduling on the pool: one unit is one token with the
// query heads of one KV head, run grouped (attention_group.c) where it can, else head by head
// (attention_head.c).
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

void ck_attention_units(const ck_attention_args *p, int u0, int u1, int slot) {
    attention_units_with(ck_fast_paths_enabled(), p, u0, u1, slot);
}

typedef struct {
    const ck_attention_args *args;
    int fast;
} attention_job;

static void attention_chunk(void *ctx, int u, int thread) {
    const attention_job *job = (const attention_job *)ctx;
    attention_units_with(job->fast, job->args, u, u + 1, thread);
}

void ck_attention(ck_pool *pool, const ck_attention_args *args) {
    const int units = args->n_tokens * args->n_kv_head;
    attention_job job;
    job.args = args;
    job.fast = ck_fast_paths_enabled();
    if (!pool || ck_pool_size(pool) <= 1 || units < 2) {
        attention_units_with(job.fast, args, 0, units, 0);
        return;
    }
    ck_pool_run_chunks(pool, attention_chunk, &job, units);
}

#define CK_ATTENTION_MANY_MAX 16

typedef struct {
    const ck_attention_args *args;
    int count;
    int first_unit[CK_ATTENTION_MANY_MAX + 1];  // prefix sums of each item's units
    int fast;
} attention_many_job;

static void attention_many_chunk(void *ctx, int u, int thread) {
    const attention_many_job *job = (const attention_many_job *)ctx;
    int m = 0;
    while (u >= job->first_unit[m + 1]) m++;
    const int local = u - job->first_unit[m];
    attention_units_with(job->fast, &job->args[m], local, local + 1, thread);
}

void ck_attention_many(ck_pool *pool, const ck_attention_args *args, int count) {
    if (count > CK_ATTENTION_MANY_MAX || !pool || ck_pool_size(pool) <= 1) {
        for (int m = 0; m < count; m++) ck_attention(pool, &args[m]);
        return;
    }
    attention_many_job job;
    job.args = args;
    job.count = count;
    job.fast = ck_fast_paths_enabled();
    job.first_unit[0] = 0;
    for (int m = 0; m < count; m++) job.first_unit[m + 1] = job.first_unit[m] + args[m].n_tokens * args[m].n_kv_head;
    ck_pool_run_chunks(pool, attention_many_chunk, &job, job.first_unit[count]);
}

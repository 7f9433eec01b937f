// A fixed pool of compute threads. The caller publishes a task by bumping a generation counter;
// workers spin briefly on it (tasks inside one forward pass follow each other within
// microseconds), then sleep on a futex. Everyone, the caller included, claims chunks of the task
// until none is left. No allocation after creation.
#define _GNU_SOURCE
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "internal.h"

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#define CK_HAVE_FUTEX 1
#else
#define CK_HAVE_FUTEX 0
#endif

typedef struct {
    ck_pool *pool;
    int index;
} ck_worker;

// A task is a number of chunks. Threads claim chunk indices with a CAS on `claim`
// (generation << 32 | next index); the caller returns when `done` reaches the chunk count. A
// worker that was descheduled, or is slow to wake, simply finds nothing left to claim: the
// caller never waits for a thread, only for chunks already claimed.
struct ck_pool {
    int n;
    pthread_t *threads;
    ck_worker *workers;
    ck_chunk_fn fn;
    void *ctx;
    // Atomic (relaxed) because a worker still finishing generation g reads it while the caller
    // already writes g+1's count; the claim's generation then refuses the stale chunk.
    atomic_int n_chunks;
    _Atomic uint64_t claim;
    _Atomic uint32_t generation;  // futex word, mirrors the high half of claim
    _Atomic int done;
    _Atomic int sleepers;
    _Atomic int stop;
#if !CK_HAVE_FUTEX
    pthread_mutex_t mutex;
    pthread_cond_t cond;
#endif
};

// About 100-300 microseconds of spinning before a worker goes to sleep.
#define CK_SPIN_ITERS 20000

static void pool_wait(ck_pool *pool, uint32_t seen) {
#if CK_HAVE_FUTEX
    syscall(SYS_futex, (uint32_t *)&pool->generation, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
#else
    pthread_mutex_lock(&pool->mutex);
    while (atomic_load(&pool->generation) == seen) pthread_cond_wait(&pool->cond, &pool->mutex);
    pthread_mutex_unlock(&pool->mutex);
#endif
}

static void pool_wake_all(ck_pool *pool) {
#if CK_HAVE_FUTEX
    syscall(SYS_futex, (uint32_t *)&pool->generation, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
#else
    pthread_mutex_lock(&pool->mutex);
    pthread_cond_broadcast(&pool->cond);
    pthread_mutex_unlock(&pool->mutex);
#endif
}

// Claims and runs chunks of generation `g` until none is left.
static void pool_work(ck_pool *pool, uint32_t g, int thread) {
    for (;;) {
        uint64_t s = atomic_load_explicit(&pool->claim, memory_order_acquire);
        if ((uint32_t)(s >> 32) != g) return;
        const uint32_t i = (uint32_t)s;
        // n_chunks cannot change while chunks of g remain unclaimed (the caller is still waiting);
        // if it was already replaced, the CAS below fails on the generation.
        if (i >= (uint32_t)atomic_load_explicit(&pool->n_chunks, memory_order_relaxed)) return;
        if (!atomic_compare_exchange_weak_explicit(&pool->claim, &s, s + 1, memory_order_acq_rel,
                                                   memory_order_acquire)) {
            continue;
        }
        pool->fn(pool->ctx, (int)i, thread);
        atomic_fetch_add_explicit(&pool->done, 1, memory_order_release);
    }
}

static void *worker_main(void *arg) {
    ck_worker *w = (ck_worker *)arg;
    ck_pool *pool = w->pool;
    uint32_t seen = 0;
    for (;;) {
        uint32_t g = atomic_load_explicit(&pool->generation, memory_order_acquire);
        for (int i = 0; g == seen && i < CK_SPIN_ITERS; i++) {
            ck_cpu_relax();
            g = atomic_load_explicit(&pool->generation, memory_order_acquire);
        }
        while (g == seen) {
            atomic_fetch_add(&pool->sleepers, 1);
            pool_wait(pool, seen);
            atomic_fetch_sub(&pool->sleepers, 1);
            g = atomic_load_explicit(&pool->generation, memory_order_acquire);
        }
        seen = g;
        if (atomic_load_explicit(&pool->stop, memory_order_acquire)) break;
        pool_work(pool, g, w->index);
    }
    return NULL;
}

ck_pool *ck_pool_create(int n_threads) {
    if (n_threads < 1) n_threads = 1;
    ck_pool *pool = (ck_pool *)calloc(1, sizeof(ck_pool));
    if (!pool) return NULL;
    pool->n = n_threads;
    atomic_init(&pool->claim, 0);
    atomic_init(&pool->n_chunks, 0);
    atomic_init(&pool->generation, 0);
    atomic_init(&pool->done, 0);
    atomic_init(&pool->sleepers, 0);
    atomic_init(&pool->stop, 0);
#if !CK_HAVE_FUTEX
    pthread_mutex_init(&pool->mutex, NULL);
    pthread_cond_init(&pool->cond, NULL);
#endif
    if (n_threads > 1) {
        pool->threads = (pthread_t *)calloc((size_t)n_threads, sizeof(pthread_t));
        pool->workers = (ck_worker *)calloc((size_t)n_threads, sizeof(ck_worker));
        for (int i = 1; i < n_threads; i++) {
            pool->workers[i].pool = pool;
            pool->workers[i].index = i;
            pthread_create(&pool->threads[i], NULL, worker_main, &pool->workers[i]);
        }
    }
    return pool;
}

int ck_pool_size(const ck_pool *pool) { return pool ? pool->n : 1; }

void ck_pool_run_chunks(ck_pool *pool, ck_chunk_fn fn, void *ctx, int n_chunks) {
    if (n_chunks <= 0) return;
    if (!pool || pool->n <= 1 || n_chunks == 1) {
        for (int i = 0; i < n_chunks; i++) fn(ctx, i, 0);
        return;
    }
    pool->fn = fn;
    pool->ctx = ctx;
    atomic_store_explicit(&pool->n_chunks, n_chunks, memory_order_relaxed);
    atomic_store_explicit(&pool->done, 0, memory_order_relaxed);
    const uint32_t g = atomic_load_explicit(&pool->generation, memory_order_relaxed) + 1;
    atomic_store(&pool->claim, (uint64_t)g << 32);  // seq_cst: publishes fn, ctx, n_chunks
    atomic_store(&pool->generation, g);
    if (atomic_load(&pool->sleepers) > 0) pool_wake_all(pool);
    pool_work(pool, g, 0);
    int spins = 0;
    while (atomic_load_explicit(&pool->done, memory_order_acquire) < n_chunks) {
        ck_cpu_relax();
        if (++spins > 4096) {
            sched_yield();  // the thread running the last chunk may have been descheduled
            spins = 0;
        }
    }
}

void ck_pool_destroy(ck_pool *pool) {
    if (!pool) return;
    if (pool->n > 1) {
        atomic_store(&pool->stop, 1);
        atomic_fetch_add(&pool->generation, 1);
        pool_wake_all(pool);
        for (int i = 1; i < pool->n; i++) pthread_join(pool->threads[i], NULL);
    }
    free(pool->threads);
    free(pool->workers);
    free(pool);
}

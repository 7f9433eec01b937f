// A fixed pool of compute threads. The caller publishes a task by bumping a generation counter;
// workers spin briefly on it (tasks inside one forward pass follow each other within
// microseconds), then sleep on a futex. Everyone, the caller included, claims chunks of the task
// until none is left. No allocation after creation.
#define _GNU_SOURCE
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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
    // Chunk counts of the current and the previous generation, in slot g & 1: a worker of
    // generation g reads only g's. With one shared count, a worker that had read claim (g, n)
    // (every chunk of g taken) could read g+1's larger count, which the caller writes before it
    // publishes g+1's claim, and its CAS on (g, n) would still succeed: it would run chunk n with
    // g+1's fn and ctx (perhaps half written) while g+1 later hands chunk n out again, and the
    // extra `done` could let the caller return with a chunk still running. Found by TSan when
    // decode attention began to run tasks of 9 and then 24 chunks back to back.
    atomic_int n_chunks[2];
    _Atomic uint64_t claim;
    _Atomic uint32_t generation;  // futex word, mirrors the high half of claim
    _Atomic int done;
    _Atomic int sleepers;
    _Atomic int stop;
    // Where the time goes (INFERD_POOL_PROFILE=1 at creation; printed to stderr on destroy).
    // Off by default: then no clock is read.
    int profiling;
    _Atomic uint64_t published_ns;  // when the current task was published
    uint64_t last_end_ns;           // caller: when the previous task returned
    uint64_t tasks, chunks;
    uint64_t serial_ns;       // caller, between tasks (gaps under 2 ms: excludes idle time)
    uint64_t caller_chunk_ns; // caller, inside chunks
    uint64_t caller_wait_ns;  // caller, after its last chunk until every chunk is done
    _Atomic uint64_t worker_chunk_ns, worker_wake_ns, worker_joined, worker_chunks;
#if !CK_HAVE_FUTEX
    pthread_mutex_t mutex;
    pthread_cond_t cond;
#endif
};

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

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

// Claims and runs chunks of generation `g` until none is left; adds the time spent in chunks
// to *chunk_ns when profiling, and returns how many chunks this thread ran.
static int pool_work(ck_pool *pool, uint32_t g, int thread, uint64_t *chunk_ns) {
    int ran = 0;
    for (;;) {
        uint64_t s = atomic_load_explicit(&pool->claim, memory_order_acquire);
        if ((uint32_t)(s >> 32) != g) return ran;
        const uint32_t i = (uint32_t)s;
        // g's count (its slot is rewritten only for g + 2, after the claim has left g, so then
        // the CAS below fails on the generation).
        if (i >= (uint32_t)atomic_load_explicit(&pool->n_chunks[g & 1], memory_order_relaxed)) return ran;
        if (!atomic_compare_exchange_weak_explicit(&pool->claim, &s, s + 1, memory_order_acq_rel,
                                                   memory_order_acquire)) {
            continue;
        }
        const uint64_t t0 = pool->profiling ? now_ns() : 0;
        pool->fn(pool->ctx, (int)i, thread);
        if (pool->profiling) *chunk_ns += now_ns() - t0;
        ran++;
        atomic_fetch_add_explicit(&pool->done, 1, memory_order_release);
    }
}

static void *worker_main(void *arg) {
    ck_worker *w = (ck_worker *)arg;
    ck_pool *pool = w->pool;
    uint32_t seen = 0;
    // A compute thread: long slices, so I/O threads that wake preempt it at once (thread_slice.c).
    (void)ck_thread_prefer_throughput();
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
        if (pool->profiling) {
            const uint64_t woke = now_ns();
            uint64_t chunk_ns = 0;
            const int ran = pool_work(pool, g, w->index, &chunk_ns);
            if (ran > 0) {
                const uint64_t published = atomic_load_explicit(&pool->published_ns, memory_order_relaxed);
                if (woke > published) atomic_fetch_add(&pool->worker_wake_ns, woke - published);
                atomic_fetch_add(&pool->worker_joined, 1);
                atomic_fetch_add(&pool->worker_chunks, (uint64_t)ran);
                atomic_fetch_add(&pool->worker_chunk_ns, chunk_ns);
            }
        } else {
            uint64_t unused = 0;
            pool_work(pool, g, w->index, &unused);
        }
    }
    return NULL;
}

ck_pool *ck_pool_create(int n_threads) {
    if (n_threads < 1) n_threads = 1;
    ck_pool *pool = (ck_pool *)calloc(1, sizeof(ck_pool));
    if (!pool) return NULL;
    pool->n = n_threads;
    atomic_init(&pool->claim, 0);
    atomic_init(&pool->n_chunks[0], 0);
    atomic_init(&pool->n_chunks[1], 0);
    atomic_init(&pool->generation, 0);
    atomic_init(&pool->done, 0);
    atomic_init(&pool->sleepers, 0);
    atomic_init(&pool->stop, 0);
#if !CK_HAVE_FUTEX
    pthread_mutex_init(&pool->mutex, NULL);
    pthread_cond_init(&pool->cond, NULL);
#endif
    const char *profile = getenv("INFERD_POOL_PROFILE");
    pool->profiling = profile && profile[0] == '1' && n_threads > 1;
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
    const uint64_t start = pool->profiling ? now_ns() : 0;
    if (pool->profiling) {
        if (pool->last_end_ns && start - pool->last_end_ns < 2000000u) pool->serial_ns += start - pool->last_end_ns;
        atomic_store_explicit(&pool->published_ns, start, memory_order_relaxed);
        pool->tasks++;
        pool->chunks += (uint64_t)n_chunks;
    }
    pool->fn = fn;
    pool->ctx = ctx;
    const uint32_t g = atomic_load_explicit(&pool->generation, memory_order_relaxed) + 1;
    atomic_store_explicit(&pool->n_chunks[g & 1], n_chunks, memory_order_relaxed);
    atomic_store_explicit(&pool->done, 0, memory_order_relaxed);
    atomic_store(&pool->claim, (uint64_t)g << 32);  // seq_cst: publishes fn, ctx, n_chunks
    atomic_store(&pool->generation, g);
    if (atomic_load(&pool->sleepers) > 0) pool_wake_all(pool);
    uint64_t chunk_ns = 0;
    pool_work(pool, g, 0, &chunk_ns);
    const uint64_t own_end = pool->profiling ? now_ns() : 0;
    int spins = 0;
    while (atomic_load_explicit(&pool->done, memory_order_acquire) < n_chunks) {
        ck_cpu_relax();
        if (++spins > 4096) {
            sched_yield();  // the thread running the last chunk may have been descheduled
            spins = 0;
        }
    }
    if (pool->profiling) {
        const uint64_t end = now_ns();
        pool->caller_chunk_ns += chunk_ns;
        pool->caller_wait_ns += end - own_end;
        pool->last_end_ns = end;
    }
}

// The profile's summary, per task and as shares of the caller's busy time (serial + tasks).
static void pool_print_profile(const ck_pool *pool) {
    if (!pool->tasks) return;
    const double us = 1e-3;
    const double tasks = (double)pool->tasks;
    const double caller_busy = (double)(pool->serial_ns + pool->caller_chunk_ns + pool->caller_wait_ns);
    const uint64_t joined = atomic_load(&pool->worker_joined);
    fprintf(stderr,
            "pool profile: threads=%d tasks=%llu chunks_per_task=%.1f worker_joined=%.1f%% "
            "caller_serial=%.1f%% caller_chunks=%.1f%% caller_wait=%.1f%% "
            "per_task_us: serial=%.2f caller_chunks=%.2f caller_wait=%.2f worker_chunks=%.2f "
            "worker_wake_us=%.2f worker_chunks_share=%.1f%%\n",
            pool->n, (unsigned long long)pool->tasks, (double)pool->chunks / tasks, 100.0 * (double)joined / tasks,
            100.0 * (double)pool->serial_ns / caller_busy, 100.0 * (double)pool->caller_chunk_ns / caller_busy,
            100.0 * (double)pool->caller_wait_ns / caller_busy, (double)pool->serial_ns * us / tasks,
            (double)pool->caller_chunk_ns * us / tasks, (double)pool->caller_wait_ns * us / tasks,
            (double)atomic_load(&pool->worker_chunk_ns) * us / tasks,
            joined ? (double)atomic_load(&pool->worker_wake_ns) * us / (double)joined : 0.0,
            100.0 * (double)atomic_load(&pool->worker_chunks) / (double)pool->chunks);
}

void ck_pool_destroy(ck_pool *pool) {
    if (!pool) return;
    if (pool->profiling) pool_print_profile(pool);
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

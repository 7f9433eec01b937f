// The engine's threads ask the scheduler for long time slices, so that short-lived threads
// (the HTTP server's, libcurl's, the Swift pool's) preempt them at once when they wake.
//
// Why: Linux's EEVDF scheduler (6.6+) lets a running thread finish its slice (0.75 ms × (1 +
// log2 CPUs), 1.5 ms on 2 CPUs) before a thread that just woke may run, unless the waking
// thread's slice is shorter than the running one's (PREEMPT_SHORT, 6.12+). While the engine
// computes on every core, a snapshot written to a socket or a request read by the server thus
// waited up to a slice: measured with a 1 ms sleeper beside two spinning threads, p99 oversleep
// 6–9 ms with default slices, 0.1 ms with 10 ms slices for the spinners. A longer slice does not
// change the engine's share of the CPU, only how often it may be interrupted by a waking thread.
//
// Since 6.12 `sched_setattr` takes a SCHED_OTHER thread's slice in `sched_runtime` (clamped to
// 0.1–100 ms); older kernels ignore the field. Linux only: elsewhere these do nothing.
#define _GNU_SOURCE
#include "ckernels.h"

#include <stdlib.h>
#include <string.h>

#if defined(__linux__)
#include <errno.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

// The kernel's `struct sched_attr` (uapi linux/sched/types.h), declared here because that header
// clashes with glibc's `struct sched_param`.
typedef struct {
    uint32_t size;
    uint32_t sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime;
    uint64_t sched_deadline;
    uint64_t sched_period;
    uint32_t sched_util_min;
    uint32_t sched_util_max;
} ck_sched_attr;

int ck_thread_set_slice_us(int64_t microseconds) {
    if (microseconds <= 0) return 0;
    ck_sched_attr current;
    memset(&current, 0, sizeof current);
    if (syscall(SYS_sched_getattr, 0, &current, sizeof current, 0) != 0) return errno;
    // Only plain time-shared threads: a real-time or deadline policy chosen by the operator stays.
    if (current.sched_policy != 0 /* SCHED_OTHER */) return 0;
    ck_sched_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.sched_policy = 0;
    attr.sched_nice = current.sched_nice;  // keep `nice inferd …`
    attr.sched_runtime = (uint64_t)microseconds * 1000u;
    return syscall(SYS_sched_setattr, 0, &attr, 0) == 0 ? 0 : errno;
}

int64_t ck_thread_slice_us(void) {
    ck_sched_attr current;
    memset(&current, 0, sizeof current);
    if (syscall(SYS_sched_getattr, 0, &current, sizeof current, 0) != 0) return -1;
    return (int64_t)(current.sched_runtime / 1000u);
}
#else
int ck_thread_set_slice_us(int64_t microseconds) {
    (void)microseconds;
    return 0;
}
int64_t ck_thread_slice_us(void) { return -1; }
#endif

int64_t ck_compute_slice_us(void) {
    const char *setting = getenv("INFERD_COMPUTE_SLICE_US");
    if (setting && setting[0]) return strtoll(setting, NULL, 10);
    return 10000;
}

int ck_thread_prefer_throughput(void) { return ck_thread_set_slice_us(ck_compute_slice_us()); }

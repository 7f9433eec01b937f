// Counts each thread's heap allocations, so a test can check that a hot loop allocates nothing
// while other tests run beside it. Only the test executable links this target: it replaces
// malloc for the whole process.
#ifndef INFERD_ALLOCATION_COUNTER_H
#define INFERD_ALLOCATION_COUNTER_H

#include <stdbool.h>
#include <stdint.h>

/// True when this build counts (false under sanitizers, whose runtimes own malloc).
bool ac_is_available(void);
/// malloc, calloc, realloc, posix_memalign, aligned_alloc and memalign calls the calling thread
/// has made so far.
uint64_t ac_thread_allocations(void);

#endif

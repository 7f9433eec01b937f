// A counting front for glibc's allocator. Defining malloc and friends in the executable makes
// every allocation of the process (Swift's runtime included) come here first; each forwards to
// glibc's own entry point, so the heap and its behaviour stay glibc's.
#include "allocation_counter.h"

#include <stddef.h>

#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define AC_SANITIZED 1
#endif
#endif

// initial-exec: touching it must not itself allocate (a lazily created TLS block would).
static __thread uint64_t thread_allocations __attribute__((tls_model("initial-exec")));

uint64_t ac_thread_allocations(void) { return thread_allocations; }

#ifdef AC_SANITIZED
bool ac_is_available(void) { return false; }
#else
bool ac_is_available(void) { return true; }

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static inline void count(void) { thread_allocations++; }

void *malloc(size_t size) {
    count();
    return __libc_malloc(size);
}

void *calloc(size_t n, size_t size) {
    count();
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size) {
    count();
    return __libc_realloc(p, size);
}

void free(void *p) { __libc_free(p); }

int posix_memalign(void **out, size_t alignment, size_t size) {
    count();
    void *p = __libc_memalign(alignment, size);
    if (!p) return 12;  // ENOMEM
    *out = p;
    return 0;
}

void *aligned_alloc(size_t alignment, size_t size) {
    count();
    return __libc_memalign(alignment, size);
}

void *memalign(size_t alignment, size_t size) {
    count();
    return __libc_memalign(alignment, size);
}
#endif

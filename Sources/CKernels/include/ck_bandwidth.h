// A memory-read bandwidth probe, so `inferd bench` can report decode's weight bandwidth as a
// fraction of what this machine can read, measured in the same run.
#ifndef INFERD_CK_BANDWIDTH_H
#define INFERD_CK_BANDWIDTH_H
#include <stddef.h>
#include <stdint.h>

/// Reads `bytes` bytes (a multiple of 128) from `p` as fast as the CPU allows and returns a
/// value depending on all of them (so the reads cannot be optimized away).
uint64_t ck_read_sweep(const void *p, size_t bytes);

#endif

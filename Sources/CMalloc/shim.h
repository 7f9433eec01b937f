// glibc's allocator controls: <malloc.h> is not part of Swift's Glibc module.
#ifndef INFERD_CMALLOC_SHIM_H
#define INFERD_CMALLOC_SHIM_H
#include <malloc.h>
#endif

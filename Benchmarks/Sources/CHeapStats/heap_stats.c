#include "heap_stats.h"
#include <stdlib.h> // defines __GLIBC__ on glibc
#if defined(__GLIBC__)
#include <malloc.h>
#endif

size_t heap_stats_in_use(void) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
    struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
#else
    return 0;
#endif
}

void heap_stats_trim(void) {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

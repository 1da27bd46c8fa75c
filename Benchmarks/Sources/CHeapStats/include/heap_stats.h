// What the memory benchmarks read from the C allocator. glibc only; elsewhere both are no-ops.
#ifndef HEAP_STATS_H
#define HEAP_STATS_H
#include <stddef.h>

/// Bytes the allocator has handed out and not had back (glibc `mallinfo2`: `uordblks + hblkhd`);
/// 0 where unknown.
size_t heap_stats_in_use(void);

/// Returns the allocator's free memory to the system (glibc `malloc_trim(0)`).
void heap_stats_trim(void);

#endif

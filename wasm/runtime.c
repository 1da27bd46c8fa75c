// The C runtime of the Actomaton wasm modules: a heap and a silent `putchar`.
//
// With these, a module imports nothing: it runs in any wasm engine without WASI.
//
// Heap. Embedded Swift needs `posix_memalign` and `free` (plus `malloc` for C callers). wasi-libc's
// dlmalloc would add about 11 KB to every module; this allocator is a few hundred bytes:
// blocks are powers of two from 16 bytes up, each preceded by a 16-byte header naming its size
// class; freed blocks go on a free list per class and are reused; new blocks are carved from the
// end of the heap, growing linear memory with `memory.grow`. Memory is never returned to the
// host, which suits a state machine whose working set levels off.
#include <stddef.h>
#include <stdint.h>

extern unsigned char __heap_base;  // set by wasm-ld: the first byte after static data

enum { HEADER = 16, MIN_CLASS = 5, CLASS_COUNT = 32, PAGE = 65536 };
#define ALIGNED_FLAG 0x80000000u

typedef struct block {
    uint32_t size_class;       // log2 of the block size; or ALIGNED_FLAG | offset (see posix_memalign)
    uint32_t unused[3];
} block;

static uintptr_t heap_next, heap_limit;
static block *free_blocks[CLASS_COUNT];

static unsigned class_for(size_t bytes) {
    unsigned size_class = MIN_CLASS;
    while (size_class < CLASS_COUNT && ((size_t)1 << size_class) < bytes) size_class++;
    return size_class;
}

static block *carve(size_t bytes) {
    if (heap_next == 0) heap_next = heap_limit = ((uintptr_t)&__heap_base + HEADER - 1) & ~(uintptr_t)(HEADER - 1);
    if (bytes > heap_limit - heap_next) {
        size_t pages = (bytes - (heap_limit - heap_next) + PAGE - 1) / PAGE;
        if (__builtin_wasm_memory_grow(0, pages) == (size_t)-1) return 0;
        heap_limit += pages * PAGE;
    }
    block *result = (block *)heap_next;
    heap_next += bytes;
    return result;
}

void *malloc(size_t size) {
    if (size > ((size_t)1 << (CLASS_COUNT - 2))) return 0;
    unsigned size_class = class_for(size + HEADER);
    block *b = free_blocks[size_class];
    if (b) {
        free_blocks[size_class] = *(block **)(b + 1);
    } else if (!(b = carve((size_t)1 << size_class))) {
        return 0;
    }
    b->size_class = size_class;
    return b + 1;
}

void free(void *pointer) {
    if (!pointer) return;
    block *b = (block *)pointer - 1;
    if (b->size_class & ALIGNED_FLAG) b = (block *)((char *)b - (b->size_class & ~ALIGNED_FLAG));
    *(block **)(b + 1) = free_blocks[b->size_class];
    free_blocks[b->size_class] = b;
}

// Alignments above 16: allocate extra room, then put a header just before the aligned address
// that records how far back the real header is.
int posix_memalign(void **result, size_t alignment, size_t size) {
    enum { ENOMEM = 48 };
    if (alignment <= HEADER) return (*result = malloc(size)) ? 0 : ENOMEM;
    char *raw = malloc(size + alignment);
    if (!raw) return ENOMEM;
    uintptr_t aligned = ((uintptr_t)raw + alignment - 1) & ~(uintptr_t)(alignment - 1);
    if (aligned == (uintptr_t)raw) { *result = raw; return 0; }
    block *marker = (block *)aligned - 1;
    marker->size_class = ALIGNED_FLAG | (uint32_t)((char *)marker - (raw - HEADER));
    *result = (void *)aligned;
    return 0;
}

// For the Swift glue, which may not name malloc/free directly: allocation that can fail.
void *am_try_allocate(size_t size) { return malloc(size); }
void am_deallocate(void *pointer) { free(pointer); }

// Embedded Swift prints the message of a fatal error through putchar before trapping. The
// modules never trap on user input; for the bugs that would, the message is dropped rather
// than making every module import WASI's fd_write.
int putchar(int character) { return character; }

// memcmp, which Swift's array and string comparisons call.
int memcmp(const void *left, const void *right, size_t count) {
    const unsigned char *a = left, *b = right;
    for (size_t i = 0; i < count; i++) {
        if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
    }
    return 0;
}

// 128-bit multiplication, which Swift's Duration arithmetic lowers to; wasm32 has no
// compiler-rt in this toolchain. The low 128 bits of the product, from 64-bit halves.
__int128 __multi3(__int128 a, __int128 b) {
    unsigned long long a_lo = (unsigned long long)a, a_hi = (unsigned long long)((unsigned __int128)a >> 64);
    unsigned long long b_lo = (unsigned long long)b, b_hi = (unsigned long long)((unsigned __int128)b >> 64);
    // a_lo * b_lo as a full 128-bit product, from 32-bit quarters.
    unsigned long long a0 = a_lo & 0xFFFFFFFFu, a1 = a_lo >> 32, b0 = b_lo & 0xFFFFFFFFu, b1 = b_lo >> 32;
    unsigned long long p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    unsigned long long middle = (p00 >> 32) + (p01 & 0xFFFFFFFFu) + (p10 & 0xFFFFFFFFu);
    unsigned long long low = (middle << 32) | (p00 & 0xFFFFFFFFu);
    unsigned long long high = p11 + (p01 >> 32) + (p10 >> 32) + (middle >> 32);
    high += a_lo * b_hi + a_hi * b_lo;
    return (__int128)(((unsigned __int128)high << 64) | low);
}

// strlen, which clang makes of a C plugin's own string loops.
size_t strlen(const char *text) {
    size_t n = 0;
    while (text[n]) n++;
    return n;
}

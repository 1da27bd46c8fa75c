#define _GNU_SOURCE
#include "shared_ring.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

// One ring's positions and flags, each on a cache line of its own.
struct ring_header {
    _Alignas(64) _Atomic uint64_t head;
    _Alignas(64) _Atomic uint64_t tail;
    _Alignas(64) _Atomic uint32_t consumer_spinning;
    _Alignas(64) _Atomic uint32_t producer_waiting;
};

// The headers of both rings, then ring 0's data, then ring 1's.
enum { headers_size = 4096 };
_Static_assert(2 * sizeof(struct ring_header) <= headers_size, "the headers fit their page");

static struct ring_header *header(void *region, int ring) {
    return (struct ring_header *)region + (ring & 1);
}

static unsigned char *data(void *region, int ring) {
    return (unsigned char *)region + headers_size + (size_t)(ring & 1) * ACTOMATON_RING_CAPACITY;
}

size_t actomaton_shared_region_size(void) {
    return headers_size + 2 * (size_t)ACTOMATON_RING_CAPACITY;
}

int actomaton_shared_region_create(void) {
#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif
    // Not executable, as a system with vm.memfd_noexec=2 requires (Linux 6.3 on); a kernel
    // before it does not know the flag.
    int fd = (int)syscall(SYS_memfd_create, "actomaton-worker-rings", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL);
    if (fd < 0 && errno == EINVAL) fd = (int)syscall(SYS_memfd_create, "actomaton-worker-rings", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return -errno;
    // Sealed at its size: a worker that shrank it would make the host's reads of it fault.
    if (ftruncate(fd, (off_t)actomaton_shared_region_size()) != 0
        || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        int error = errno;
        close(fd);
        return -error;
    }
    return fd;
}

void *actomaton_shared_region_map(int descriptor) {
    // A region of another size (a host of another build) would be read past its end.
    struct stat status;
    if (fstat(descriptor, &status) != 0) return NULL;
    if ((size_t)status.st_size != actomaton_shared_region_size()) {
        errno = EINVAL;
        return NULL;
    }
    void *region = mmap(NULL, actomaton_shared_region_size(), PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0);
    return region == MAP_FAILED ? NULL : region;
}

void actomaton_shared_region_unmap(void *region) {
    if (region != NULL) munmap(region, actomaton_shared_region_size());
}

int64_t actomaton_ring_put(void *region, int ring, uint64_t *head, const void *bytes, size_t count) {
    struct ring_header *h = header(region, ring);
    uint64_t tail = atomic_load_explicit(&h->tail, memory_order_acquire);
    uint64_t used = *head - tail;
    if (used > ACTOMATON_RING_CAPACITY) return -1;
    uint64_t room = ACTOMATON_RING_CAPACITY - used;
    size_t n = count < room ? count : (size_t)room;
    if (n == 0) return 0;
    size_t at = (size_t)(*head % ACTOMATON_RING_CAPACITY);
    size_t first = n < ACTOMATON_RING_CAPACITY - at ? n : (size_t)(ACTOMATON_RING_CAPACITY - at);
    memcpy(data(region, ring) + at, bytes, first);
    memcpy(data(region, ring), (const unsigned char *)bytes + first, n - first);
    *head += n;
    atomic_store_explicit(&h->head, *head, memory_order_release);
    return (int64_t)n;
}

int64_t actomaton_ring_take(void *region, int ring, uint64_t *tail, void *into, size_t room, int *wake_producer) {
    struct ring_header *h = header(region, ring);
    *wake_producer = 0;
    uint64_t head = atomic_load_explicit(&h->head, memory_order_acquire);
    uint64_t available = head - *tail;
    if (available > ACTOMATON_RING_CAPACITY) return -1;
    size_t n = available < room ? (size_t)available : room;
    if (n == 0) return 0;
    size_t at = (size_t)(*tail % ACTOMATON_RING_CAPACITY);
    size_t first = n < ACTOMATON_RING_CAPACITY - at ? n : (size_t)(ACTOMATON_RING_CAPACITY - at);
    memcpy(into, data(region, ring) + at, first);
    memcpy((unsigned char *)into + first, data(region, ring), n - first);
    *tail += n;
    atomic_store_explicit(&h->tail, *tail, memory_order_release);
    // Pairs with the producer's fence after it says it waits: one of the two sees the other.
    atomic_thread_fence(memory_order_seq_cst);
    *wake_producer = atomic_load_explicit(&h->producer_waiting, memory_order_relaxed) != 0;
    return (int64_t)n;
}

uint64_t actomaton_ring_head(void *region, int ring) {
    return atomic_load_explicit(&header(region, ring)->head, memory_order_acquire);
}

uint64_t actomaton_ring_available(void *region, int ring, uint64_t tail) {
    uint64_t available = atomic_load_explicit(&header(region, ring)->head, memory_order_acquire) - tail;
    return available > ACTOMATON_RING_CAPACITY ? UINT64_MAX : available;
}

int actomaton_ring_consumer_spins(void *region, int ring) {
    // Pairs with the consumer's fence after it stops spinning: either it sees the put, or the
    // producer sees it sleep and rings.
    atomic_thread_fence(memory_order_seq_cst);
    return atomic_load_explicit(&header(region, ring)->consumer_spinning, memory_order_relaxed) != 0;
}

void actomaton_ring_set_consumer_spinning(void *region, int ring, int spinning) {
    atomic_store_explicit(&header(region, ring)->consumer_spinning, spinning ? 1u : 0u, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
}

void actomaton_ring_set_producer_waiting(void *region, int ring, int waiting) {
    atomic_store_explicit(&header(region, ring)->producer_waiting, waiting ? 1u : 0u, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
}

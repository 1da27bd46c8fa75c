// Two byte rings in memory shared by the host and one plugin worker: the worker conversation's
// frames travel through them, and the socket between the two only wakes a side that sleeps
// (see WorkerChannel). Ring 0 carries the host's requests, ring 1 the worker's replies.
//
// What the other side writes into the region is untrusted: positions are checked before any
// byte is copied, bytes are copied out before they are read, and a ring's capacity is this
// header's constant, never a value read from the region.
#ifndef ACTOMATON_SHARED_RING_H
#define ACTOMATON_SHARED_RING_H

#include <stddef.h>
#include <stdint.h>

// Bytes of data each ring holds.
#define ACTOMATON_RING_CAPACITY 262144 // 256 KiB

// The size of the shared region: both rings' positions and flags, then their data.
size_t actomaton_shared_region_size(void);

// A memory file of the region's size (close-on-exec), sealed so that neither side can change
// its size, or -errno.
int actomaton_shared_region_create(void);

// Maps `descriptor`'s region, shared, read and write; NULL (errno set) when it cannot, or
// when the file is not of the region's size (EINVAL).
void *actomaton_shared_region_map(int descriptor);

// Unmaps a region mapped by actomaton_shared_region_map.
void actomaton_shared_region_unmap(void *region);

// Copies up to `count` bytes into `ring` after the producer's position `*head` (kept by the
// producer, never read back from the region); publishes them and advances `*head`. The bytes
// copied (0 when the ring is full), or -1 when the consumer's position in the region is not
// one it can have (a corrupt ring).
int64_t actomaton_ring_put(void *region, int ring, uint64_t *head, const void *bytes, size_t count);

// Copies up to `room` bytes out of `ring` from the consumer's position `*tail` into `into`,
// advances `*tail` and gives the space back. The bytes copied, or -1 when the producer's
// position in the region is not one it can have. `*wake_producer` says whether the producer
// waits for room (ring the doorbell).
int64_t actomaton_ring_take(void *region, int ring, uint64_t *tail, void *into, size_t room, int *wake_producer);

// The producer's position in `ring` as the region holds it.
uint64_t actomaton_ring_head(void *region, int ring);

// The bytes `ring` holds after the consumer's position `tail`, or UINT64_MAX when corrupt.
uint64_t actomaton_ring_available(void *region, int ring, uint64_t tail);

// Whether the consumer of `ring` spins on it now (else the producer rings the doorbell after
// a put). Called by the producer after a put; a full fence orders it after the put.
int actomaton_ring_consumer_spins(void *region, int ring);

// The consumer of `ring` says it spins on it (1), or no longer (0); then a full fence.
void actomaton_ring_set_consumer_spinning(void *region, int ring, int spinning);

// The producer of `ring` says it waits for room (1), or no longer (0); then a full fence.
void actomaton_ring_set_producer_waiting(void *region, int ring, int waiting);

#endif

// The counter's rules, shared by counter.so (counter_plugin.c, on actomaton_plugin.h) and the
// counter wasm plugin (counter_wasm.c, on actomaton_wasm_plugin.h): each transition checks its
// input, returns NULL and updates the count, or returns why it refuses with the count as it was.
// No libc: the wasm build has none.
#ifndef COUNTER_RULES_H
#define COUNTER_RULES_H

#include <stdint.h>
#include <stddef.h>

static inline const char *counter_increment(int64_t *count) {
    if (*count == INT64_MAX) return "the counter is at its maximum";
    *count += 1;
    return NULL;
}

static inline const char *counter_decrement(int64_t *count) {
    if (*count == INT64_MIN) return "the counter is at its minimum";
    *count -= 1;
    return NULL;
}

static inline const char *counter_add(int64_t *count, int64_t amount) {
    int64_t sum;
    if (__builtin_add_overflow(*count, amount, &sum)) return "adding that amount would overflow the counter";
    *count = sum;
    return NULL;
}

/* add_later checks its delay; the caller then requests add(amount) after it. */
static inline const char *counter_check_delay(double seconds) {
    return (seconds >= 0 && seconds < 86400) ? NULL : "seconds must be between 0 and 86400";
}

/* start checks its interval; the caller then requests increment() every interval, as "ticker". */
static inline const char *counter_check_interval(uint32_t interval_ms) {
    return interval_ms == 0 ? "interval_ms must be at least 1" : NULL;
}

/* Snapshot format: the 8 bytes "counter1", then the count as 8 little-endian bytes. */
enum { COUNTER_SNAPSHOT_SIZE = 16 };

static inline void counter_snapshot(int64_t count, uint8_t buffer[COUNTER_SNAPSHOT_SIZE]) {
    static const char magic[8] = {'c', 'o', 'u', 'n', 't', 'e', 'r', '1'};
    for (int i = 0; i < 8; i++) buffer[i] = (uint8_t)magic[i];
    for (int i = 0; i < 8; i++) buffer[8 + i] = (uint8_t)((uint64_t)count >> (8 * i));
}

static inline const char *counter_restore(int64_t *count, const uint8_t *bytes, size_t length) {
    static const char magic[8] = {'c', 'o', 'u', 'n', 't', 'e', 'r', '1'};
    if (length != COUNTER_SNAPSHOT_SIZE) return "not a counter snapshot";
    for (int i = 0; i < 8; i++) if (bytes[i] != (uint8_t)magic[i]) return "not a counter snapshot";
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)bytes[8 + i] << (8 * i);
    *count = (int64_t)v;
    return NULL;
}

/* The description, {"count":N}, written to `text` (at least 32 bytes); returns its length. */
static inline size_t counter_describe(int64_t count, char text[32]) {
    static const char prefix[] = "{\"count\":";
    size_t n = 0;
    for (const char *p = prefix; *p; p++) text[n++] = *p;
    uint64_t magnitude = count < 0 ? (uint64_t)0 - (uint64_t)count : (uint64_t)count;
    char digits[20];
    int d = 0;
    do { digits[d++] = (char)('0' + magnitude % 10); magnitude /= 10; } while (magnitude);
    if (count < 0) text[n++] = '-';
    while (d) text[n++] = digits[--d];
    text[n++] = '}';
    return n;
}

#endif

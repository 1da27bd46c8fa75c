// A counter as a reducer plugin, in plain C: no Swift, no global mutable state.
//
// Vocabulary:
//   increment()                      count += 1
//   decrement()                      count -= 1
//   add(int64 amount)                count += amount; refused when it would overflow
//   reset()                          count = 0
//   add_later(int64 amount, double seconds)   sends add(amount) after `seconds`
//   start(uint32 interval_ms)        sends increment() every interval, as effect "ticker"
//   stop()                           cancels "ticker"
#include "counter_plugin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct counter_state {
    const actomaton_host *host; // bound to this state by the host; valid until destroy
    int64_t count;
} counter_state;

static actomaton_status increment(void *state) {
    counter_state *s = state;
    if (s->count == INT64_MAX) {
        s->host->fail("the counter is at its maximum");
        return ACTOMATON_ERROR;
    }
    s->count += 1;
    return ACTOMATON_OK;
}

static actomaton_status decrement(void *state) {
    counter_state *s = state;
    if (s->count == INT64_MIN) {
        s->host->fail("the counter is at its minimum");
        return ACTOMATON_ERROR;
    }
    s->count -= 1;
    return ACTOMATON_OK;
}

static actomaton_status add(void *state, int64_t amount) {
    counter_state *s = state;
    int64_t sum;
    if (__builtin_add_overflow(s->count, amount, &sum)) {
        s->host->fail("adding that amount would overflow the counter");
        return ACTOMATON_ERROR;
    }
    s->count = sum;
    return ACTOMATON_OK;
}

static actomaton_status reset(void *state) {
    ((counter_state *)state)->count = 0;
    return ACTOMATON_OK;
}

static actomaton_status add_later(void *state, int64_t amount, double seconds) {
    counter_state *s = state;
    if (!(seconds >= 0 && seconds < 86400)) {
        s->host->fail("seconds must be between 0 and 86400");
        return ACTOMATON_ERROR;
    }
    actomaton_value args[1] = {{.type = ACTOMATON_TYPE_INT64, .as.i = amount}};
    actomaton_call call = {.action = "add", .args = args, .arg_count = 1};
    return s->host->delayed_action(&call, (uint64_t)(seconds * 1e9), NULL);
}

static actomaton_status start(void *state, uint32_t interval_ms) {
    counter_state *s = state;
    if (interval_ms == 0) {
        s->host->fail("interval_ms must be at least 1");
        return ACTOMATON_ERROR;
    }
    actomaton_call call = {.action = "increment", .args = NULL, .arg_count = 0};
    actomaton_effect_options options = {.id = "ticker"};
    return s->host->repeating_action(&call, (uint64_t)interval_ms * 1000000u, &options);
}

static actomaton_status stop(void *state) {
    counter_state *s = state;
    return s->host->cancel("ticker");
}

static void *create(const actomaton_host *host) {
    counter_state *s = calloc(1, sizeof *s);
    if (s) s->host = host;
    return s;
}

static void destroy(void *state) { free(state); }

// Snapshot format: the 8 bytes "counter1", then the count as 8 little-endian bytes.
static size_t snapshot(const void *state, uint8_t *buffer, size_t capacity) {
    const counter_state *s = state;
    if (capacity < 16) return 16;
    memcpy(buffer, "counter1", 8);
    uint64_t v = (uint64_t)s->count;
    for (int i = 0; i < 8; i++) buffer[8 + i] = (uint8_t)(v >> (8 * i));
    return 16;
}

static actomaton_status restore(void *state, const uint8_t *bytes, size_t length) {
    counter_state *s = state;
    if (length != 16 || memcmp(bytes, "counter1", 8) != 0) {
        s->host->fail("not a counter snapshot");
        return ACTOMATON_ERROR;
    }
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)bytes[8 + i] << (8 * i);
    s->count = (int64_t)v;
    return ACTOMATON_OK;
}

static size_t describe(const void *state, char *buffer, size_t capacity) {
    const counter_state *s = state;
    char text[48];
    int n = snprintf(text, sizeof text, "{\"count\":%lld}", (long long)s->count);
    if ((size_t)n <= capacity) memcpy(buffer, text, (size_t)n);
    return (size_t)n;
}

static const actomaton_parameter add_parameters[] = {{"amount", ACTOMATON_TYPE_INT64}};
static const actomaton_parameter add_later_parameters[] = {
    {"amount", ACTOMATON_TYPE_INT64},
    {"seconds", ACTOMATON_TYPE_DOUBLE},
};
static const actomaton_parameter start_parameters[] = {{"interval_ms", ACTOMATON_TYPE_UINT32}};

static const actomaton_action actions[] = {
    {"increment", NULL, 0, (actomaton_function)increment},
    {"decrement", NULL, 0, (actomaton_function)decrement},
    {"add", add_parameters, 1, (actomaton_function)add},
    {"reset", NULL, 0, (actomaton_function)reset},
    {"add_later", add_later_parameters, 2, (actomaton_function)add_later},
    {"start", start_parameters, 1, (actomaton_function)start},
    {"stop", NULL, 0, (actomaton_function)stop},
};

static const actomaton_manifest manifest = {
    .abi_version = ACTOMATON_PLUGIN_ABI_VERSION,
    .name = "counter",
    .version = "1.0.0",
    .summary = "A counter, written in plain C",
    .actions = actions,
    .action_count = sizeof actions / sizeof actions[0],
    .create = create,
    .destroy = destroy,
    .snapshot = snapshot,
    .restore = restore,
    .describe = describe,
};

const actomaton_manifest *actomaton_plugin_entry(uint32_t host_abi_version) {
    (void)host_abi_version; // the host checks manifest.abi_version
    return &manifest;
}

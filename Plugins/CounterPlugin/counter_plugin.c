// A counter as a reducer plugin, in plain C: no Swift, no global mutable state. The rules
// are in counter_rules.h, shared with the wasm plugin (counter_wasm.c).
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
#include "counter_rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct counter_state {
    const actomaton_host *host; // bound to this state by the host; valid until destroy
    int64_t count;
} counter_state;

/* Reports `error` through the host, if any: the action then fails with the state unchanged. */
static actomaton_status outcome(counter_state *s, const char *error) {
    if (!error) return ACTOMATON_OK;
    s->host->fail(error);
    return ACTOMATON_ERROR;
}

static actomaton_status increment(void *state) {
    counter_state *s = state;
    return outcome(s, counter_increment(&s->count));
}

static actomaton_status decrement(void *state) {
    counter_state *s = state;
    return outcome(s, counter_decrement(&s->count));
}

static actomaton_status add(void *state, int64_t amount) {
    counter_state *s = state;
    return outcome(s, counter_add(&s->count, amount));
}

static actomaton_status reset(void *state) {
    ((counter_state *)state)->count = 0;
    return ACTOMATON_OK;
}

static actomaton_status add_later(void *state, int64_t amount, double seconds) {
    counter_state *s = state;
    if (outcome(s, counter_check_delay(seconds)) != ACTOMATON_OK) return ACTOMATON_ERROR;
    actomaton_value args[1] = {{.type = ACTOMATON_TYPE_INT64, .as.i = amount}};
    actomaton_call call = {.action = "add", .args = args, .arg_count = 1};
    return s->host->delayed_action(&call, (uint64_t)(seconds * 1e9), NULL);
}

static actomaton_status start(void *state, uint32_t interval_ms) {
    counter_state *s = state;
    if (outcome(s, counter_check_interval(interval_ms)) != ACTOMATON_OK) return ACTOMATON_ERROR;
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

static size_t snapshot(const void *state, uint8_t *buffer, size_t capacity) {
    if (capacity < COUNTER_SNAPSHOT_SIZE) return COUNTER_SNAPSHOT_SIZE;
    counter_snapshot(((const counter_state *)state)->count, buffer);
    return COUNTER_SNAPSHOT_SIZE;
}

static actomaton_status restore(void *state, const uint8_t *bytes, size_t length) {
    counter_state *s = state;
    return outcome(s, counter_restore(&s->count, bytes, length));
}

static size_t describe(const void *state, char *buffer, size_t capacity) {
    char text[32];
    size_t n = counter_describe(((const counter_state *)state)->count, text);
    if (n <= capacity) memcpy(buffer, text, n);
    return n;
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

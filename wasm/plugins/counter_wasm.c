// The counter as a wasm plugin, in plain C on actomaton_wasm_plugin.h: the rules of
// Plugins/CounterPlugin/include/counter_rules.h, the same ones counter.so runs, so the two
// behave alike action for action. Built by wasm/build.sh with clang --target=wasm32, no libc:
// malloc comes from wasm/runtime.c.
#include "actomaton_wasm_plugin.h"
#include "counter_rules.h"

void *malloc(size_t size);
void free(void *pointer);

#define EXPORT(name) __attribute__((export_name(#name)))

static int64_t count;

static uint32_t length_of(const char *text) {
    uint32_t n = 0;
    while (text[n]) n++;
    return n;
}

static int32_t outcome(const char *error) {
    if (!error) return ACTOMATON_WASM_OK;
    actomaton_fail((uint32_t)error, length_of(error));
    return ACTOMATON_WASM_ERROR;
}

EXPORT(actomaton_action_increment) int32_t increment(void) { return outcome(counter_increment(&count)); }
EXPORT(actomaton_action_decrement) int32_t decrement(void) { return outcome(counter_decrement(&count)); }
EXPORT(actomaton_action_add) int32_t add(int64_t amount) { return outcome(counter_add(&count, amount)); }
EXPORT(actomaton_action_reset) int32_t reset(void) { count = 0; return ACTOMATON_WASM_OK; }

enum { ACTION_INCREMENT, ACTION_DECREMENT, ACTION_ADD, ACTION_RESET, ACTION_ADD_LATER, ACTION_START, ACTION_STOP };

EXPORT(actomaton_action_add_later) int32_t add_later(int64_t amount, double seconds) {
    if (outcome(counter_check_delay(seconds)) != ACTOMATON_WASM_OK) return ACTOMATON_WASM_ERROR;
    actomaton_wasm_value args[1] = {{.type = ACTOMATON_WASM_TYPE_INT64, .as.i = amount}};
    actomaton_wasm_call call = {.action = ACTION_ADD, .args = (uint32_t)args, .arg_count = 1};
    return actomaton_delayed_action((uint32_t)&call, (uint64_t)(seconds * 1e9), 0);
}

static const char ticker[] = "ticker";

EXPORT(actomaton_action_start) int32_t start(uint32_t interval_ms) {
    if (outcome(counter_check_interval(interval_ms)) != ACTOMATON_WASM_OK) return ACTOMATON_WASM_ERROR;
    actomaton_wasm_call call = {.action = ACTION_INCREMENT, .args = 0, .arg_count = 0};
    actomaton_wasm_effect_options options = {.id = {(uint32_t)ticker, sizeof ticker - 1}};
    return actomaton_repeating_action((uint32_t)&call, (uint64_t)interval_ms * 1000000u, (uint32_t)&options);
}

EXPORT(actomaton_action_stop) int32_t stop(void) { return actomaton_cancel((uint32_t)ticker, sizeof ticker - 1); }

// ---- Manifest -------------------------------------------------------------------------------

#define STRING(text) {(uint32_t)(text), sizeof(text) - 1}

static actomaton_wasm_parameter add_parameters[1], add_later_parameters[2], start_parameters[1];
static actomaton_wasm_action actions[7];
static actomaton_wasm_manifest manifest;

// Offsets are addresses, which C cannot put in a static initializer of an integer type: the
// manifest is filled in on the first call.
EXPORT(actomaton_manifest) uint32_t actomaton_manifest(void) {
    if (manifest.abi_version) return (uint32_t)&manifest;
    add_parameters[0] = (actomaton_wasm_parameter){STRING("amount"), ACTOMATON_WASM_TYPE_INT64};
    add_later_parameters[0] = (actomaton_wasm_parameter){STRING("amount"), ACTOMATON_WASM_TYPE_INT64};
    add_later_parameters[1] = (actomaton_wasm_parameter){STRING("seconds"), ACTOMATON_WASM_TYPE_DOUBLE};
    start_parameters[0] = (actomaton_wasm_parameter){STRING("interval_ms"), ACTOMATON_WASM_TYPE_UINT32};
    actions[ACTION_INCREMENT] = (actomaton_wasm_action){STRING("increment"), 0, 0};
    actions[ACTION_DECREMENT] = (actomaton_wasm_action){STRING("decrement"), 0, 0};
    actions[ACTION_ADD] = (actomaton_wasm_action){STRING("add"), (uint32_t)add_parameters, 1};
    actions[ACTION_RESET] = (actomaton_wasm_action){STRING("reset"), 0, 0};
    actions[ACTION_ADD_LATER] = (actomaton_wasm_action){STRING("add_later"), (uint32_t)add_later_parameters, 2};
    actions[ACTION_START] = (actomaton_wasm_action){STRING("start"), (uint32_t)start_parameters, 1};
    actions[ACTION_STOP] = (actomaton_wasm_action){STRING("stop"), 0, 0};
    manifest = (actomaton_wasm_manifest){
        .abi_version = ACTOMATON_WASM_ABI_VERSION,
        .name = STRING("counter"),
        .version = STRING("1.0.0"),
        .summary = STRING("A counter, written in plain C (WebAssembly)"),
        .actions = (uint32_t)actions,
        .action_count = 7,
    };
    return (uint32_t)&manifest;
}

EXPORT(actomaton_abi_version) uint32_t actomaton_abi_version(void) { return ACTOMATON_WASM_ABI_VERSION; }

// ---- Memory, snapshot, description ----------------------------------------------------------

static uint8_t *input;
static uint32_t input_capacity;

EXPORT(actomaton_alloc) uint32_t actomaton_alloc(uint32_t length) {
    if (length > input_capacity) {
        free(input);
        input = malloc(length);
        input_capacity = input ? length : 0;
    }
    return (uint32_t)input;
}

static uint8_t output[COUNTER_SNAPSHOT_SIZE + 32];

EXPORT(actomaton_snapshot) uint64_t actomaton_snapshot(void) {
    counter_snapshot(count, output);
    return (uint64_t)(uint32_t)output | (uint64_t)COUNTER_SNAPSHOT_SIZE << 32;
}

EXPORT(actomaton_restore) int32_t actomaton_restore(uint32_t bytes, uint32_t length) {
    return outcome(counter_restore(&count, (const uint8_t *)bytes, length));
}

EXPORT(actomaton_describe) uint64_t actomaton_describe(void) {
    size_t n = counter_describe(count, (char *)output);
    return (uint64_t)(uint32_t)output | (uint64_t)n << 32;
}

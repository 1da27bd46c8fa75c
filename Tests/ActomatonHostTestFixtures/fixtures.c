// Plugins for the host's tests. The library deliberately does not export the standard entry
// symbol (so loading it plainly tests "a shared library without the entry symbol"); each
// fixture has its own entry symbol, which tests pass as Plugin.LoadOptions.entrySymbol.
#include "fixtures.h"

#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#define EXPORT __attribute__((visibility("default")))

// ---- A small valid plugin, the base of the broken ones, and the probe of host functions.

typedef struct probe_state {
    const actomaton_host *host;
    int32_t value;
    int32_t create_request_status; // what a request made from `create` returned
} probe_state;

static void *create(const actomaton_host *host) {
    probe_state *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->host = host;
    // Outside an action: the host must refuse this request.
    s->create_request_status = host->cancel("anything");
    return s;
}

static void destroy(void *state) { free(state); }

static size_t snapshot(const void *state, uint8_t *buffer, size_t capacity) {
    if (capacity >= 4) memcpy(buffer, &((const probe_state *)state)->value, 4);
    return 4;
}

static actomaton_status restore(void *state, const uint8_t *bytes, size_t length) {
    probe_state *s = state;
    if (length != 4) {
        s->host->fail("a probe snapshot is 4 bytes");
        return ACTOMATON_ERROR;
    }
    memcpy(&s->value, bytes, 4);
    return ACTOMATON_OK;
}

static size_t describe(const void *state, char *buffer, size_t capacity) {
    const probe_state *s = state;
    char text[96];
    int n = snprintf(text, sizeof text, "{\"value\":%d,\"create_request_status\":%d}", s->value, s->create_request_status);
    if ((size_t)n <= capacity) memcpy(buffer, text, (size_t)n);
    return (size_t)n;
}

// set(int32 value)
static actomaton_status set(void *state, int32_t value) {
    ((probe_state *)state)->value = value;
    return ACTOMATON_OK;
}

// set_then_request_unknown(int32 value): changes nothing, asks for an action that does not exist.
static actomaton_status request_unknown(void *state) {
    probe_state *s = state;
    actomaton_call call = {.action = "no_such_action"};
    return s->host->next_action(&call);
}

// request_wrong_type(): asks for set("x"), a string where an int32 is declared.
static actomaton_status request_wrong_type(void *state) {
    probe_state *s = state;
    actomaton_value args[1] = {{.type = ACTOMATON_TYPE_STRING, .as.s = "x"}};
    actomaton_call call = {.action = "set", .args = args, .arg_count = 1};
    return s->host->next_action(&call);
}

// request_out_of_range(): asks for set(2^40).
static actomaton_status request_out_of_range(void *state) {
    probe_state *s = state;
    actomaton_value args[1] = {{.type = ACTOMATON_TYPE_INT32, .as.i = ((int64_t)1) << 40}};
    actomaton_call call = {.action = "set", .args = args, .arg_count = 1};
    return s->host->next_action(&call);
}

// ignore_invalid_request(): makes an invalid request, changes nothing, and returns OK anyway.
static actomaton_status ignore_invalid_request(void *state) {
    probe_state *s = state;
    actomaton_call call = {.action = "no_such_action"};
    (void)s->host->next_action(&call);
    return ACTOMATON_OK;
}

// chain(int32 value): feeds back set(value) as a next action.
static actomaton_status chain(void *state, int32_t value) {
    probe_state *s = state;
    actomaton_value args[1] = {{.type = ACTOMATON_TYPE_INT32, .as.i = value}};
    actomaton_call call = {.action = "set", .args = args, .arg_count = 1};
    return s->host->next_action(&call);
}

// queued(string id, uint32 policy, uint32 max_count, uint32 delay_ms, int32 value):
// sends set(value) after delay_ms in queue "q" with the given policy.
static actomaton_status queued(void *state, const char *id, uint32_t policy, uint32_t max_count, uint32_t delay_ms, int32_t value) {
    probe_state *s = state;
    actomaton_value args[1] = {{.type = ACTOMATON_TYPE_INT32, .as.i = value}};
    actomaton_call call = {.action = "set", .args = args, .arg_count = 1};
    actomaton_effect_options options = {.id = id[0] ? id : NULL, .queue = "q", .policy = policy, .max_count = max_count};
    return s->host->delayed_action(&call, (uint64_t)delay_ms * 1000000u, &options);
}

// every_types(bool b, int8 i8, int16 i16, uint8 u8, uint16 u16, uint64 u64, float f, double d, string s):
// sets value to a checksum of all of them, to test every libffi argument type.
static actomaton_status every_type(void *state, bool b, int8_t i8, int16_t i16, uint8_t u8, uint16_t u16,
                                   uint64_t u64, float f, double d, const char *s) {
    probe_state *p = state;
    p->value = (int32_t)(b + i8 + i16 + u8 + u16 + (int64_t)(u64 % 1000) + (int64_t)(f * 10) + (int64_t)(d * 100) + (int64_t)strlen(s));
    return ACTOMATON_OK;
}

static const actomaton_parameter set_parameters[] = {{"value", ACTOMATON_TYPE_INT32}};
static const actomaton_parameter queued_parameters[] = {
    {"id", ACTOMATON_TYPE_STRING}, {"policy", ACTOMATON_TYPE_UINT32}, {"max_count", ACTOMATON_TYPE_UINT32},
    {"delay_ms", ACTOMATON_TYPE_UINT32}, {"value", ACTOMATON_TYPE_INT32},
};
static const actomaton_parameter every_type_parameters[] = {
    {"b", ACTOMATON_TYPE_BOOL}, {"i8", ACTOMATON_TYPE_INT8}, {"i16", ACTOMATON_TYPE_INT16},
    {"u8", ACTOMATON_TYPE_UINT8}, {"u16", ACTOMATON_TYPE_UINT16}, {"u64", ACTOMATON_TYPE_UINT64},
    {"f", ACTOMATON_TYPE_FLOAT}, {"d", ACTOMATON_TYPE_DOUBLE}, {"s", ACTOMATON_TYPE_STRING},
};

static const actomaton_action probe_actions[] = {
    {"set", set_parameters, 1, (actomaton_function)set},
    {"request_unknown", NULL, 0, (actomaton_function)request_unknown},
    {"request_wrong_type", NULL, 0, (actomaton_function)request_wrong_type},
    {"request_out_of_range", NULL, 0, (actomaton_function)request_out_of_range},
    {"ignore_invalid_request", NULL, 0, (actomaton_function)ignore_invalid_request},
    {"chain", set_parameters, 1, (actomaton_function)chain},
    {"queued", queued_parameters, 5, (actomaton_function)queued},
    {"every_type", every_type_parameters, 9, (actomaton_function)every_type},
};

#define PROBE_MANIFEST(actions_, count_)                                                   \
    {.abi_version = ACTOMATON_PLUGIN_ABI_VERSION, .name = "probe", .version = "0.1",       \
     .summary = "Probes the host's functions", .actions = actions_, .action_count = count_, \
     .create = create, .destroy = destroy, .snapshot = snapshot, .restore = restore,        \
     .describe = describe}

static const actomaton_manifest probe = PROBE_MANIFEST(probe_actions, 8);

EXPORT const actomaton_manifest *fixture_probe_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return &probe;
}

// ---- Broken manifests.

static const actomaton_manifest wrong_abi = {.abi_version = 3};

EXPORT const actomaton_manifest *fixture_wrong_abi_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return &wrong_abi;
}

EXPORT const actomaton_manifest *fixture_null_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return NULL;
}

static const actomaton_parameter unknown_type_parameters[] = {{"speed", 99}};
static const actomaton_action unknown_type_actions[] = {
    {"go", unknown_type_parameters, 1, (actomaton_function)set},
};
static const actomaton_manifest unknown_type = PROBE_MANIFEST(unknown_type_actions, 1);

EXPORT const actomaton_manifest *fixture_unknown_type_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return &unknown_type;
}

static const actomaton_action duplicate_actions[] = {
    {"go", NULL, 0, (actomaton_function)request_unknown},
    {"stop", NULL, 0, (actomaton_function)request_unknown},
    {"go", NULL, 0, (actomaton_function)request_unknown},
};
static const actomaton_manifest duplicate_action = PROBE_MANIFEST(duplicate_actions, 3);

EXPORT const actomaton_manifest *fixture_duplicate_action_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return &duplicate_action;
}

// ---- The manifest's text limits (ACTOMATON_MAX_VERSION_LENGTH, ACTOMATON_MAX_SUMMARY_LENGTH),
// at the limit and one past it: the same library loaded in-process and in a worker.

#define TEXT_10 "0123456789"
#define TEXT_50 TEXT_10 TEXT_10 TEXT_10 TEXT_10 TEXT_10
#define VERSION_64 TEXT_50 TEXT_10 "abcd"
#define SUMMARY_200 TEXT_50 TEXT_50 TEXT_50 TEXT_50
_Static_assert(sizeof VERSION_64 - 1 == ACTOMATON_MAX_VERSION_LENGTH, "a version at the limit");
_Static_assert(sizeof SUMMARY_200 - 1 == ACTOMATON_MAX_SUMMARY_LENGTH, "a summary at the limit");

#define TEXTS_MANIFEST(version_, summary_)                                                  \
    {.abi_version = ACTOMATON_PLUGIN_ABI_VERSION, .name = "probe", .version = version_,     \
     .summary = summary_, .actions = probe_actions, .action_count = 8, .create = create,    \
     .destroy = destroy, .snapshot = snapshot, .restore = restore, .describe = describe}

static const actomaton_manifest longest_texts = TEXTS_MANIFEST(VERSION_64, SUMMARY_200);
static const actomaton_manifest long_version = TEXTS_MANIFEST(VERSION_64 "v", "ok");
static const actomaton_manifest long_summary = TEXTS_MANIFEST("0.1", SUMMARY_200 "s");

EXPORT const actomaton_manifest *fixture_longest_texts_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return &longest_texts;
}

EXPORT const actomaton_manifest *fixture_long_version_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return &long_version;
}

EXPORT const actomaton_manifest *fixture_long_summary_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return &long_summary;
}

static const actomaton_action bad_name_actions[] = {
    {"go home", NULL, 0, (actomaton_function)request_unknown},
};
static const actomaton_manifest bad_name = PROBE_MANIFEST(bad_name_actions, 1);

EXPORT const actomaton_manifest *fixture_bad_name_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return &bad_name;
}

static const actomaton_manifest missing_function = {
    .abi_version = ACTOMATON_PLUGIN_ABI_VERSION, .name = "broken", .version = "0.1",
    .actions = probe_actions, .action_count = 1,
    .create = create, .destroy = destroy, .snapshot = snapshot, .restore = NULL, .describe = describe,
};

EXPORT const actomaton_manifest *fixture_missing_function_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return &missing_function;
}

// A constructor that ends the process when asked to (ACTOMATON_FIXTURE_EXIT_IN_CONSTRUCTOR=N
// calls exit(N) while the library is mapped): the host must say so, and never exit 0.
__attribute__((constructor)) static void exit_in_constructor_when_asked(void) {
    const char *code = getenv("ACTOMATON_FIXTURE_EXIT_IN_CONSTRUCTOR");
    if (code != NULL) exit(atoi(code));
}

// ---- ABI version 1 and the diagram of version 2.

// A plugin built against version 1 of the contract: its manifest ends after `describe`. What
// follows it in memory is poison where version 2 has `diagram` and `active`: a host that read
// past a version-1 manifest would take it for a diagram and an active function.
typedef struct manifest_v1 {
    uint32_t abi_version;
    const char *name;
    const char *version;
    const char *summary;
    const actomaton_action *actions;
    uint32_t action_count;
    void *(*create)(const actomaton_host *host);
    void (*destroy)(void *state);
    size_t (*snapshot)(const void *state, uint8_t *buffer, size_t capacity);
    actomaton_status (*restore)(void *state, const uint8_t *bytes, size_t length);
    size_t (*describe)(const void *state, char *buffer, size_t capacity);
} manifest_v1;
_Static_assert(sizeof(manifest_v1) == offsetof(actomaton_manifest, diagram), "version 1 ends where the diagram starts");

static const struct {
    manifest_v1 manifest;
    const char *poison_diagram;
    void *poison_active;
} version_1 = {
    .manifest = {.abi_version = 1, .name = "probe", .version = "0.1", .summary = "A plugin of ABI version 1",
                 .actions = probe_actions, .action_count = 8, .create = create, .destroy = destroy,
                 .snapshot = snapshot, .restore = restore, .describe = describe},
    .poison_diagram = (const char *)1,
    .poison_active = (void *)1,
};

EXPORT const actomaton_manifest *fixture_version_1_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return (const actomaton_manifest *)&version_1;
}

// `active` of the diagram probe: what it writes depends on the state's value (`set`), one
// case per limit, at it and one past it. `active_text` has room for 2 * ACTOMATON_MAX_ACTIVE_SIZE.
static size_t active_of(int32_t value, char *active_text) {
    const size_t text_size = 2 * ACTOMATON_MAX_ACTIVE_SIZE;
    size_t n = 0;
    switch (value) {
    case 0: n = (size_t)snprintf(active_text, text_size, "a"); break;
    case 1: case 2: { // ACTOMATON_MAX_ACTIVE_NODES names, then one more
        int count = (int)ACTOMATON_MAX_ACTIVE_NODES + (value == 2);
        for (int i = 0; i < count; i++) n += (size_t)sprintf(active_text + n, i ? "\nn%d" : "n%d", i);
        break;
    }
    case 3: case 4: { // a name of ACTOMATON_MAX_NODE_NAME_LENGTH bytes, then one more
        n = ACTOMATON_MAX_NODE_NAME_LENGTH + (value == 4);
        memset(active_text, 'x', n);
        break;
    }
    case 5: n = (size_t)snprintf(active_text, text_size, "a\n\nb"); break;
    case 6: n = (size_t)snprintf(active_text, text_size, "a\tb"); break;
    case 7: n = (size_t)snprintf(active_text, text_size, "a\nb\xff"); break;
    case 8: n = ACTOMATON_MAX_ACTIVE_SIZE + 1; memset(active_text, 'a', n); break;
    case 9: n = 0; break;
    case 10: n = (size_t)snprintf(active_text, text_size, "a\n"); break;
    case 11: { // ACTOMATON_MAX_ACTIVE_SIZE bytes: 64 names of 256 bytes, each with its '\n'
        for (int i = 0; i < (int)ACTOMATON_MAX_ACTIVE_NODES; i++) {
            memset(active_text + n, 'a' + i % 26, ACTOMATON_MAX_NODE_NAME_LENGTH);
            active_text[n] = (char)('A' + i % 26);
            active_text[n + 1] = (char)('0' + i / 26);
            n += ACTOMATON_MAX_NODE_NAME_LENGTH;
            active_text[n++] = '\n';
        }
        break;
    }
    default: n = (size_t)snprintf(active_text, text_size, "value %d", value); break;
    }
    return n;
}

static size_t active(const void *state, char *buffer, size_t capacity) {
    char active_text[2 * ACTOMATON_MAX_ACTIVE_SIZE];
    size_t n = active_of(((const probe_state *)state)->value, active_text);
    if (n <= capacity) memcpy(buffer, active_text, n);
    return n;
}

#define DIAGRAM_MANIFEST(diagram_, active_)                                                 \
    {.abi_version = 2, .name = "probe", .version = "0.1", .summary = "A plugin with a diagram", \
     .actions = probe_actions, .action_count = 8, .create = create, .destroy = destroy,       \
     .snapshot = snapshot, .restore = restore, .describe = describe, .diagram = diagram_,     \
     .active = active_}

static const actomaton_manifest diagram_probe =
    DIAGRAM_MANIFEST("digraph probe {\n    a -> b [label=\"set\"];\n    \"a b\";\n}\n", active);
static const actomaton_manifest diagram_without_active = DIAGRAM_MANIFEST("digraph { a }", NULL);

EXPORT const actomaton_manifest *fixture_diagram_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return &diagram_probe;
}

EXPORT const actomaton_manifest *fixture_diagram_without_active_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return &diagram_without_active;
}

// The diagram's size, ACTOMATON_MAX_DIAGRAM_SIZE bytes and one more (a buffer and a manifest
// each: tests load them at the same time), and bytes that are not UTF-8.
static char diagram_at_limit[ACTOMATON_MAX_DIAGRAM_SIZE + 1];
static char diagram_too_long[ACTOMATON_MAX_DIAGRAM_SIZE + 2];
static actomaton_manifest diagram_at_limit_manifest = DIAGRAM_MANIFEST(diagram_at_limit, active);
static actomaton_manifest diagram_too_long_manifest = DIAGRAM_MANIFEST(diagram_too_long, active);

static void fill_diagram(char *text, size_t size) {
    memset(text, ' ', size);
    memcpy(text, "digraph { a }", 13);
    text[size] = 0;
}

EXPORT const actomaton_manifest *fixture_diagram_at_limit_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    fill_diagram(diagram_at_limit, ACTOMATON_MAX_DIAGRAM_SIZE);
    return &diagram_at_limit_manifest;
}

EXPORT const actomaton_manifest *fixture_diagram_too_long_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    fill_diagram(diagram_too_long, ACTOMATON_MAX_DIAGRAM_SIZE + 1);
    return &diagram_too_long_manifest;
}

static const actomaton_manifest diagram_not_utf8 = DIAGRAM_MANIFEST("digraph { \"\xc3\" }", active);

EXPORT const actomaton_manifest *fixture_diagram_not_utf8_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return &diagram_not_utf8;
}

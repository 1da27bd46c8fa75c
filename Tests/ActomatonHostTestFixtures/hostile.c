// A plugin that misbehaves on command, for the host's hardening tests: bad sizes, writes past
// buffers, NULLs, control characters, effect fan-out, endless next-action chains, calls after
// destroy and from other threads. Entry symbol: fixture_hostile_entry.
#include "fixtures.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

enum size_mode {
    SIZE_OK = 0,          // a well-behaved size
    SIZE_MAX_VALUE = 1,   // returns SIZE_MAX ("negative" in a signed view)
    SIZE_ONE_MORE = 2,    // always asks for one byte more than it was given, for ever
    SIZE_WRITE_PAST = 3,  // claims to fit, but writes 8 bytes past the buffer
    SIZE_OVER_LIMIT = 4,  // asks for 17 MiB / 65 MiB, just past the contract's limits
    SIZE_CONTROLS = 5,    // describe: control characters and an escape sequence
    SIZE_BAD_UTF8 = 6,    // describe: bytes that are not UTF-8
    SIZE_AT_LIMIT = 7,    // asks for exactly the contract's limit
};

typedef struct hostile_state {
    const actomaton_host *host;
    int32_t value;
    uint32_t describe_mode;
    uint32_t snapshot_mode;
} hostile_state;

static const actomaton_host *kept_host;
static pthread_t thread;
static atomic_int thread_accepted;

static void *create(const actomaton_host *host) {
    hostile_state *s = calloc(1, sizeof *s);
    if (s) s->host = host;
    return s;
}

static void destroy(void *state) { free(state); }

static size_t sized(uint32_t mode, uint8_t *buffer, size_t capacity, const char *text, size_t limit) {
    size_t length = strlen(text);
    switch (mode) {
    case SIZE_MAX_VALUE: return SIZE_MAX;
    case SIZE_ONE_MORE: return capacity + 1;
    case SIZE_WRITE_PAST:
        if (capacity >= 8) memset(buffer, 'x', capacity + 8);
        return capacity >= 8 ? capacity : 8;
    case SIZE_OVER_LIMIT: return limit + 1;
    case SIZE_AT_LIMIT:
        if (capacity >= limit) { memset(buffer, 'a', limit); }
        return limit;
    default:
        if (length <= capacity) memcpy(buffer, text, length);
        return length;
    }
}

// The ways a plugin can fail outright, on command: in an action, in `snapshot`, in
// `create` and in the entry point.
enum misbehaviour { MISBEHAVE_SEGV = 1, MISBEHAVE_ABORT, MISBEHAVE_OVERFLOW, MISBEHAVE_EXIT_ZERO, MISBEHAVE_EXIT_42, MISBEHAVE_SPIN };

static int recurse(volatile char *previous) {
    volatile char frame[1024];
    frame[0] = previous ? previous[0] + 1 : 0;
    return recurse(frame) + frame[1];
}

static volatile int spin_counter;

static void misbehave(int kind) {
    switch (kind) {
    case MISBEHAVE_SEGV: raise(SIGSEGV); break;
    case MISBEHAVE_ABORT: abort();
    case MISBEHAVE_OVERFLOW: (void)recurse(NULL); break;
    case MISBEHAVE_EXIT_ZERO: exit(0);
    case MISBEHAVE_EXIT_42: exit(42);
    case MISBEHAVE_SPIN: for (;;) spin_counter += 1;
    }
}

// snapshot_mode 8 to 13: `snapshot` fails as misbehaviour 1 to 6.
#define SNAPSHOT_MISBEHAVES 8

static size_t snapshot(const void *state, uint8_t *buffer, size_t capacity) {
    const hostile_state *s = state;
    if (s->snapshot_mode >= SNAPSHOT_MISBEHAVES) misbehave((int)(s->snapshot_mode - SNAPSHOT_MISBEHAVES + 1));
    uint8_t bytes[4];
    memcpy(bytes, &s->value, 4);
    if (s->snapshot_mode == SIZE_OK) {
        if (capacity >= 4) memcpy(buffer, bytes, 4);
        return 4;
    }
    return sized(s->snapshot_mode, buffer, capacity, "", ACTOMATON_MAX_SNAPSHOT_SIZE);
}

static actomaton_status restore(void *state, const uint8_t *bytes, size_t length) {
    hostile_state *s = state;
    if (length != 4) {
        s->host->fail("a hostile snapshot is 4 bytes");
        return ACTOMATON_ERROR;
    }
    memcpy(&s->value, bytes, 4);
    return ACTOMATON_OK;
}

// describe_mode 8 to 13: `describe` fails as misbehaviour 1 to 6.
#define DESCRIBE_MISBEHAVES 8

static size_t describe(const void *state, char *buffer, size_t capacity) {
    const hostile_state *s = state;
    if (s->describe_mode >= DESCRIBE_MISBEHAVES) misbehave((int)(s->describe_mode - DESCRIBE_MISBEHAVES + 1));
    char text[128];
    switch (s->describe_mode) {
    case SIZE_CONTROLS: snprintf(text, sizeof text, "{\"value\":%d}\nerror: forged line\x1b[2J\x1b]0;title\a", s->value); break;
    case SIZE_BAD_UTF8: snprintf(text, sizeof text, "{\"value\":%d,\"bytes\":\"\xff\xfe\xc3\"}", s->value); break;
    default: snprintf(text, sizeof text, "{\"value\":%d}", s->value); break;
    }
    return sized(s->describe_mode, (uint8_t *)buffer, capacity, text, ACTOMATON_MAX_DESCRIPTION_SIZE);
}

static actomaton_status set(void *state, int32_t value) {
    ((hostile_state *)state)->value = value;
    return ACTOMATON_OK;
}

static actomaton_status describe_mode(void *state, uint32_t mode) {
    ((hostile_state *)state)->describe_mode = mode;
    return ACTOMATON_OK;
}

static actomaton_status snapshot_mode(void *state, uint32_t mode) {
    ((hostile_state *)state)->snapshot_mode = mode;
    return ACTOMATON_OK;
}

// Refuses with a message that tries to forge a line and drive the terminal.
static actomaton_status fail_with_controls(void *state) {
    hostile_state *s = state;
    s->host->fail("no\nerror: forged line\x1b[31m red \xff");
    return ACTOMATON_ERROR;
}

static actomaton_status log_with_controls(void *state) {
    hostile_state *s = state;
    s->host->log("line one\r\nerror: forged\x1b[0m");
    return ACTOMATON_OK;
}

// Refuses with a 10,000-byte message.
static actomaton_status fail_long(void *state) {
    hostile_state *s = state;
    static char message[10001];
    memset(message, 'm', 10000);
    message[10000] = 0;
    s->host->fail(message);
    return ACTOMATON_ERROR;
}

// Every NULL a plugin could hand over; returns how many were refused as the value.
static actomaton_status null_requests(void *state) {
    hostile_state *s = state;
    int refused = 0;
    refused += s->host->next_action(NULL) == ACTOMATON_INVALID_REQUEST;
    actomaton_call no_name = {.action = NULL};
    refused += s->host->next_action(&no_name) == ACTOMATON_INVALID_REQUEST;
    actomaton_call no_args = {.action = "set", .args = NULL, .arg_count = 1};
    refused += s->host->next_action(&no_args) == ACTOMATON_INVALID_REQUEST;
    actomaton_value null_string[1] = {{.type = ACTOMATON_TYPE_STRING, .as.s = NULL}};
    actomaton_call bad_string = {.action = "set", .args = null_string, .arg_count = 1};
    refused += s->host->next_action(&bad_string) == ACTOMATON_INVALID_REQUEST;
    refused += s->host->cancel(NULL) == ACTOMATON_INVALID_REQUEST;
    refused += s->host->delayed_action(NULL, 1, NULL) == ACTOMATON_INVALID_REQUEST;
    s->host->fail(NULL);
    s->host->log(NULL);
    s->value = refused;
    return ACTOMATON_OK;
}

// Changes the state, then makes an invalid request and returns OK anyway.
static actomaton_status change_then_invalid(void *state, int32_t value) {
    hostile_state *s = state;
    s->value = value;
    actomaton_call call = {.action = "no_such_action"};
    (void)s->host->next_action(&call);
    return ACTOMATON_OK;
}

// Feeds itself back for ever.
static actomaton_status loop(void *state) {
    hostile_state *s = state;
    s->value += 1;
    actomaton_call call = {.action = "loop"};
    return s->host->next_action(&call);
}

// Feeds back 1,500 `bump`s: a shallow chain with many steps.
static actomaton_status burst(void *state) {
    hostile_state *s = state;
    actomaton_call call = {.action = "bump"};
    for (int i = 0; i < 1500; i++) {
        if (s->host->next_action(&call) != ACTOMATON_OK) return ACTOMATON_ERROR;
    }
    return ACTOMATON_OK;
}

// Feeds back 500 more of itself: a chain that fans out, cut off by the host at 64 levels with
// some 30,000 next actions still queued (past the async layer's own limit of 10,000 steps).
static actomaton_status fan(void *state) {
    hostile_state *s = state;
    s->value += 1;
    actomaton_call call = {.action = "fan"};
    for (int i = 0; i < 500; i++) {
        if (s->host->next_action(&call) != ACTOMATON_OK) return ACTOMATON_ERROR;
    }
    return ACTOMATON_OK;
}

static actomaton_status bump(void *state) {
    ((hostile_state *)state)->value += 1;
    return ACTOMATON_OK;
}

// Refuses with an empty message.
static actomaton_status fail_empty(void *state) {
    hostile_state *s = state;
    s->host->fail("");
    return ACTOMATON_ERROR;
}

// Changes the state, then returns 7, a status the contract does not have.
static actomaton_status status_seven(void *state) {
    ((hostile_state *)state)->value += 100;
    return 7;
}

// Each run asks for two more runs of itself after 1 ms: effects fan out without end.
static actomaton_status spawn(void *state) {
    hostile_state *s = state;
    s->value += 1;
    actomaton_call call = {.action = "spawn"};
    if (s->host->delayed_action(&call, 1000000u, NULL) != ACTOMATON_OK) return ACTOMATON_ERROR;
    return s->host->delayed_action(&call, 1000000u, NULL);
}

// Keeps the host table past the state's life.
static actomaton_status keep_host(void *state) {
    kept_host = ((hostile_state *)state)->host;
    return ACTOMATON_OK;
}

// Calls every function of the kept table (another state's, maybe destroyed); the value is the
// number of calls refused with ACTOMATON_INVALID_REQUEST.
static actomaton_status call_kept_host(void *state) {
    hostile_state *s = state;
    if (!kept_host) return ACTOMATON_ERROR;
    actomaton_call call = {.action = "set"};
    int refused = 0;
    refused += kept_host->next_action(&call) == ACTOMATON_INVALID_REQUEST;
    refused += kept_host->delayed_action(&call, 1, NULL) == ACTOMATON_INVALID_REQUEST;
    refused += kept_host->repeating_action(&call, 1, NULL) == ACTOMATON_INVALID_REQUEST;
    refused += kept_host->cancel("x") == ACTOMATON_INVALID_REQUEST;
    kept_host->fail("after destroy");
    kept_host->log("after destroy");
    s->value = refused;
    return ACTOMATON_OK;
}

static void *hammer(void *unused) {
    (void)unused;
    actomaton_value args[1] = {{.type = ACTOMATON_TYPE_INT32, .as.i = 1}};
    actomaton_call call = {.action = "set", .args = args, .arg_count = 1};
    for (int i = 0; i < 20000; i++) {
        if (kept_host->next_action(&call) == ACTOMATON_OK) atomic_fetch_add(&thread_accepted, 1);
        if (kept_host->cancel("x") == ACTOMATON_OK) atomic_fetch_add(&thread_accepted, 1);
        kept_host->fail("from a thread");
    }
    return NULL;
}

// Starts a thread that calls this state's host table 20,000 times while the host goes on.
static actomaton_status start_thread(void *state) {
    kept_host = ((hostile_state *)state)->host;
    atomic_store(&thread_accepted, 0);
    return pthread_create(&thread, NULL, hammer, NULL) == 0 ? ACTOMATON_OK : ACTOMATON_ERROR;
}

// Waits for the thread; the value is how many of its requests the host accepted (must be 0).
static actomaton_status join_thread(void *state) {
    pthread_join(thread, NULL);
    ((hostile_state *)state)->value = atomic_load(&thread_accepted);
    return ACTOMATON_OK;
}

static actomaton_status crash(void *state) {
    (void)state;
    raise(SIGSEGV);
    return ACTOMATON_OK;
}

static actomaton_status do_abort(void *state) {
    (void)state;
    abort();
}

static actomaton_status overflow(void *state) {
    (void)state;
    return recurse(NULL);
}

static actomaton_status exit_zero(void *state) {
    (void)state;
    exit(0);
}

static actomaton_status exit_42(void *state) {
    (void)state;
    exit(42);
}

static actomaton_status spin(void *state) {
    volatile int *value = &((hostile_state *)state)->value;
    for (;;) *value += 1;
    return ACTOMATON_OK;
}

// In a worker: puts garbage where the host reads the worker's frames (the ring of replies in
// the memory shared with the host, descriptor 5; layout in CProcessControl's shared_ring.h),
// tries to shrink that memory under the host (which would make the host's reads fault), and
// writes garbage to every other descriptor from 3 up (the socket among them).
static actomaton_status corrupt(void *state) {
    (void)state;
    static const char garbage[] = "\xff\xff\xff\x7f garbage that is not a frame";
    enum { headers = 4096, capacity = 256 * 1024 };
    unsigned char *region = mmap(NULL, headers + 2 * capacity, PROT_READ | PROT_WRITE, MAP_SHARED, 5, 0);
    if (region != MAP_FAILED) {
        _Atomic uint64_t *head = (_Atomic uint64_t *)(region + 256);
        uint64_t at = atomic_load(head);
        for (size_t i = 0; i < sizeof garbage; i++) region[headers + capacity + (at + i) % capacity] = (unsigned char)garbage[i];
        atomic_store(head, at + sizeof garbage);
        munmap(region, headers + 2 * capacity);
    }
    (void)!ftruncate(5, 0);
    for (int fd = 3; fd < 16; fd++) {
        if (fd != 5) (void)!write(fd, garbage, sizeof garbage);
    }
    return ACTOMATON_OK;
}

// The threads below act when the test sends the worker SIGUSR1, after the action was
// answered: an event, not a pause. The handler wakes them through a pipe.
static int wake_pipe[2] = {-1, -1};

static void on_wake(int signal_number) {
    (void)signal_number;
    char byte = 1;
    (void)!write(wake_pipe[1], &byte, 1);
}

static int arm_wake(void) {
    if (wake_pipe[0] < 0 && pipe(wake_pipe) != 0) return -1;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_wake;
    sigemptyset(&action.sa_mask);
    return sigaction(SIGUSR1, &action, NULL);
}

static void pause_a_little(void) {
    char byte;
    while (read(wake_pipe[0], &byte, 1) < 0) {}
}

static void *log_later_thread(void *host) {
    pause_a_little();
    ((const actomaton_host *)host)->log("from a thread, after the action");
    return NULL;
}

// Starts a thread that logs a line on SIGUSR1, sent once the action has been answered.
static actomaton_status log_later(void *state) {
    if (arm_wake() != 0) return ACTOMATON_ERROR;
    pthread_t later;
    if (pthread_create(&later, NULL, log_later_thread, (void *)((hostile_state *)state)->host) != 0) return ACTOMATON_ERROR;
    pthread_detach(later);
    return ACTOMATON_OK;
}

static void *corrupt_later_thread(void *unused) {
    pause_a_little();
    corrupt(unused);
    return NULL;
}

// Starts a thread that writes garbage to the worker's socket on SIGUSR1.
static actomaton_status corrupt_later(void *state) {
    (void)state;
    if (arm_wake() != 0) return ACTOMATON_ERROR;
    pthread_t later;
    if (pthread_create(&later, NULL, corrupt_later_thread, NULL) != 0) return ACTOMATON_ERROR;
    pthread_detach(later);
    return ACTOMATON_OK;
}

// Counts up, and re-arms itself with the same effect ID until the value is 3: a timer that
// schedules its successor from its own action must keep going.
static actomaton_status rearm(void *state) {
    hostile_state *s = state;
    s->value += 1;
    if (s->value >= 3) return ACTOMATON_OK;
    static const actomaton_call again = {"rearm", NULL, 0};
    actomaton_effect_options options = {0};
    options.id = "cycle";
    return s->host->delayed_action(&again, 1000000000ull, &options);
}

// Logs 4,096 bytes, 100 of them not UTF-8 and the rest 3-byte characters (mode 0), or
// 5,000 bytes of 'a', past the message limit (mode 1).
static actomaton_status log_long(void *state, uint32_t mode) {
    hostile_state *s = state;
    static char line[5001];
    if (mode == 0) {
        memset(line, 0xFF, 100);
        size_t at = 100;
        while (at + 3 <= 4096) { memcpy(line + at, "\xE2\x82\xAC", 3); at += 3; }
        while (at < 4096) line[at++] = 'e';
        line[4096] = 0;
    } else {
        memset(line, 'a', 5000);
        line[5000] = 0;
    }
    s->host->log(line);
    return ACTOMATON_OK;
}

// Asks `count` times for `action` as a next action, with a string of `size` bytes of `fill`.
static actomaton_status next_with_text(hostile_state *s, const char *action, uint32_t count, uint32_t size, char fill) {
    char *text = malloc((size_t)size + 1);
    if (!text) return ACTOMATON_ERROR;
    memset(text, fill, size);
    text[size] = 0;
    actomaton_value argument = {.type = ACTOMATON_TYPE_STRING, .as.s = text};
    actomaton_call call = {.action = action, .args = &argument, .arg_count = 1};
    actomaton_status status = ACTOMATON_OK;
    for (uint32_t i = 0; i < count && status == ACTOMATON_OK; i++) status = s->host->next_action(&call);
    free(text);
    return status;
}

// Asks for `keep_text` after an hour, `count` times, each with a string of `size` bytes: what a
// machine's pending timers carry, against the host's limit.
static actomaton_status hoard(void *state, uint32_t count, uint32_t size) {
    hostile_state *s = state;
    char *text = malloc((size_t)size + 1);
    if (!text) return ACTOMATON_ERROR;
    memset(text, 'h', size);
    text[size] = 0;
    actomaton_value argument = {.type = ACTOMATON_TYPE_STRING, .as.s = text};
    actomaton_call call = {.action = "keep_text", .args = &argument, .arg_count = 1};
    actomaton_status status = ACTOMATON_OK;
    for (uint32_t i = 0; i < count && status == ACTOMATON_OK; i++) status = s->host->delayed_action(&call, 3600000000000u, NULL);
    free(text);
    return status;
}

// Asks for `count` next actions `keep_text`, each with a string of `size` bytes: the bytes an
// action's requests carry, against the host's limit.
static actomaton_status flood(void *state, uint32_t count, uint32_t size) {
    return next_with_text(state, "keep_text", count, size, 'f');
}

// Cancels an effect ID nothing runs under, `count` times.
static actomaton_status cancel_many(void *state, uint32_t count) {
    hostile_state *s = state;
    actomaton_status status = ACTOMATON_OK;
    for (uint32_t i = 0; i < count && status == ACTOMATON_OK; i++) status = s->host->cancel("nothing");
    return status;
}

// Refuses, whatever its text: `relay_refused` asks for it as its next action.
static actomaton_status refuse_text(void *state, const char *text) {
    hostile_state *s = state;
    (void)text;
    s->host->fail("no");
    return ACTOMATON_ERROR;
}

// Asks for `refuse_text` with a text of `size` bytes as its next action.
static actomaton_status relay_refused(void *state, uint32_t size) {
    return next_with_text(state, "refuse_text", 1, size, 'r');
}

// Does nothing with its text: the action `relay` asks for it as its next action.
static actomaton_status keep_text(void *state, const char *text) {
    (void)state;
    (void)text;
    return ACTOMATON_OK;
}

// Writes to standard output, as a careless debug print does: a line that reads as an error,
// one that reads as a transition, and a part of a line without its end.
static actomaton_status print_to_output(void *state) {
    (void)state;
    static const char forged[] = "error: forged line from the plugin\nhostile: bump => {\"value\":999}\npartial-";
    ssize_t written = write(1, forged, sizeof forged - 1);
    (void)written;
    return ACTOMATON_OK;
}

// Closes standard input, output and error, as a plugin that closes what it thinks it opened.
static actomaton_status close_standard(void *state) {
    (void)state;
    close(0);
    close(1);
    close(2);
    return ACTOMATON_OK;
}

// Asks for `keep_text` with `text` as its next action: a request as long as its text.
static actomaton_status relay(void *state, const char *text) {
    hostile_state *s = state;
    actomaton_value argument = {.type = ACTOMATON_TYPE_STRING, .as.s = text};
    actomaton_call call = {.action = "keep_text", .args = &argument, .arg_count = 1};
    return s->host->next_action(&call);
}

static const actomaton_parameter value_parameters[] = {{"value", ACTOMATON_TYPE_INT32}};
static const actomaton_parameter text_parameters[] = {{"text", ACTOMATON_TYPE_STRING}};
static const actomaton_parameter flood_parameters[] = {{"count", ACTOMATON_TYPE_UINT32}, {"size", ACTOMATON_TYPE_UINT32}};
static const actomaton_parameter count_parameters[] = {{"count", ACTOMATON_TYPE_UINT32}};
static const actomaton_parameter mode_parameters[] = {{"mode", ACTOMATON_TYPE_UINT32}};

static const actomaton_action hostile_actions[] = {
    {"set", value_parameters, 1, (actomaton_function)set},
    {"describe_mode", mode_parameters, 1, (actomaton_function)describe_mode},
    {"snapshot_mode", mode_parameters, 1, (actomaton_function)snapshot_mode},
    {"fail_with_controls", NULL, 0, (actomaton_function)fail_with_controls},
    {"log_with_controls", NULL, 0, (actomaton_function)log_with_controls},
    {"keep_text", text_parameters, 1, (actomaton_function)keep_text},
    {"log_long", mode_parameters, 1, (actomaton_function)log_long},
    {"flood", flood_parameters, 2, (actomaton_function)flood},
    {"hoard", flood_parameters, 2, (actomaton_function)hoard},
    {"refuse_text", text_parameters, 1, (actomaton_function)refuse_text},
    {"relay_refused", count_parameters, 1, (actomaton_function)relay_refused},
    {"cancel_many", count_parameters, 1, (actomaton_function)cancel_many},
    {"relay", text_parameters, 1, (actomaton_function)relay},
    {"fail_long", NULL, 0, (actomaton_function)fail_long},
    {"null_requests", NULL, 0, (actomaton_function)null_requests},
    {"change_then_invalid", value_parameters, 1, (actomaton_function)change_then_invalid},
    {"loop", NULL, 0, (actomaton_function)loop},
    {"burst", NULL, 0, (actomaton_function)burst},
    {"bump", NULL, 0, (actomaton_function)bump},
    {"fan", NULL, 0, (actomaton_function)fan},
    {"spawn", NULL, 0, (actomaton_function)spawn},
    {"keep_host", NULL, 0, (actomaton_function)keep_host},
    {"call_kept_host", NULL, 0, (actomaton_function)call_kept_host},
    {"start_thread", NULL, 0, (actomaton_function)start_thread},
    {"join_thread", NULL, 0, (actomaton_function)join_thread},
    {"crash", NULL, 0, (actomaton_function)crash},
    {"abort", NULL, 0, (actomaton_function)do_abort},
    {"overflow", NULL, 0, (actomaton_function)overflow},
    {"exit_zero", NULL, 0, (actomaton_function)exit_zero},
    {"exit_42", NULL, 0, (actomaton_function)exit_42},
    {"spin", NULL, 0, (actomaton_function)spin},
    {"corrupt", NULL, 0, (actomaton_function)corrupt},
    {"rearm", NULL, 0, (actomaton_function)rearm},
    {"log_later", NULL, 0, (actomaton_function)log_later},
    {"corrupt_later", NULL, 0, (actomaton_function)corrupt_later},
    {"print_to_output", NULL, 0, (actomaton_function)print_to_output},
    {"close_standard", NULL, 0, (actomaton_function)close_standard},
    {"status_seven", NULL, 0, (actomaton_function)status_seven},
    {"fail_empty", NULL, 0, (actomaton_function)fail_empty},
};

static const actomaton_manifest hostile = {
    .abi_version = ACTOMATON_PLUGIN_ABI_VERSION, .name = "hostile", .version = "0.1",
    .summary = "Misbehaves on command", .actions = hostile_actions,
    .action_count = sizeof hostile_actions / sizeof hostile_actions[0],
    .create = create, .destroy = destroy, .snapshot = snapshot, .restore = restore, .describe = describe,
};

EXPORT const actomaton_manifest *fixture_hostile_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return &hostile;
}

// Entry points that fail in the entry point itself, before the host sees a manifest
// (`fixture_<how>_in_entry_entry`), or in `create` (`fixture_<how>_in_create_entry`), for
// each misbehaviour: crash (SIGSEGV), abort, overflow, exit_zero, exit_42, spin.
#define FAILING_ENTRIES(how, kind)                                                                  \
    EXPORT const actomaton_manifest *fixture_##how##_in_entry_entry(uint32_t host_abi_version) {   \
        (void)host_abi_version;                                                                    \
        misbehave(kind);                                                                           \
        return &hostile;                                                                           \
    }                                                                                              \
    static void *how##_create(const actomaton_host *host) {                                        \
        (void)host;                                                                                \
        misbehave(kind);                                                                           \
        return NULL;                                                                               \
    }                                                                                              \
    static const actomaton_manifest how##_in_create = {                                            \
        .abi_version = ACTOMATON_PLUGIN_ABI_VERSION, .name = "hostile", .version = "0.2",          \
        .summary = "Fails in create", .actions = hostile_actions,                                  \
        .action_count = sizeof hostile_actions / sizeof hostile_actions[0],                        \
        .create = how##_create, .destroy = destroy, .snapshot = snapshot, .restore = restore,      \
        .describe = describe,                                                                      \
    };                                                                                             \
    EXPORT const actomaton_manifest *fixture_##how##_in_create_entry(uint32_t host_abi_version) {  \
        (void)host_abi_version;                                                                    \
        return &how##_in_create;                                                                   \
    }

FAILING_ENTRIES(crash, MISBEHAVE_SEGV)
FAILING_ENTRIES(abort, MISBEHAVE_ABORT)
FAILING_ENTRIES(overflow, MISBEHAVE_OVERFLOW)
FAILING_ENTRIES(exit_zero, MISBEHAVE_EXIT_ZERO)
FAILING_ENTRIES(exit_42, MISBEHAVE_EXIT_42)
FAILING_ENTRIES(spin, MISBEHAVE_SPIN)

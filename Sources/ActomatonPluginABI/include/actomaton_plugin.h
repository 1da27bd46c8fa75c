/*
 * actomaton_plugin.h — the contract between the Actomaton plugin host and a reducer plugin.
 *
 * A plugin is a shared library (.so) that exports one C symbol, `actomaton_plugin_entry`.
 * Any language that can export a C function and lay out C structs can write one: the
 * examples in Plugins/ are written in Swift (with ActomatonPluginKit) and in plain C.
 *
 * How the host uses a plugin, in order:
 *
 *   1. dlopen() the library and look up ACTOMATON_PLUGIN_ENTRY_SYMBOL.
 *   2. Call it with the ABI version the host speaks. The plugin returns its manifest.
 *   3. Read `abi_version`, the manifest's first field, before anything else. The host accepts
 *      every version from ACTOMATON_PLUGIN_MIN_ABI_VERSION to ACTOMATON_PLUGIN_ABI_VERSION
 *      (1 and 2); for any other it stops there and reads nothing more. It then reads only the
 *      fields that version has: nothing past `describe` of a version-1 manifest, whose
 *      struct ends there.
 *   4. Validate the rest of the manifest: names, the action vocabulary (each action's name and
 *      typed parameters), that every required function pointer is present, and (version 2)
 *      the diagram. A manifest with an unknown parameter type or a duplicate action name is
 *      refused.
 *   5. For each action, prepare a libffi call interface from its parameter types, once. Every
 *      later call to that action goes through it: actions are called with their real C types,
 *      not through one untyped function.
 *   6. For each machine it runs, call `create` with a host function table bound to that
 *      machine (the function pointers are libffi closures, so two machines of the same
 *      plugin get different pointers and the plugin needs no global state).
 *   7. Call actions, `describe` (and `active`, right after it, when the plugin has one),
 *      `snapshot` and `restore` on that state; finally `destroy`.
 *
 * Versions: the contract grows only at the end of its structs, and each addition says the
 * version it appeared in ("since ABI version 2"). A plugin built for an older version keeps
 * loading and working unchanged; the host never reads a field its version does not have.
 *
 *   version 1   the manifest up to `describe`; the host table as it is.
 *   version 2   the manifest's `diagram` (Graphviz DOT) and `active` (the diagram's nodes
 *               active in a state), both optional (NULL).
 *
 * Threads: the host calls into one state from one thread at a time, never concurrently. It
 * may call different states of the same plugin concurrently, so a plugin keeps everything
 * in its state (the manifest itself is read-only).
 *
 * Ownership, in one rule: whoever allocates frees. Every pointer the host passes in (strings,
 * argument arrays, snapshot bytes, the host table) is borrowed for the duration of the call
 * only, except the host table, which stays valid until `destroy` returns. Every pointer the
 * plugin passes to the host (the manifest and everything it points to, strings and values in
 * effect requests) is borrowed: the host copies what it keeps before the call returns, and
 * the manifest must stay valid and unchanged for as long as the library is loaded.
 */
#ifndef ACTOMATON_PLUGIN_H
#define ACTOMATON_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this contract. Any change to a struct layout, a function signature or the
 * meaning of a value bumps it. A host accepts a plugin built for any version from
 * ACTOMATON_PLUGIN_MIN_ABI_VERSION to its own, and refuses any other; a plugin sets its
 * manifest's `abi_version` to the version it was built against. */
#define ACTOMATON_PLUGIN_ABI_VERSION 2u

/* The oldest version a host of this header accepts (since ABI version 2). */
#define ACTOMATON_PLUGIN_MIN_ABI_VERSION 1u

/* The one symbol a plugin exports, of type actomaton_plugin_entry_fn. */
#define ACTOMATON_PLUGIN_ENTRY_SYMBOL "actomaton_plugin_entry"

/* Limits the host enforces when it validates a manifest. */
#define ACTOMATON_MAX_ACTIONS 256u        /* actions in one manifest */
#define ACTOMATON_MAX_PARAMETERS 16u      /* parameters of one action */
#define ACTOMATON_MAX_NAME_LENGTH 64u     /* bytes in a plugin, action or parameter name */

/* Limits the host enforces on every call, in both directions. A value past one fails that
 * call (the action, the snapshot, the reload) with one line; the host goes on. */
#define ACTOMATON_MAX_STRING_LENGTH 1048576u     /* bytes in a string argument, either way */
#define ACTOMATON_MAX_ID_LENGTH 256u             /* bytes in an effect ID or a queue name */
#define ACTOMATON_MAX_MESSAGE_LENGTH 4096u       /* bytes of a `fail` or `log` message */
#define ACTOMATON_MAX_SNAPSHOT_SIZE 67108864u    /* bytes `snapshot` may ask for (64 MiB) */
#define ACTOMATON_MAX_DESCRIPTION_SIZE 16777216u /* bytes `describe` may ask for (16 MiB) */

/* ---------------------------------------------------------------------------------------
 * Status codes, returned by actions, by `restore` and by host functions.
 * ------------------------------------------------------------------------------------- */
typedef int32_t actomaton_status;

/* Success. */
#define ACTOMATON_OK 0
/* An action refused to run (or `restore` refused the bytes): the plugin must leave its state
 * exactly as it was, and should call `host->fail` first to say why. */
#define ACTOMATON_ERROR 1
/* A host function refused a request: unknown action, wrong arguments, a bad effect option,
 * or a call made outside an action. The host also fails the current action, whatever the
 * action then returns, and discards every effect it requested. */
#define ACTOMATON_INVALID_REQUEST 2

/* ---------------------------------------------------------------------------------------
 * Parameter types. Each names the C type an action's entry point takes for that parameter.
 * ------------------------------------------------------------------------------------- */
typedef uint32_t actomaton_type;

#define ACTOMATON_TYPE_BOOL 1u    /* bool (C99 _Bool) */
#define ACTOMATON_TYPE_INT8 2u    /* int8_t */
#define ACTOMATON_TYPE_INT16 3u   /* int16_t */
#define ACTOMATON_TYPE_INT32 4u   /* int32_t */
#define ACTOMATON_TYPE_INT64 5u   /* int64_t */
#define ACTOMATON_TYPE_UINT8 6u   /* uint8_t */
#define ACTOMATON_TYPE_UINT16 7u  /* uint16_t */
#define ACTOMATON_TYPE_UINT32 8u  /* uint32_t */
#define ACTOMATON_TYPE_UINT64 9u  /* uint64_t */
#define ACTOMATON_TYPE_FLOAT 10u  /* float */
#define ACTOMATON_TYPE_DOUBLE 11u /* double */
#define ACTOMATON_TYPE_STRING 12u /* const char *: UTF-8, NUL-terminated, borrowed for the call */

/* One typed value, as the plugin passes it to the host in an effect request. `type` must be
 * the declared type of the parameter it fills; the value sits in the member for its kind:
 * `i` for INT8..INT64, `u` for UINT8..UINT64, `f` for FLOAT and DOUBLE, `b` for BOOL and `s`
 * for STRING (borrowed; the host copies it). The host checks that integers fit their type. */
typedef struct actomaton_value {
    actomaton_type type;
    union {
        int64_t i;
        uint64_t u;
        double f;
        bool b;
        const char *s;
    } as;
} actomaton_value;

/* An action of the plugin's own vocabulary, with its arguments in declaration order.
 * Everything is borrowed for the duration of the host function call. */
typedef struct actomaton_call {
    const char *action;            /* an action name from the manifest */
    const actomaton_value *args;   /* `arg_count` values; may be NULL when arg_count is 0 */
    uint32_t arg_count;
} actomaton_call;

/* ---------------------------------------------------------------------------------------
 * Effects: how a plugin asks the world to do something. They map onto the async layer's
 * Effect and EffectQueueManager, scoped to the machine the plugin state runs on.
 * ------------------------------------------------------------------------------------- */
typedef uint32_t actomaton_queue_policy;

/* Run the `max_count` newest effects of the queue, cancelling the oldest running ones. */
#define ACTOMATON_QUEUE_RUN_NEWEST 1u
/* Run the `max_count` oldest; a new effect waits until one of them completes. */
#define ACTOMATON_QUEUE_RUN_OLDEST_SUSPEND_NEW 2u
/* Run the `max_count` oldest; a new effect is dropped while they run. */
#define ACTOMATON_QUEUE_RUN_OLDEST_DISCARD_NEW 3u

/* Options of a delayed or repeating action; pass NULL for none. Borrowed for the call. */
typedef struct actomaton_effect_options {
    /* NULL, or an effect ID: starting an effect cancels the running effects with the same ID,
     * and `host->cancel(id)` cancels them on demand. IDs are scoped to one machine. */
    const char *id;
    /* NULL, or the name of a queue: effects with the same queue name share one lane, which follows the policy of the latest effect sent to it. */
    const char *queue;
    /* One of ACTOMATON_QUEUE_*; ignored when `queue` is NULL. */
    actomaton_queue_policy policy;
    /* How many effects of the queue run at once, at least 1; ignored when `queue` is NULL. */
    uint32_t max_count;
} actomaton_effect_options;

/* The host functions a plugin calls. The host creates one table per plugin state and hands
 * it to `create`; it stays valid until `destroy` returns, and its functions stay callable for
 * as long as the library is loaded: after `destroy` they do nothing and return
 * ACTOMATON_INVALID_REQUEST (a plugin thread that outlives its state cannot crash the host). Its function pointers are bound to
 * that state (they are libffi closures), so they take no context argument.
 *
 * Effect requests are accepted only while the host is inside one of this state's action
 * calls, on the calling thread; elsewhere (in `create`, from another thread) they return
 * ACTOMATON_INVALID_REQUEST. `fail` is heard during an action or `restore`. The effects an
 * action requests start, in request order, after it returns ACTOMATON_OK; if it returns
 * anything else, or made an invalid request, they are all discarded. Request effects before
 * changing the state, so that a refused request leaves the state unchanged.
 *
 * Effect IDs and queue names are UTF-8, at most 256 bytes; names in an actomaton_call follow
 * the manifest's rules. */
typedef struct actomaton_host {
    /* The ABI version of the host: ACTOMATON_PLUGIN_ABI_VERSION. */
    uint32_t abi_version;

    /* Feeds `action` back at once, within the same send, after this action completes. */
    actomaton_status (*next_action)(const actomaton_call *action);

    /* Sends `action` after `delay_ns` nanoseconds on the machine's clock. */
    actomaton_status (*delayed_action)(const actomaton_call *action, uint64_t delay_ns,
                                       const actomaton_effect_options *options);

    /* Sends `action` every `interval_ns` nanoseconds (more than 0) on the machine's clock,
     * the first time one interval from now, until cancelled by ID. A repeating action
     * without an ID can only stop when the machine stops. */
    actomaton_status (*repeating_action)(const actomaton_call *action, uint64_t interval_ns,
                                         const actomaton_effect_options *options);

    /* Cancels every running or waiting effect with ID `effect_id` (borrowed). */
    actomaton_status (*cancel)(const char *effect_id);

    /* Says why the current action (or `restore`) fails; the plugin then returns
     * ACTOMATON_ERROR with its state unchanged. `message` (UTF-8, borrowed) is one line
     * written for the user; the first one of a call is kept. */
    void (*fail)(const char *message);

    /* Writes one line (UTF-8, borrowed) to the host's log, prefixed with the plugin name.
     * Callable at any time while the table is valid. */
    void (*log)(const char *message);
} actomaton_host;

/* ---------------------------------------------------------------------------------------
 * The manifest.
 * ------------------------------------------------------------------------------------- */

/* One parameter of an action. */
typedef struct actomaton_parameter {
    const char *name;     /* 1..ACTOMATON_MAX_NAME_LENGTH bytes of [A-Za-z0-9_], not a digit first */
    actomaton_type type;  /* one of ACTOMATON_TYPE_* */
} actomaton_parameter;

/* An untyped function pointer: the real type of an action entry point is given by its
 * parameters. Cast it back only to the signature below. */
typedef void (*actomaton_function)(void);

/* One action of the vocabulary.
 *
 * `entry` points to a function of this exact C signature, where Ti is the C type of
 * parameter i (see ACTOMATON_TYPE_*):
 *
 *     actomaton_status entry(void *state, T1 arg1, ..., Tn argn);
 *
 * It runs one transition on `state`: it updates the state and may call the host table's
 * effect functions, then returns ACTOMATON_OK. To refuse, it calls `host->fail(message)`,
 * leaves the state exactly as it was and returns ACTOMATON_ERROR. String arguments are
 * borrowed for the call. */
typedef struct actomaton_action {
    const char *name;                       /* unique within the manifest; same rules as parameter names */
    const actomaton_parameter *parameters;  /* `parameter_count` entries; may be NULL when 0 */
    uint32_t parameter_count;               /* at most ACTOMATON_MAX_PARAMETERS */
    actomaton_function entry;               /* never NULL */
} actomaton_action;

/* What a plugin is and does. Returned by the entry symbol; it must stay valid and unchanged
 * while the library is loaded (a static const struct is the usual way). */
/* The host maps a plugin library for the rest of the process (RTLD_NODELETE): a Swift
 * plugin registers type metadata that cannot be unregistered, and a reload maps the new
 * version beside the old one, from a private copy of the file. */
typedef struct actomaton_manifest {
    /* ACTOMATON_PLUGIN_ABI_VERSION as the plugin was built. Must be the first field: the host
     * reads it before anything else, reads nothing else when it is not a version it accepts
     * (see ACTOMATON_PLUGIN_MIN_ABI_VERSION), and reads only the fields that version has. */
    uint32_t abi_version;

    /* The plugin's name: a valid name (see actomaton_parameter) used to address it. */
    const char *name;
    /* Its version, free text such as "1.2.0" (at most ACTOMATON_MAX_VERSION_LENGTH bytes). */
    const char *version;
    /* One line saying what it does (at most ACTOMATON_MAX_SUMMARY_LENGTH bytes), or NULL. */
    const char *summary;

    /* The action vocabulary: `action_count` entries (1..ACTOMATON_MAX_ACTIONS). */
    const actomaton_action *actions;
    uint32_t action_count;

    /* Creates a state. `host` is the table bound to this state (valid until `destroy` of
     * this state returns); keep the pointer. Returns NULL when out of memory. */
    void *(*create)(const actomaton_host *host);

    /* Frees a state made by `create`. The host calls it exactly once per state. */
    void (*destroy)(void *state);

    /* Writes a snapshot of the state into `buffer` (which the host owns) and returns its size
     * in bytes. When the size is more than `capacity`, it writes nothing, and the host calls
     * again, once, with a buffer of at least that size (the snprintf convention); a size past
     * ACTOMATON_MAX_SNAPSHOT_SIZE, a second "too small", or a write of at most 64 bytes past
     * `capacity` (guard bytes follow the buffer) fails the snapshot. A longer wild write is a
     * crash: caught in a worker process (the plugin restarts from its last state), the host's
     * own end under `--isolation none`. `buffer` may be NULL when `capacity` is 0. The bytes are the plugin's own format; `restore` of a later
     * version of the plugin should accept them, which is how state survives a reload. */
    size_t (*snapshot)(const void *state, uint8_t *buffer, size_t capacity);

    /* Replaces the state with one read from snapshot bytes (borrowed). Returns ACTOMATON_OK,
     * or ACTOMATON_ERROR with the state unchanged when it cannot read them. */
    actomaton_status (*restore)(void *state, const uint8_t *bytes, size_t length);

    /* Writes a one-line, human-readable description of the state as UTF-8 (JSON is a good
     * choice), with the same convention as `snapshot`: returns the length, not counting a
     * NUL, and writes nothing when it is more than `capacity`. The host needs no NUL. The limit
     * is ACTOMATON_MAX_DESCRIPTION_SIZE; the host escapes control characters and invalid UTF-8
     * before it prints a description. */
    size_t (*describe)(const void *state, char *buffer, size_t capacity);

    /* ---- Since ABI version 2. A version-1 manifest ends above; the host reads none of these. */

    /* The plugin's state diagram as Graphviz DOT text (UTF-8, NUL-terminated, at most
     * ACTOMATON_MAX_DIAGRAM_SIZE bytes), or NULL for none. An inspector renders it and lights
     * the nodes `active` names. Node IDs in it are what `active` writes: a quoted ID such as
     * "X to move" is named without its quotes. Read once, at load. */
    const char *diagram;

    /* Writes the IDs of the diagram's nodes that are active in `state`, separated by '\n' (a
     * final '\n' is allowed), as UTF-8, with the same convention as `describe`:
     * returns the length, writes nothing when it is more than `capacity`, needs no NUL.
     * Nothing (length 0) means no node is active. Or NULL: the plugin names no active nodes.
     * Limits: at most ACTOMATON_MAX_ACTIVE_NODES names, each 1..ACTOMATON_MAX_NODE_NAME_LENGTH
     * bytes without control characters, ACTOMATON_MAX_ACTIVE_SIZE bytes in all; a value past
     * one fails the call with one line, like a `describe` past its limit. The host calls it
     * right after `describe`, from the same thread. */
    size_t (*active)(const void *state, char *buffer, size_t capacity);
} actomaton_manifest;

/* The entry symbol's type. `host_abi_version` is the version the host speaks; return the
 * manifest (never freed by the host), or NULL when the plugin cannot serve that host. */
typedef const actomaton_manifest *(*actomaton_plugin_entry_fn)(uint32_t host_abi_version);

/* Declare the entry point in a C plugin with this macro, then define it:
 *
 *     ACTOMATON_PLUGIN_EXPORT const actomaton_manifest *
 *     actomaton_plugin_entry(uint32_t host_abi_version) { return &manifest; }
 */
#define ACTOMATON_PLUGIN_EXPORT __attribute__((visibility("default")))

/* A name for a type code, for messages ("int32"); NULL for an unknown code. */
const char *actomaton_type_name(actomaton_type type);

/* ---------------------------------------------------------------------------------------
 * Added later, at the end, without changing ABI version 1: limits the host enforced on a
 * manifest from the start but that had no name here.
 * ------------------------------------------------------------------------------------- */
#define ACTOMATON_MAX_VERSION_LENGTH 64u  /* bytes in the manifest's `version` (since ABI version 1) */
#define ACTOMATON_MAX_SUMMARY_LENGTH 200u /* bytes in the manifest's `summary` (since ABI version 1) */

/* ---------------------------------------------------------------------------------------
 * Since ABI version 2: the limits of the diagram and of the active nodes.
 * ------------------------------------------------------------------------------------- */
#define ACTOMATON_MAX_DIAGRAM_SIZE 65536u     /* bytes of the manifest's `diagram` (64 KiB) */
#define ACTOMATON_MAX_ACTIVE_NODES 64u        /* names `active` may write */
#define ACTOMATON_MAX_NODE_NAME_LENGTH 256u   /* bytes in one name `active` writes */
/* Bytes `active` may ask for: ACTOMATON_MAX_ACTIVE_NODES names of
 * ACTOMATON_MAX_NODE_NAME_LENGTH bytes, each with its '\n' (64 * 257). */
#define ACTOMATON_MAX_ACTIVE_SIZE 16448u

#ifdef __cplusplus
}
#endif

#endif /* ACTOMATON_PLUGIN_H */

/*
 * actomaton_wasm_plugin.h — the contract between the Actomaton plugin host and a reducer
 * plugin compiled to WebAssembly (a `.wasm` file). Version 2; a host accepts versions 1 and 2.
 *
 * It mirrors actomaton_plugin.h, the contract of `.so` plugins: the same manifest, the same
 * parameter types, the same effects and the same limits. What differs is what a sandbox
 * needs: pointers are offsets into the module's own linear memory, strings carry their
 * length, an action names its vocabulary entry by index, and the host functions are imports.
 *
 * A module holds ONE plugin state: the host instantiates the module once per machine (and
 * again after a trap), so a module keeps its state in globals and needs no `create`.
 *
 * How the host uses a module, in order:
 *
 *   1. Validate the module, and check its imports: only the functions of module
 *      "actomaton" below (each with exactly its signature). Anything else — WASI, another
 *      module, a table, a memory or a global import — is refused: a plugin gets no
 *      file-system, network or clock access. It must export its `memory`.
 *   2. Instantiate it, with linear memory capped (`--wasm-memory-limit`).
 *   3. Call `actomaton_abi_version()`. If it is not a version from ACTOMATON_WASM_MIN_ABI_VERSION
 *      to ACTOMATON_WASM_ABI_VERSION, stop. The manifest and the exports are read as that
 *      version has them: a version-1 manifest is 40 bytes, and has no diagram.
 *   4. Call `actomaton_manifest()` and read the manifest at the offset it returns. Every
 *      offset and length is checked against the memory; names follow actomaton_plugin.h's
 *      rules and limits.
 *   5. For each action i, look up the export `actomaton_action_<name>` and check that its
 *      signature is the one its parameters declare (see "Typed action exports").
 *   6. (Version 2) When the manifest's `active` is 1, check that the module exports
 *      `actomaton_active` with its signature.
 *   7. Call actions, `actomaton_snapshot`, `actomaton_restore`, `actomaton_describe` (and
 *      `actomaton_active`, right after it, when the manifest's `active` is 1).
 *
 * Versions: the manifest grows only at its end, each addition marked with the version it
 * appeared in. Version 1: the manifest up to `capabilities`. Version 2: the manifest's
 * `diagram` and `active`, and the `actomaton_active` export.
 *
 * Every call runs with a fuel budget (`--fuel`, about one unit per wasm instruction). A trap
 * — `unreachable`, an out-of-bounds access, call-stack exhaustion, running out of fuel —
 * fails the call in progress with one line; the host throws the instance away and builds a
 * new one from the last good snapshot and the actions since, so the state is as it was
 * before the failed action. Nothing else in the host is affected.
 *
 * Ownership: memory is the module's. An offset the module returns (manifest, snapshot,
 * description) must stay valid until the next call into the module; the host copies what it
 * keeps. An offset the module passes to a host import is read during that import call only.
 * The host writes into the module's memory only inside a buffer `actomaton_alloc` returned,
 * and only before the call that consumes it (a string argument, restore bytes).
 */
#ifndef ACTOMATON_WASM_PLUGIN_H
#define ACTOMATON_WASM_PLUGIN_H

#include <stdint.h>

#if defined(__wasm32__)
_Static_assert(sizeof(void *) == 4, "wasm32: offsets are 32-bit");
#endif

/* The version of this contract; a host accepts a module of any version from
 * ACTOMATON_WASM_MIN_ABI_VERSION to this one, and refuses any other. */
#define ACTOMATON_WASM_ABI_VERSION 2u
#define ACTOMATON_WASM_MIN_ABI_VERSION 1u

/* Limits, the same as actomaton_plugin.h's. */
#define ACTOMATON_WASM_MAX_ACTIONS 256u
#define ACTOMATON_WASM_MAX_PARAMETERS 16u
#define ACTOMATON_WASM_MAX_NAME_LENGTH 64u
#define ACTOMATON_WASM_MAX_STRING_LENGTH 1048576u
#define ACTOMATON_WASM_MAX_ID_LENGTH 256u
#define ACTOMATON_WASM_MAX_MESSAGE_LENGTH 4096u
#define ACTOMATON_WASM_MAX_SNAPSHOT_SIZE 67108864u
#define ACTOMATON_WASM_MAX_DESCRIPTION_SIZE 16777216u
/* Since version 2, the same as actomaton_plugin.h's ACTOMATON_MAX_DIAGRAM_SIZE,
 * ACTOMATON_MAX_ACTIVE_NODES, ACTOMATON_MAX_NODE_NAME_LENGTH and ACTOMATON_MAX_ACTIVE_SIZE. */
#define ACTOMATON_WASM_MAX_DIAGRAM_SIZE 65536u
#define ACTOMATON_WASM_MAX_ACTIVE_NODES 64u
#define ACTOMATON_WASM_MAX_NODE_NAME_LENGTH 256u
#define ACTOMATON_WASM_MAX_ACTIVE_SIZE 16448u

/* Status codes: the same values as actomaton_plugin.h's. */
#define ACTOMATON_WASM_OK 0
#define ACTOMATON_WASM_ERROR 1            /* refused: state unchanged; call `actomaton_fail` first */
#define ACTOMATON_WASM_INVALID_REQUEST 2  /* a host import refused the request */

/* Parameter types: the same codes as actomaton_plugin.h's ACTOMATON_TYPE_*. */
#define ACTOMATON_WASM_TYPE_BOOL 1u    /* wasm i32, 0 or 1 */
#define ACTOMATON_WASM_TYPE_INT8 2u    /* i32, -128...127 */
#define ACTOMATON_WASM_TYPE_INT16 3u   /* i32 */
#define ACTOMATON_WASM_TYPE_INT32 4u   /* i32 */
#define ACTOMATON_WASM_TYPE_INT64 5u   /* i64 */
#define ACTOMATON_WASM_TYPE_UINT8 6u   /* i32, 0...255 */
#define ACTOMATON_WASM_TYPE_UINT16 7u  /* i32 */
#define ACTOMATON_WASM_TYPE_UINT32 8u  /* i32 */
#define ACTOMATON_WASM_TYPE_UINT64 9u  /* i64 */
#define ACTOMATON_WASM_TYPE_FLOAT 10u  /* f32 */
#define ACTOMATON_WASM_TYPE_DOUBLE 11u /* f64 */
#define ACTOMATON_WASM_TYPE_STRING 12u /* two i32: offset, length (UTF-8, no NUL needed) */

/* A string: `length` bytes of UTF-8 at offset `bytes`. */
typedef struct actomaton_wasm_string {
    uint32_t bytes;
    uint32_t length;
} actomaton_wasm_string;

/* ---- The manifest ----------------------------------------------------------------------
 * All offsets point into the module's memory. Layout is wasm32 C: every field 4 bytes. */

typedef struct actomaton_wasm_parameter {  /* 12 bytes */
    actomaton_wasm_string name;   /* 1..64 bytes of [A-Za-z0-9_], not a digit first */
    uint32_t type;                /* ACTOMATON_WASM_TYPE_* */
} actomaton_wasm_parameter;

typedef struct actomaton_wasm_action {     /* 16 bytes */
    actomaton_wasm_string name;   /* unique; same rules as parameter names */
    uint32_t parameters;          /* offset of `parameter_count` actomaton_wasm_parameter */
    uint32_t parameter_count;     /* at most ACTOMATON_WASM_MAX_PARAMETERS */
} actomaton_wasm_action;

typedef struct actomaton_wasm_manifest {   /* 40 bytes in version 1, 52 in version 2 */
    uint32_t abi_version;         /* ACTOMATON_WASM_ABI_VERSION */
    actomaton_wasm_string name;   /* a valid name */
    actomaton_wasm_string version;/* free text, at most 64 bytes */
    actomaton_wasm_string summary;/* one line of at most 200 bytes (actomaton_plugin.h: ACTOMATON_MAX_SUMMARY_LENGTH), or {0, 0} for none */
    uint32_t actions;             /* offset of `action_count` actomaton_wasm_action */
    uint32_t action_count;        /* 1..ACTOMATON_WASM_MAX_ACTIONS */
    uint32_t capabilities;        /* 0: the module asks for nothing. No capability (file system,
                                     network, clock) is defined yet; a host refuses any other value. */
    /* ---- Since version 2: a version-1 manifest ends above. */
    actomaton_wasm_string diagram;/* the state diagram as Graphviz DOT text (UTF-8), at most
                                     ACTOMATON_WASM_MAX_DIAGRAM_SIZE bytes, or {0, 0} for none */
    uint32_t active;              /* 1: the module exports actomaton_active; 0: it names no active nodes */
} actomaton_wasm_manifest;

/* ---- Exports ---------------------------------------------------------------------------- */

/* ACTOMATON_WASM_ABI_VERSION. Read first. */
uint32_t actomaton_abi_version(void);
/* The offset of the manifest; it stays valid and unchanged for the life of the instance. */
uint32_t actomaton_manifest(void);
/* A buffer of `length` bytes the host fills before its next call: the bytes of a restore, or
 * all the string arguments of an action, one after the other. 0 when out of memory. The host
 * calls it at most once before each call, and each call may reuse the previous buffer. */
uint32_t actomaton_alloc(uint32_t length);
/* The state's snapshot, in the module's own format: the offset in the low 32 bits, the length
 * in the high 32 bits (at most ACTOMATON_WASM_MAX_SNAPSHOT_SIZE). */
uint64_t actomaton_snapshot(void);
/* Replaces the state with one read from `length` bytes at `bytes` (an actomaton_alloc buffer).
 * ACTOMATON_WASM_OK, or ACTOMATON_WASM_ERROR with the state unchanged. */
int32_t actomaton_restore(uint32_t bytes, uint32_t length);
/* A one-line, human-readable description of the state (UTF-8, JSON is a good choice), packed
 * like `actomaton_snapshot`'s result; at most ACTOMATON_WASM_MAX_DESCRIPTION_SIZE bytes. */
uint64_t actomaton_describe(void);

/* Since version 2, required when the manifest's `active` is 1: the IDs of the diagram's nodes
 * active in the state, separated by '\n' (a final '\n' is allowed; nothing for none), packed
 * like `actomaton_describe`'s result. At most ACTOMATON_WASM_MAX_ACTIVE_NODES names, each
 * 1..ACTOMATON_WASM_MAX_NODE_NAME_LENGTH bytes of UTF-8 without control characters,
 * ACTOMATON_WASM_MAX_ACTIVE_SIZE bytes in all; a list past one fails the call with one line. */
uint64_t actomaton_active(void);

/* Typed action exports. Action i of the manifest is the export named "actomaton_action_"
 * followed by its name, of exactly this signature, where each parameter takes the wasm value
 * types its ACTOMATON_WASM_TYPE_* gives (a string takes two i32: offset and length):
 *
 *     int32_t actomaton_action_<name>(T1 arg1, ..., Tn argn);
 *
 * It runs one transition: it updates the state, may call the effect imports, and returns
 * ACTOMATON_WASM_OK. To refuse, it calls `actomaton_fail`, leaves the state as it was and
 * returns ACTOMATON_WASM_ERROR. String arguments are in an `actomaton_alloc` buffer. */

/* ---- Imports (module "actomaton") ------------------------------------------------------ */

/* One typed value, 16 bytes: `type` is the declared type of the parameter it fills; the
 * value sits at offset 8 — i64 for integers (sign- or zero-extended), f64 for FLOAT and
 * DOUBLE, i32 0/1 for BOOL, an actomaton_wasm_string for STRING. */
typedef struct actomaton_wasm_value {
    uint32_t type;
    uint32_t reserved;            /* 0 */
    union {
        int64_t i;
        uint64_t u;
        double f;
        uint32_t b;
        actomaton_wasm_string s;
    } as;
} actomaton_wasm_value;

/* An action of the plugin's own vocabulary, by index, with its arguments in order. */
typedef struct actomaton_wasm_call {       /* 12 bytes */
    uint32_t action;              /* index into the manifest's actions */
    uint32_t args;                /* offset of `arg_count` actomaton_wasm_value; 0 when none */
    uint32_t arg_count;
} actomaton_wasm_call;

/* Effect options, as actomaton_plugin.h's actomaton_effect_options. */
typedef struct actomaton_wasm_effect_options {  /* 24 bytes */
    actomaton_wasm_string id;     /* {0, 0}: none */
    actomaton_wasm_string queue;  /* {0, 0}: none */
    uint32_t policy;              /* ACTOMATON_QUEUE_*: 1 run newest, 2 run oldest (suspend new), 3 run oldest (discard new) */
    uint32_t max_count;           /* at least 1 when `queue` is set */
} actomaton_wasm_effect_options;

#define ACTOMATON_WASM_IMPORT(name) __attribute__((import_module("actomaton"), import_name(#name)))

/* Feeds `call` back at once, within the same send, after this action completes. */
ACTOMATON_WASM_IMPORT(next_action) int32_t actomaton_next_action(uint32_t call);
/* Sends `call` after `delay_ns` nanoseconds; `options` is 0 or an actomaton_wasm_effect_options. */
ACTOMATON_WASM_IMPORT(delayed_action) int32_t actomaton_delayed_action(uint32_t call, uint64_t delay_ns, uint32_t options);
/* Sends `call` every `interval_ns` (> 0) nanoseconds until cancelled by ID. */
ACTOMATON_WASM_IMPORT(repeating_action) int32_t actomaton_repeating_action(uint32_t call, uint64_t interval_ns, uint32_t options);
/* Cancels the running effects with ID `length` bytes at `id`. */
ACTOMATON_WASM_IMPORT(cancel) int32_t actomaton_cancel(uint32_t id, uint32_t length);
/* Says why the current action or restore fails (the first message of a call is kept). */
ACTOMATON_WASM_IMPORT(fail) void actomaton_fail(uint32_t message, uint32_t length);
/* Writes one line to the host's log, prefixed with the plugin's name. */
ACTOMATON_WASM_IMPORT(log) void actomaton_log(uint32_t message, uint32_t length);

#endif /* ACTOMATON_WASM_PLUGIN_H */

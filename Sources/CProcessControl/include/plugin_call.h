// Which plugin code the current thread is running, for the one line a host prints when a
// plugin running in its process ends it (a crash, a stack overflow, an exit()). Signal-safe to
// read; nothing here allocates.
#ifndef ACTOMATON_PLUGIN_CALL_H
#define ACTOMATON_PLUGIN_CALL_H

// Marks the start of a call into plugin code on this thread: `plugin` (its name) and `call`
// (an action's name, or "load", "snapshot", ...) must stay valid until the matching leave.
// Calls nest. Gives the thread an alternate signal stack the first time, so that a stack
// overflow in the plugin can still be reported.
void actomaton_plugin_call_enter(const char *plugin, const char *call);

// Marks the end of the innermost call.
void actomaton_plugin_call_leave(void);

// Writes "plugin NAME's 'CALL'" for the innermost call of this thread into `buffer` (at most
// `capacity` bytes, NUL-terminated), with write-safe characters only; returns its length, or
// 0 when the thread runs no plugin code. Async-signal-safe.
unsigned long actomaton_plugin_call_describe(char *buffer, unsigned long capacity);

// Makes an exit() called from plugin code say so: one line on standard error ("error:
// actomaton-host ended: plugin NAME's 'CALL' called exit(STATUS), and every plugin's machine
// with it"), and an exit status that is never 0 (1 for exit(0)). Call once, at start.
void actomaton_report_plugin_exits(void);

// The descriptor the host writes its error lines to: 2 until set (the host's private copy of
// standard error, which a plugin in its process that closes descriptor 2 cannot take away).
// Async-signal-safe to read.
int actomaton_error_descriptor(void);

// Sets the descriptor ``actomaton_error_descriptor`` returns.
void actomaton_set_error_descriptor(int descriptor);

#endif

// The one place that includes SQLite's header. Swift code imports `CSQLite` instead.
//
// SQLite (Debian: libsqlite3-dev) holds the plugin host's journal: every accepted action,
// snapshots and pending timers, in WAL mode.
#ifndef ACTOMATON_CSQLITE_SHIM_H
#define ACTOMATON_CSQLITE_SHIM_H

#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast of -1 to a function pointer, which Swift cannot import.
static inline sqlite3_destructor_type csqlite_transient(void) { return SQLITE_TRANSIENT; }

#endif

// Process control for plugin workers: what Swift's Glibc module does not bring in (prctl,
// posix_spawn with closefrom). Nothing else includes <sys/prctl.h>.
#ifndef ACTOMATON_PROCESS_CONTROL_H
#define ACTOMATON_PROCESS_CONTROL_H

#include <sys/types.h>

// Asks the kernel to send `signal` to this process when its parent dies. 0 or -errno.
int actomaton_set_parent_death_signal(int signal);

// Sets PR_SET_NO_NEW_PRIVS: nothing this process runs can gain privileges. 0 or -errno.
int actomaton_set_no_new_privileges(void);

// Starts `path` with `argv` (NULL-terminated), with `child_descriptor` as its descriptor 3
// and every other descriptor above 2 closed. Returns the process ID, or -errno.
pid_t actomaton_spawn_worker(const char *path, char *const argv[], int child_descriptor);

#endif

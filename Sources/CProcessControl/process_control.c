#define _GNU_SOURCE
#include "process_control.h"

#include <errno.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <unistd.h>

extern char **environ;

int actomaton_set_parent_death_signal(int signal) {
    return prctl(PR_SET_PDEATHSIG, (unsigned long)signal, 0, 0, 0) == 0 ? 0 : -errno;
}

int actomaton_set_no_new_privileges(void) {
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 ? 0 : -errno;
}

pid_t actomaton_spawn_worker(const char *path, char *const argv[], int child_descriptor) {
    posix_spawn_file_actions_t actions;
    int status = posix_spawn_file_actions_init(&actions);
    if (status != 0) return -status;
    status = posix_spawn_file_actions_adddup2(&actions, child_descriptor, 3);
    if (status == 0) status = posix_spawn_file_actions_addclosefrom_np(&actions, 4);
    pid_t pid = -1;
    if (status == 0) status = posix_spawn(&pid, path, &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    return status == 0 ? pid : -status;
}

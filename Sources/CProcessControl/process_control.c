#define _GNU_SOURCE
#include "process_control.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

int actomaton_set_no_new_privileges(void) {
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 ? 0 : -errno;
}

int actomaton_set_thread_name(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0) == 0 ? 0 : -errno;
}

static pthread_once_t lifeline_once = PTHREAD_ONCE_INIT;
static int lifeline_read = -1;
static int lifeline_error = 0;

static void make_lifeline(void) {
    int ends[2];
    if (pipe2(ends, O_CLOEXEC) != 0) {
        lifeline_error = errno;
        return;
    }
    // The write end is never written nor closed: the kernel closes it when this process ends.
    lifeline_read = ends[0];
}

int actomaton_worker_lifeline(void) {
    pthread_once(&lifeline_once, make_lifeline);
    return lifeline_read >= 0 ? lifeline_read : -lifeline_error;
}

pid_t actomaton_spawn_worker(const char *path, char *const argv[], int channel, int lifeline) {
    // Above 4 first, so that no dup2 below overwrites a descriptor another one still needs.
    int high_channel = fcntl(channel, F_DUPFD_CLOEXEC, 5);
    if (high_channel < 0) return -errno;
    int high_lifeline = fcntl(lifeline, F_DUPFD_CLOEXEC, 5);
    if (high_lifeline < 0) {
        int error = errno;
        close(high_channel);
        return -error;
    }
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int status = posix_spawn_file_actions_init(&actions);
    if (status == 0) {
        status = posix_spawnattr_init(&attributes);
        if (status != 0) posix_spawn_file_actions_destroy(&actions);
    }
    if (status != 0) {
        close(high_channel);
        close(high_lifeline);
        return -status;
    }
    status = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    if (status == 0) status = posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    if (status == 0) status = posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    if (status == 0) status = posix_spawn_file_actions_adddup2(&actions, high_channel, 3);
    if (status == 0) status = posix_spawn_file_actions_adddup2(&actions, high_lifeline, 4);
    if (status == 0) status = posix_spawn_file_actions_addclosefrom_np(&actions, 5);
    sigset_t none;
    sigemptyset(&none);
    if (status == 0) status = posix_spawnattr_setpgroup(&attributes, 0);
    if (status == 0) status = posix_spawnattr_setsigmask(&attributes, &none);
    if (status == 0) status = posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
    pid_t pid = -1;
    if (status == 0) status = posix_spawn(&pid, path, &actions, &attributes, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    close(high_channel);
    close(high_lifeline);
    return status == 0 ? pid : -status;
}

static void *watch(void *argument) {
    int lifeline = (int)(long)argument;
    struct pollfd poller = {.fd = lifeline, .events = POLLIN};
    // Nothing is ever written: any event is the hang-up (or an error, treated alike).
    while (poll(&poller, 1, -1) < 0 && errno == EINTR) {}
    // The worker leads its group (see actomaton_spawn_worker): the group is it and its forks.
    if (getpgrp() == getpid()) kill(0, SIGKILL);
    kill(getpid(), SIGKILL);
    return NULL;
}

pid_t actomaton_spawn_filter(const char *path, char *const argv[], int input, int output) {
    int high_input = fcntl(input, F_DUPFD_CLOEXEC, 3);
    if (high_input < 0) return -errno;
    int high_output = fcntl(output, F_DUPFD_CLOEXEC, 3);
    if (high_output < 0) {
        int error = errno;
        close(high_input);
        return -error;
    }
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int status = posix_spawn_file_actions_init(&actions);
    if (status == 0) {
        status = posix_spawnattr_init(&attributes);
        if (status != 0) posix_spawn_file_actions_destroy(&actions);
    }
    if (status != 0) {
        close(high_input);
        close(high_output);
        return -status;
    }
    status = posix_spawn_file_actions_adddup2(&actions, high_input, 0);
    if (status == 0) status = posix_spawn_file_actions_adddup2(&actions, high_output, 1);
    if (status == 0) status = posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    if (status == 0) status = posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    sigset_t none;
    sigemptyset(&none);
    if (status == 0) status = posix_spawnattr_setpgroup(&attributes, 0);
    if (status == 0) status = posix_spawnattr_setsigmask(&attributes, &none);
    if (status == 0) status = posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
    pid_t pid = -1;
    if (status == 0) status = posix_spawnp(&pid, path, &actions, &attributes, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    close(high_input);
    close(high_output);
    return status == 0 ? pid : -status;
}

int actomaton_watch_lifeline(int lifeline) {
    if (fcntl(lifeline, F_GETFD) < 0) return -errno;
    (void)fcntl(lifeline, F_SETFD, FD_CLOEXEC);
    pthread_attr_t attributes;
    int status = pthread_attr_init(&attributes);
    if (status != 0) return -status;
    (void)pthread_attr_setstacksize(&attributes, 64 * 1024);
    (void)pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    pthread_t thread;
    status = pthread_create(&thread, &attributes, watch, (void *)(long)lifeline);
    pthread_attr_destroy(&attributes);
    return -status;
}

static long milliseconds_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec * 1000L + now.tv_nsec / 1000000L;
}

int actomaton_open_process(pid_t pid) {
    int descriptor = (int)syscall(SYS_pidfd_open, pid, 0);
    return descriptor >= 0 ? descriptor : -errno;
}

int actomaton_wait_for_exit(pid_t pid, int milliseconds) {
    int descriptor = (int)syscall(SYS_pidfd_open, pid, 0);
    if (descriptor < 0) return -errno;
    long deadline = milliseconds_now() + milliseconds;
    struct pollfd poller = {.fd = descriptor, .events = POLLIN};
    int result;
    for (;;) {
        long left = deadline - milliseconds_now();
        int ready = poll(&poller, 1, left > 0 ? (int)left : 0);
        if (ready < 0 && errno == EINTR) continue;
        result = ready < 0 ? -errno : ready > 0 ? 1 : 0;
        break;
    }
    close(descriptor);
    return result;
}

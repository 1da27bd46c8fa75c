#define _GNU_SOURCE
#include "process_control.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdbool.h>
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

#if defined(__x86_64__)
#define ACTOMATON_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ACTOMATON_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

int actomaton_forbid_processes(void) {
#ifdef ACTOMATON_AUDIT_ARCH
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ACTOMATON_AUDIT_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#if defined(__x86_64__)
        // The x32 ABI's numbers, then the two calls that only start processes.
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_fork, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_vfork, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
#endif
        // clone3 passes its flags in memory, which a filter cannot read.
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        // clone: a thread (CLONE_THREAD, in the low word of its first argument) or nothing.
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog program = {.len = (unsigned short)(sizeof filter / sizeof filter[0]), .filter = filter};
    long result = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &program);
    if (result < 0) return -errno;
    // A positive result is a thread the filter could not be put on.
    return result == 0 ? 0 : -EAGAIN;
#else
    return -ENOSYS;
#endif
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

// Starts `path` (searched on PATH when `search`) in a process group of its own with no signal
// blocked: its descriptor i is sources[i], or /dev/null when sources[i] < 0, for i < count, and
// every descriptor from `count` on is closed. The process ID, or -errno.
static pid_t spawn_with(const char *path, char *const argv[], bool search, const int *sources, int count) {
    enum { max_count = 8 };
    if (count > max_count) return -EINVAL;
    int high[max_count];
    int status = 0;
    // Above `count` first, so that no dup2 below overwrites a descriptor another one still needs.
    for (int i = 0; i < count; i++) {
        high[i] = -1;
        if (status == 0 && sources[i] >= 0) {
            high[i] = fcntl(sources[i], F_DUPFD_CLOEXEC, count);
            if (high[i] < 0) status = errno;
        }
    }
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    bool have_actions = false, have_attributes = false;
    if (status == 0) have_actions = (status = posix_spawn_file_actions_init(&actions)) == 0;
    if (status == 0) have_attributes = (status = posix_spawnattr_init(&attributes)) == 0;
    for (int i = 0; i < count && status == 0; i++) {
        status = high[i] < 0 ? posix_spawn_file_actions_addopen(&actions, i, "/dev/null", i == 0 ? O_RDONLY : O_WRONLY, 0)
                             : posix_spawn_file_actions_adddup2(&actions, high[i], i);
    }
    if (status == 0) status = posix_spawn_file_actions_addclosefrom_np(&actions, count);
    sigset_t none;
    sigemptyset(&none);
    if (status == 0) status = posix_spawnattr_setpgroup(&attributes, 0);
    if (status == 0) status = posix_spawnattr_setsigmask(&attributes, &none);
    if (status == 0) status = posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
    pid_t pid = -1;
    if (status == 0) {
        status = search ? posix_spawnp(&pid, path, &actions, &attributes, argv, environ)
                        : posix_spawn(&pid, path, &actions, &attributes, argv, environ);
    }
    if (have_actions) posix_spawn_file_actions_destroy(&actions);
    if (have_attributes) posix_spawnattr_destroy(&attributes);
    for (int i = 0; i < count; i++) {
        if (high[i] >= 0) close(high[i]);
    }
    return status == 0 ? pid : -status;
}

pid_t actomaton_spawn_worker(const char *path, char *const argv[], int channel, int lifeline) {
    const int sources[] = {-1, -1, -1, channel, lifeline};
    return spawn_with(path, argv, false, sources, 5);
}

pid_t actomaton_spawn_filter(const char *path, char *const argv[], int input, int output) {
    const int sources[] = {input, output, -1};
    return spawn_with(path, argv, true, sources, 3);
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

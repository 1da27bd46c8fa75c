#define _GNU_SOURCE
#include "process_control.h"

#include <errno.h>
#include <link.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
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

// A seccomp program built at run time: it names this process's ID.
struct filter_builder {
    struct sock_filter code[256];
    unsigned short count;
};

static void emit(struct filter_builder *b, struct sock_filter statement) {
    if (b->count < sizeof b->code / sizeof b->code[0]) b->code[b->count] = statement;
    b->count++;
}

#define LOAD_NR() emit(b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)))
#define LOAD_ARG0() emit(b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])))
#define RETURN(value) emit(b, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, (value)))
#define JUMP_IF(value, if_true, if_false) emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (value), (if_true), (if_false)))

// The call `nr` fails with `error`; the number stays loaded.
static void refuse(struct filter_builder *b, unsigned int nr, unsigned int error) {
    JUMP_IF(nr, 0, 1);
    RETURN(SECCOMP_RET_ERRNO | error);
}

// The call `nr` is taken only when its first argument (the low word) is one of `allowed`,
// else fails with EPERM; the number stays loaded for the calls after.
static void only_for(struct filter_builder *b, unsigned int nr, const unsigned int *allowed, unsigned char count) {
    JUMP_IF(nr, 0, (unsigned char)(count + 3));
    LOAD_ARG0();
    for (unsigned char i = 0; i < count; i++) JUMP_IF(allowed[i], (unsigned char)(count - i), 0);
    RETURN(SECCOMP_RET_ERRNO | EPERM);
    RETURN(SECCOMP_RET_ALLOW);
}

int actomaton_restrict_worker(int allow_processes, int allow_network, int allow_files) {
#ifdef ACTOMATON_AUDIT_ARCH
    // No capability: a root worker would otherwise reach the host through /proc (its memory,
    // its environment), whatever the filter says.
    for (int cap = 0; cap <= 63; cap++) prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    struct { uint32_t version; int pid; } header = {0x20080522 /* _LINUX_CAPABILITY_VERSION_3 */, 0};
    struct { uint32_t effective, permitted, inheritable; } data[2] = {{0, 0, 0}, {0, 0, 0}};
    if (syscall(SYS_capset, &header, data) != 0) return -errno;

    unsigned int self = (unsigned int)getpid();
    struct filter_builder builder = {.count = 0};
    struct filter_builder *b = &builder;
    emit(b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
    JUMP_IF(ACTOMATON_AUDIT_ARCH, 1, 0);
    RETURN(SECCOMP_RET_ERRNO | EPERM);
    LOAD_NR();
#if defined(__x86_64__)
    // The x32 ABI's numbers.
    emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1));
    RETURN(SECCOMP_RET_ERRNO | EPERM);
#endif
    // Nothing of another process: no tracing, no reading or writing its memory, no pidfd.
    refuse(b, __NR_ptrace, EPERM);
    refuse(b, __NR_process_vm_readv, EPERM);
    refuse(b, __NR_process_vm_writev, EPERM);
#ifdef __NR_pidfd_open
    refuse(b, __NR_pidfd_open, EPERM);
#endif
#ifdef __NR_pidfd_getfd
    refuse(b, __NR_pidfd_getfd, EPERM);
#endif
#ifdef __NR_pidfd_send_signal
    refuse(b, __NR_pidfd_send_signal, EPERM);
#endif
    // Resource limits of itself only: another process's (the host's: a CPU limit of 0 killed
    // it) are out of reach, whatever is allowed.
    unsigned int own_limits[] = {0, self};
    only_for(b, __NR_prlimit64, own_limits, 2);
    // No kernel keyring: a worker shares the host's session keyring.
    refuse(b, __NR_keyctl, EPERM);
    refuse(b, __NR_add_key, EPERM);
    refuse(b, __NR_request_key, EPERM);
    if (!allow_network) {
        // No socket of any family (the channel to the host is a socket pair made before): no
        // connection, no datagram, nothing of the machine's network or its local services.
        // io_uring can make sockets without socket(2); a datagram socket pair can send to any
        // local socket's address.
        refuse(b, __NR_socket, EPERM);
        refuse(b, __NR_socketpair, EPERM);
        refuse(b, __NR_io_uring_setup, EPERM);
    }
    if (!allow_files) {
        // What Landlock does not cover: a file's mode, owner, times and extended attributes
        // (a worker running as root made a program set-user-ID root), and watching directories.
        static const unsigned int metadata[] = {
#ifdef __NR_chmod
            __NR_chmod, __NR_chown, __NR_lchown, __NR_utime, __NR_utimes, __NR_futimesat,
#endif
            __NR_fchmod, __NR_fchmodat, __NR_fchown, __NR_fchownat, __NR_utimensat,
            __NR_setxattr, __NR_lsetxattr, __NR_fsetxattr, __NR_removexattr, __NR_lremovexattr, __NR_fremovexattr,
            __NR_getxattr, __NR_lgetxattr, __NR_listxattr, __NR_llistxattr,
            __NR_inotify_add_watch, __NR_fanotify_mark,
            452 /* fchmodat2 */, 463 /* setxattrat */, 464 /* getxattrat */, 465 /* listxattrat */, 466 /* removexattrat */,
        };
        for (size_t i = 0; i < sizeof metadata / sizeof metadata[0]; i++) refuse(b, metadata[i], EPERM);
    }
    if (!allow_processes) {
#if defined(__x86_64__)
        refuse(b, __NR_fork, EPERM);
        refuse(b, __NR_vfork, EPERM);
#endif
        // A program it ran would outlive the host: the lifeline's watcher ends with the exec.
        refuse(b, __NR_execve, EPERM);
#ifdef __NR_execveat
        refuse(b, __NR_execveat, EPERM);
#endif
        // clone3 passes its flags in memory, which a filter cannot read: the C library falls
        // back to clone.
        refuse(b, __NR_clone3, ENOSYS);
        // clone: a thread (CLONE_THREAD, in the low word of its first argument) or nothing.
        JUMP_IF(__NR_clone, 0, 4);
        LOAD_ARG0();
        emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1));
        RETURN(SECCOMP_RET_ALLOW);
        RETURN(SECCOMP_RET_ERRNO | EPERM);
        // Signals to itself only: its group (0, -self) or itself; tkill names no process.
        unsigned int own_group[] = {0, self, (unsigned int)-(int)self};
        only_for(b, __NR_kill, own_group, 3);
        unsigned int own[] = {self};
        only_for(b, __NR_tgkill, own, 1);
        only_for(b, __NR_rt_sigqueueinfo, own, 1);
        only_for(b, __NR_rt_tgsigqueueinfo, own, 1);
        refuse(b, __NR_tkill, EPERM);
    }
    RETURN(SECCOMP_RET_ALLOW);
    if (builder.count > sizeof builder.code / sizeof builder.code[0]) return -E2BIG;
    struct sock_fprog program = {.len = builder.count, .filter = builder.code};
    long result = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &program);
    if (result < 0) return -errno;
    // A positive result is a thread the filter could not be put on.
    return result == 0 ? 0 : -EAGAIN;
#else
    (void)allow_processes;
    (void)allow_network;
    (void)allow_files;
    return -ENOSYS;
#endif
}

// Landlock, from the kernel's interface (the build machine's headers may be older than it).
#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_add_rule 445
#define __NR_landlock_restrict_self 446
#endif
#define LANDLOCK_VERSION_QUERY 1u
#define LANDLOCK_PATH_BENEATH 1
#define LANDLOCK_EXECUTE (1ull << 0)
#define LANDLOCK_READ_FILE (1ull << 2)
// The rights a rule on a file (not a directory) may hold: execute, write, read, truncate, ioctl.
#define LANDLOCK_FILE_RIGHTS ((1ull << 0) | (1ull << 1) | (1ull << 2) | (1ull << 14) | (1ull << 15))

struct landlock_ruleset {
    uint64_t handled_access_fs;
};

struct landlock_beneath {
    uint64_t allowed_access;
    int32_t parent_fd;
} __attribute__((packed));

struct landlock_rules {
    int ruleset;
    uint64_t handled;
    int error;
};

// Lets the domain have `access` (within what it handles) to `path` and what is beneath it; a
// path that does not exist is skipped.
static void allow_beneath(struct landlock_rules *rules, const char *path, uint64_t access) {
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) return;
    struct stat info;
    if (fstat(fd, &info) == 0 && !S_ISDIR(info.st_mode)) access &= LANDLOCK_FILE_RIGHTS;
    struct landlock_beneath rule = {.allowed_access = access & rules->handled, .parent_fd = fd};
    if (rule.allowed_access != 0 && syscall(__NR_landlock_add_rule, rules->ruleset, LANDLOCK_PATH_BENEATH, &rule, 0) != 0
        && rules->error == 0) {
        rules->error = errno;
    }
    close(fd);
}

// The directory of each object loaded (the host's Swift runtime, wherever its toolchain is).
static int allow_loaded_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    const char *name = info->dlpi_name;
    if (name == NULL || name[0] != '/') return 0;
    char directory[4096];
    size_t length = strnlen(name, sizeof directory);
    if (length >= sizeof directory) return 0;
    memcpy(directory, name, length + 1);
    char *slash = strrchr(directory, '/');
    if (slash == NULL || slash == directory) return 0;
    *slash = 0;
    allow_beneath(data, directory, LANDLOCK_READ_FILE | LANDLOCK_EXECUTE);
    return 0;
}

int actomaton_confine_files(const char *plugin_path) {
    long abi = syscall(__NR_landlock_create_ruleset, NULL, 0, LANDLOCK_VERSION_QUERY);
    if (abi < 0) return -errno;
    // Every right the kernel knows: bits 0-12 from version 1, REFER (13) from 2, TRUNCATE (14)
    // from 3, IOCTL_DEV (15) from 5.
    uint64_t handled = (1ull << 13) - 1;
    if (abi >= 2) handled |= 1ull << 13;
    if (abi >= 3) handled |= 1ull << 14;
    if (abi >= 5) handled |= 1ull << 15;
    struct landlock_ruleset attributes = {.handled_access_fs = handled};
    int ruleset = (int)syscall(__NR_landlock_create_ruleset, &attributes, sizeof attributes, 0);
    if (ruleset < 0) return -errno;
    struct landlock_rules rules = {.ruleset = ruleset, .handled = handled, .error = 0};
    // The system's programs and libraries (what the plugin links, what a program it may start
    // runs), read-only; the loader's cache; the plugin's own file.
    static const char *const system[] = {"/usr", "/lib", "/lib64", "/bin", "/sbin"};
    for (size_t i = 0; i < sizeof system / sizeof system[0]; i++) allow_beneath(&rules, system[i], LANDLOCK_READ_FILE | LANDLOCK_EXECUTE);
    dl_iterate_phdr(allow_loaded_object, &rules);
    allow_beneath(&rules, "/etc/ld.so.cache", LANDLOCK_READ_FILE);
    if (plugin_path != NULL) allow_beneath(&rules, plugin_path, LANDLOCK_READ_FILE);
    int result = rules.error ? -rules.error : 0;
    if (result == 0) result = actomaton_set_no_new_privileges();
    if (result == 0 && syscall(__NR_landlock_restrict_self, ruleset, 0) != 0) result = -errno;
    close(ruleset);
    return result;
}

int actomaton_memory_file(const char *name) {
    int fd = (int)syscall(SYS_memfd_create, name, MFD_CLOEXEC);
    return fd >= 0 ? fd : -errno;
}

int actomaton_event_descriptor(void) {
    int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    return fd >= 0 ? fd : -errno;
}

int actomaton_set_undumpable(void) {
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0 ? 0 : -errno;
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
// blocked and every signal's action the default (a host stopping on a signal ignores SIGTERM,
// SIGINT and SIGHUP, and an ignored signal stays ignored across exec): its descriptor i is sources[i], or /dev/null when sources[i] < 0, for i < count, and
// every descriptor from `count` on is closed. The process ID, or -errno.
static pid_t spawn_with(const char *path, char *const argv[], char *const envp[], bool search, const int *sources, int count) {
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
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    if (status == 0) status = posix_spawnattr_setpgroup(&attributes, 0);
    if (status == 0) status = posix_spawnattr_setsigmask(&attributes, &none);
    if (status == 0) status = posix_spawnattr_setsigdefault(&attributes, &all);
    if (status == 0) status = posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid = -1;
    if (status == 0) {
        status = search ? posix_spawnp(&pid, path, &actions, &attributes, argv, envp)
                        : posix_spawn(&pid, path, &actions, &attributes, argv, envp);
    }
    if (have_actions) posix_spawn_file_actions_destroy(&actions);
    if (have_attributes) posix_spawnattr_destroy(&attributes);
    for (int i = 0; i < count; i++) {
        if (high[i] >= 0) close(high[i]);
    }
    return status == 0 ? pid : -status;
}

pid_t actomaton_spawn_worker(const char *path, char *const argv[], int channel, int lifeline, int rings) {
    const int sources[] = {-1, -1, -1, channel, lifeline, rings};
    // The host's environment but its secrets: a cluster's database password.
    size_t count = 0;
    while (environ[count]) count++;
    char **kept = calloc(count + 1, sizeof *kept);
    if (!kept) return -ENOMEM;
    size_t used = 0;
    for (size_t i = 0; i < count; i++) {
        if (strncmp(environ[i], "PGPASSWORD=", 11) != 0) kept[used++] = environ[i];
    }
    pid_t pid = spawn_with(path, argv, kept, false, sources, 6);
    free(kept);
    return pid;
}

pid_t actomaton_spawn_filter(const char *path, char *const argv[], int input, int output) {
    const int sources[] = {input, output, -1};
    return spawn_with(path, argv, environ, true, sources, 3);
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

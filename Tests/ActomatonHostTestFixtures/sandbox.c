// A plugin that probes a worker's sandbox, for the host's worker tests: it reads standard
// input and writes forged lines to standard output and error, forks a child that lives on,
// starts threads, and closes the worker's socket. Entry symbol: fixture_sandbox_entry.
// The value it reports (describe: {"value":N}) is what the last probe found.
#define _GNU_SOURCE
#include "fixtures.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define EXPORT __attribute__((visibility("default")))

typedef struct sandbox_state {
    int32_t value;
} sandbox_state;

static void *create(const actomaton_host *host) {
    (void)host;
    return calloc(1, sizeof(sandbox_state));
}

static void destroy(void *state) { free(state); }

static size_t snapshot(const void *state, uint8_t *buffer, size_t capacity) {
    if (capacity >= 4) memcpy(buffer, &((const sandbox_state *)state)->value, 4);
    return 4;
}

static actomaton_status restore(void *state, const uint8_t *bytes, size_t length) {
    if (length != 4) return ACTOMATON_ERROR;
    memcpy(&((sandbox_state *)state)->value, bytes, 4);
    return ACTOMATON_OK;
}

static size_t describe(const void *state, char *buffer, size_t capacity) {
    char text[64];
    int length = snprintf(text, sizeof text, "{\"value\":%d}", ((const sandbox_state *)state)->value);
    if ((size_t)length <= capacity) memcpy(buffer, text, (size_t)length);
    return (size_t)length;
}

static actomaton_status set(void *state, int32_t value) {
    ((sandbox_state *)state)->value = value;
    return ACTOMATON_OK;
}

// Reads whatever standard input holds right now (the value: how many bytes, -1 on an error),
// then writes forged lines and terminal escapes to standard output and error.
static actomaton_status stdio(void *state) {
    sandbox_state *s = state;
    char buffer[4096];
    int32_t total = 0;
    struct pollfd poller = {.fd = 0, .events = POLLIN};
    while (poll(&poller, 1, 0) == 1 && (poller.revents & POLLIN)) {
        ssize_t n = read(0, buffer, sizeof buffer);
        if (n < 0) { total = -1; break; }
        if (n == 0) break;
        total += (int32_t)n;
    }
    s->value = total;
    static const char out[] = "FORGED output line\n\x1b[2J";
    static const char err[] = "error: FORGED error line\n\x1b]0;title\a";
    (void)!write(1, out, sizeof out - 1);
    (void)!write(2, err, sizeof err - 1);
    return ACTOMATON_OK;
}

// Tries to start a process that exits at once, one way or another (`how`): 0 fork, 1
// posix_spawn, 2 system, 3 the fork system call (x86-64), 4 clone3, 5 clone with SIGCHLD. The
// value is 0 when a process started (and was reaped), else the errno of the attempt.
static actomaton_status start_process(void *state, uint32_t how) {
    int error = 0;
    pid_t child = -1;
    errno = 0;
    switch (how) {
    case 0:
        child = fork();
        if (child == 0) _exit(0);
        break;
    case 1: {
        char *const argv[] = {"true", NULL};
        error = posix_spawn(&child, "/bin/true", NULL, NULL, argv, environ);
        if (error != 0) child = -1;
        break;
    }
    case 2: {
        // A shell that could not start reads as one that exited with 127; errno says why.
        int status = system("exit 0");
        ((sandbox_state *)state)->value = status == 0 ? 0 : (errno != 0 ? errno : -1);
        return ACTOMATON_OK;
    }
    case 3:
#ifdef SYS_fork
        child = (pid_t)syscall(SYS_fork);
        if (child == 0) _exit(0);
#else
        errno = ENOSYS;
#endif
        break;
    case 4: {
#ifdef SYS_clone3
        struct { uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls; } args = {.exit_signal = SIGCHLD};
        child = (pid_t)syscall(SYS_clone3, &args, sizeof args);
        if (child == 0) _exit(0);
#else
        errno = ENOSYS;
#endif
        break;
    }
    case 5:
        child = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
        if (child == 0) _exit(0);
        break;
    default:
        return ACTOMATON_ERROR;
    }
    if (child > 0) {
        int status;
        waitpid(child, &status, 0);
    } else if (error == 0) {
        error = errno;
    }
    ((sandbox_state *)state)->value = child > 0 ? 0 : error;
    return ACTOMATON_OK;
}

// Tries to reach outside the worker (`how`): 0 run /bin/true in its place (execve), 1 trace the
// host (ptrace), 2 open the host's memory, 3 open the host's environment, 4 signal the host
// (signal 0: only whether it may), 5 signal itself (signal 0), 6 read the host's memory with
// process_vm_readv; files and the network: 7 read /etc/passwd, 8 make a file in /tmp
// (O_TMPFILE: nothing is left), 9 read /etc/passwd from a thread it starts, 10 make a TCP
// socket, 11 make a Unix socket, 12 set up io_uring; what Landlock leaves open, on the file
// /tmp/actomaton-sandbox-probe-HOSTPID the test made: 13 chmod it, 14 set an extended attribute,
// 18 watch /tmp (inotify); 15 read the host's resource limits (prlimit64), 16 make a datagram
// socket pair, 17 read the session keyring's ID. The value is 0 when it could, else the errno.
static void probe_path(char *path, size_t size) {
    snprintf(path, size, "/tmp/actomaton-sandbox-probe-%d", (int)getppid());
}

static void *read_passwd(void *result) {
    int fd = open("/etc/passwd", O_RDONLY | O_CLOEXEC);
    *(int *)result = fd >= 0 ? 0 : errno;
    if (fd >= 0) close(fd);
    return NULL;
}

static int opened(int fd) {
    if (fd < 0) return -1;
    close(fd);
    return 0;
}

static actomaton_status reach(void *state, uint32_t how) {
    pid_t host = getppid();
    char path[64];
    int result = -1;
    errno = 0;
    switch (how) {
    case 0: {
        char *const argv[] = {"true", NULL};
        execve("/bin/true", argv, environ);
        break;
    }
    case 1:
        result = (int)ptrace(PTRACE_SEIZE, host, NULL, NULL);
        if (result == 0) ptrace(PTRACE_DETACH, host, NULL, NULL);
        break;
    case 2:
    case 3:
        snprintf(path, sizeof path, "/proc/%d/%s", (int)host, how == 2 ? "mem" : "environ");
        result = open(path, O_RDONLY);
        if (result >= 0) { close(result); result = 0; }
        break;
    case 4: result = kill(host, 0); break;
    case 5: result = kill(getpid(), 0); break;
    case 6: {
        char byte;
        struct iovec local = {&byte, 1}, remote = {(void *)&byte, 1};
        result = syscall(SYS_process_vm_readv, host, &local, 1, &remote, 1, 0) == 1 ? 0 : -1;
        break;
    }
    case 7: result = opened(open("/etc/passwd", O_RDONLY | O_CLOEXEC)); break;
    case 8: result = opened(open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600)); break;
    case 9: {
        int found = -1;
        pthread_t thread;
        if (pthread_create(&thread, NULL, read_passwd, &found) != 0) return ACTOMATON_ERROR;
        pthread_join(thread, NULL);
        ((sandbox_state *)state)->value = found;
        return ACTOMATON_OK;
    }
    case 10: result = opened(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)); break;
    case 11: result = opened(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)); break;
    case 13: probe_path(path, sizeof path); result = chmod(path, 0666); break;
    case 14: probe_path(path, sizeof path); result = setxattr(path, "user.probe", "x", 1, 0); break;
    case 15: {
        struct rlimit limit;
        result = (int)syscall(SYS_prlimit64, host, RLIMIT_NOFILE, NULL, &limit);
        break;
    }
    case 16: {
        int pair[2];
        result = socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair);
        if (result == 0) { close(pair[0]); close(pair[1]); }
        break;
    }
    case 17: result = (int)syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3 /* the session keyring */, 0) >= 0 ? 0 : -1; break;
    case 18: {
        int watcher = inotify_init1(IN_CLOEXEC);
        if (watcher < 0) break;
        result = inotify_add_watch(watcher, "/tmp", IN_CREATE) >= 0 ? 0 : -1;
        int saved = errno;
        close(watcher);
        errno = saved;
        break;
    }
    case 12: {
        char parameters[120] = {0};
        result = opened((int)syscall(425 /* io_uring_setup */, 1, parameters));
        break;
    }
    default:
        return ACTOMATON_ERROR;
    }
    ((sandbox_state *)state)->value = result == 0 ? 0 : errno;
    return ACTOMATON_OK;
}

// Whether PGPASSWORD is in its environment: 1 or 0.
static actomaton_status environment(void *state) {
    ((sandbox_state *)state)->value = getenv("PGPASSWORD") ? 1 : 0;
    return ACTOMATON_OK;
}

// Forks a child that blocks for ever; the value is its process ID.
static actomaton_status fork_child(void *state) {
    pid_t child = fork();
    if (child < 0) return ACTOMATON_ERROR;
    if (child == 0) {
        for (;;) pause();
    }
    ((sandbox_state *)state)->value = (int32_t)child;
    return ACTOMATON_OK;
}

static void *block(void *unused) {
    (void)unused;
    for (;;) pause();
    return NULL;
}

// Starts two threads that block for ever; the value is how many started.
static actomaton_status start_threads(void *state) {
    int32_t started = 0;
    for (int i = 0; i < 2; i++) {
        pthread_t thread;
        if (pthread_create(&thread, NULL, block, NULL) == 0) {
            pthread_detach(thread);
            started += 1;
        }
    }
    ((sandbox_state *)state)->value = started;
    return ACTOMATON_OK;
}

// Closes the worker's socket (descriptor 3) and blocks: the worker lives on, unreachable.
static actomaton_status close_channel(void *state) {
    (void)state;
    close(3);
    for (;;) pause();
    return ACTOMATON_OK;
}

static const actomaton_parameter value_parameters[] = {{"value", ACTOMATON_TYPE_INT32}};
static const actomaton_parameter how_parameters[] = {{"how", ACTOMATON_TYPE_UINT32}};

static const actomaton_action sandbox_actions[] = {
    {"set", value_parameters, 1, (actomaton_function)set},
    {"stdio", NULL, 0, (actomaton_function)stdio},
    {"fork_child", NULL, 0, (actomaton_function)fork_child},
    {"start_process", how_parameters, 1, (actomaton_function)start_process},
    {"reach", how_parameters, 1, (actomaton_function)reach},
    {"environment", NULL, 0, (actomaton_function)environment},
    {"start_threads", NULL, 0, (actomaton_function)start_threads},
    {"close_channel", NULL, 0, (actomaton_function)close_channel},
};

static const actomaton_manifest sandbox = {
    .abi_version = ACTOMATON_PLUGIN_ABI_VERSION, .name = "sandbox", .version = "0.1",
    .summary = "Probes a worker's sandbox", .actions = sandbox_actions,
    .action_count = sizeof sandbox_actions / sizeof sandbox_actions[0],
    .create = create, .destroy = destroy, .snapshot = snapshot, .restore = restore, .describe = describe,
};

EXPORT const actomaton_manifest *fixture_sandbox_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return &sandbox;
}

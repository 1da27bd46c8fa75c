// Process control for plugin workers: what Swift's Glibc module does not bring in (prctl,
// posix_spawn with closefrom and process groups, pidfd, thread names). Nothing else includes <sys/prctl.h>.
#ifndef ACTOMATON_PROCESS_CONTROL_H
#define ACTOMATON_PROCESS_CONTROL_H

#include <sys/types.h>

// Sets PR_SET_NO_NEW_PRIVS on the calling thread (and every thread it starts from then on):
// nothing it runs can gain privileges. Call it before any other thread exists. 0 or -errno.
int actomaton_set_no_new_privileges(void);

// The read end of this process's lifeline pipe, made on first use: its write end stays open,
// close-on-exec, until this process ends, so a worker given the read end sees it hang up then,
// whichever thread started the worker. A descriptor, or -errno.
int actomaton_worker_lifeline(void);

// Starts `path` with `argv` (NULL-terminated) in a process group of its own, with /dev/null as
// descriptors 0, 1 and 2, `channel` as 3, `lifeline` as 4, `rings` (the shared region, see
// shared_ring.h) as 5, every other descriptor closed, no signal blocked, and this process's
// environment without PGPASSWORD (a cluster's database password). Returns the process ID (also
// the group's ID), or -errno.
pid_t actomaton_spawn_worker(const char *path, char *const argv[], int channel, int lifeline, int rings);

// Starts `path` (looked up on PATH when it has no slash) with `argv` (NULL-terminated) as a
// filter: `input` as its descriptor 0, `output` as 1, /dev/null as 2, every other descriptor
// closed, in a process group of its own, no signal blocked. Returns the process ID, or -errno.
pid_t actomaton_spawn_filter(const char *path, char *const argv[], int input, int output);

// In a worker: starts a thread that kills the worker's process group (the worker and whatever
// it forked) when `lifeline` hangs up, that is when the host is gone. 0 or -errno (-EBADF when
// `lifeline` is not open).
int actomaton_watch_lifeline(int lifeline);

// A descriptor that becomes readable when the process `pid` ends (a pidfd, close-on-exec),
// or -errno.
int actomaton_open_process(pid_t pid);

// Waits up to `milliseconds` for the child `pid` to end, without reaping it. 1 when it ended,
// 0 when it still runs, -errno on failure.
int actomaton_wait_for_exit(pid_t pid, int milliseconds);

// In a worker, before it loads a plugin: drops every capability, then puts a seccomp filter on
// every thread (needs PR_SET_NO_NEW_PRIVS first). Whatever `allow_processes`, no thread can trace
// another process, read or write its memory, or use a pidfd. Unless `allow_processes`, none can
// start a process or run a program — fork, vfork, execve, execveat, posix_spawn, system and clone
// without CLONE_THREAD fail with EPERM, clone3 with ENOSYS (the C library falls back to clone),
// while threads still start — nor signal any process but its own group and itself. Calls of
// another system-call ABI fail with EPERM. Whatever is allowed, prlimit64 reaches only itself and
// the kernel's keyrings are closed (keyctl, add_key, request_key). Unless `allow_network`,
// socket, socketpair and io_uring_setup fail with EPERM: no socket of any family (the channel to
// the host was made before). Unless `allow_files`, what Landlock leaves open fails with EPERM:
// changing a file's mode, owner, times or extended attributes, reading extended attributes, and
// watching files (inotify, fanotify). 0, or -errno (-ENOSYS on a processor it does not know).
int actomaton_restrict_worker(int allow_processes, int allow_network, int allow_files);

// In a worker, before its first thread starts: a Landlock domain (Linux 5.13+) on the calling
// thread and every thread and process it starts, in which no file can be opened, made, removed,
// renamed or linked but to read or run what is beneath /usr, /lib, /lib64, /bin, /sbin and the
// directories of the objects loaded so far (the Swift runtime's among them), and to read
// /etc/ld.so.cache and the file at `plugin_path`. Anonymous memory files (memfd_create) are not
// files of any directory, and stay usable. 0, or -errno (-ENOSYS or -EOPNOTSUPP: a kernel without
// Landlock).
int actomaton_confine_files(const char *plugin_path);

// An anonymous memory file (memfd_create, close-on-exec) named `name`: its descriptor, or -errno.
int actomaton_memory_file(const char *name);

// An event counter (eventfd, close-on-exec, non-blocking) a thread can poll beside other
// descriptors and another thread can wake it through: its descriptor, or -errno.
int actomaton_event_descriptor(void);

// In the host, before it starts a worker: makes the host undumpable, so that a worker without
// capabilities cannot open its /proc files (its memory, its environment). 0 or -errno.
int actomaton_set_undumpable(void);

// Names the calling thread (PR_SET_NAME; Linux keeps the first 15 bytes), for `top -H` and
// debuggers. 0 or -errno.
int actomaton_set_thread_name(const char *name);

#endif

/* SPDX-License-Identifier: MIT */
/* Private to `agentfs exec`: src/cmd-exec.c and src/exec-unix.c. */
#ifndef AGENTFS_EXEC_H
#define AGENTFS_EXEC_H

#include <stdbool.h>
#include <sys/types.h>

/* A NULL-terminated argv that grows. */
struct argv_buf {
	char **v;
	size_t n, cap;
};

/* cmd-exec.c */
void exec_arg(struct argv_buf *a, const char *s);

/* exec-unix.c */
void exec_hide_host_sockets(struct argv_buf *a, bool network);
void exec_landlock_scope(void);
void exec_unix_confine(int chan, bool optional);
int exec_unix_guard_start(const char *agent_socket);
int exec_unix_guard_fd(void);
void exec_unix_guard_serve(short revents);

#endif

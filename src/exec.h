/* SPDX-License-Identifier: MIT */
/* Private to `agentfs exec`: src/cmd-exec.c, src/exec-env.c, src/exec-user.c, src/exec-unix.c. */
#ifndef AGENTFS_EXEC_H
#define AGENTFS_EXEC_H

#include <stdbool.h>
#include <sys/types.h>

/* A NULL-terminated argv that grows. */
struct argv_buf {
	char **v;
	size_t n, cap;
};

#define MAX_GROUPS 256

/* Who the bot's user is: its uid, primary gid and supplementary groups. */
struct ids {
	uid_t uid;
	gid_t gid;
	gid_t groups[MAX_GROUPS];
	int ngroups;
};

/* cmd-exec.c */
void exec_arg(struct argv_buf *a, const char *s);

/* exec-env.c */
char *exec_find_in_path(const char *prog);
bool exec_in_path(const char *prog);
void exec_loader_vars_hold(struct argv_buf *a);
void exec_loader_vars_restore(void);
void exec_loader_vars_clear(void);

/* exec-user.c */
void exec_user_ids(uid_t uid, struct ids *id);
void exec_become(const struct ids *id);
char *exec_ids_format(const struct ids *id);
bool exec_ids_parse(const char *s, struct ids *id);

/* exec-unix.c */
void exec_hide_host_sockets(struct argv_buf *a, bool network);
void exec_landlock_scope(void);
void exec_unix_confine(int chan, bool optional);
int exec_unix_guard_start(const char *agent_socket);
int exec_unix_guard_fd(void);
void exec_unix_guard_serve(short revents);

#endif

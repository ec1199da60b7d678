/* SPDX-License-Identifier: MIT */
/*
 * Private to `agentfs exec`. Who does what, by privilege context:
 *   cmd-exec.c   the outer agentfs exec: options, the plan dialogue with
 *                agentfsd, bwrap's command line, supervising it
 *   exec-guard.c the outer agentfs exec's connect guard (seccomp supervisor)
 *   exec-as.c    agentfs exec --as, the sandbox's first program: becomes
 *                the bot's user, installs the filter, runs the command
 *   exec-user.c  who the bot's user is, and becoming it
 *   exec-env.c   which bwrap is run, and the loader variables
 */
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

/* exec-as.c */
int exec_as(int argc, char **argv);
void exec_run_command(char **cmd) __attribute__((noreturn));
void exec_landlock_scope(void);
void exec_filter(int chan, bool optional);
void exec_session_keyring(void);

/* exec-guard.c */
void exec_hide_host_sockets(struct argv_buf *a, bool network);
int exec_unix_guard_start(const char *agent_socket);
int exec_unix_guard_fd(void);
void exec_unix_guard_serve(short revents);

#endif

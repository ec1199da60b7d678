/* SPDX-License-Identifier: MIT */
/*
 * Private to `agentfs exec`. Who does what, by privilege context:
 *   cmd-exec.c   the outer agentfs exec (the caller: root, or the operator
 *                the bot runs as): options, the plan dialogue with
 *                agentfsd, running bwrap and supervising it
 *   exec-bwrap.c bwrap's command line from the plan (the argument table),
 *                who the bot's user is, the launch of a waiting bwrap child,
 *                and what bwrap tells back (its status, its stderr)
 *   exec-guard.c the outer agentfs exec's connect guard (seccomp supervisor)
 *   exec-as.c    the sandbox's first program (agentfs-enter, a program of its
 *                own: enter.c; `agentfs exec --as` for an older agentfsd):
 *                becomes the bot's user, installs the filter, runs the command
 *   exec-user.c  becoming the bot's user, and its ids on a command line
 *   exec-env.c   the command's environment: -e, --env-file, the loader
 *                variables
 */
#ifndef AGENTFS_EXEC_H
#define AGENTFS_EXEC_H

#include <poll.h>
#include <stdbool.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

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

/* One sandbox, from the plan and the options: what bwrap's command line is made of. */
struct sandbox_setup {
	const cJSON *plan;
	const char *bwrap; /* the plan's: the bwrap agentfsd trusts */
	const char *enter; /* the plan's agentfs-enter; NULL: an older agentfsd, exec --as */
	const char *cwd;
	char **cmd;
	uid_t uid;	   /* the bot's user */
	bool network;	   /* the bot has network: no guard */
	bool userns;	   /* the caller is not root: bwrap makes a user namespace */
	bool tty;	   /* the command takes our pty as its controlling terminal */
	int term;	   /* the caller's terminal among its 0, 1, 2, or -1: any makes a pty */
	bool host_sockets; /* --allow-host-sockets */
	int status_w;	   /* bwrap's --json-status-fd */
	int unix_chan;	   /* the guard's channel for agentfs-enter; -1: none (network) */
	int err_fd;	   /* the number the command's standard error has inside */
};

/* What bwrap said on its --json-status-fd (exec_bwrap_status_read). */
struct bwrap_status {
	char buf[4096];
	size_t len, parsed;
	pid_t init;   /* the sandbox's init, once reported; 0: not yet */
	bool started; /* it reported an exit code: the setup was done, the command ran */
};

/*
 * bwrap's own standard error. The command writes to the real one (agentfs-enter
 * --stderr), so this carries only what bwrap says: kept until bwrap is done
 * (a setup that fails is tried again, quietly), passed on at once when it
 * is more than a setup error would be.
 */
struct bwrap_err {
	int fd;
	bool passed; /* what was kept went out; the rest follows as it comes */
	size_t len;
	char buf[4096];
};

/* exec-bwrap.c */
void exec_arg(struct argv_buf *a, const char *s);
void exec_args_free(struct argv_buf *a);
const char *exec_jstr(const cJSON *o, const char *k);
void exec_plan_ids(const cJSON *plan, uid_t uid, struct ids *id);
/* exec-tty.c: the caller's terminal */
int exec_terminal_fd(void);
void exec_pty_open(int term, int *master, int *slave);
bool exec_cooked_input(int master);

void exec_bwrap_args(struct argv_buf *a, const struct sandbox_setup *sb);
int exec_private_mounts(void);
void exec_bwrap_status_read(int fd, struct bwrap_status *st);
void exec_bwrap_err_read(struct bwrap_err *e);
void exec_bwrap_err_flush(struct bwrap_err *e, bool done);
int exec_keep_only_fds(const int *keep, size_t n);
/* In the bwrap child: each --ro-bind-fd source exec_bwrap_args named by path, opened (O_PATH) */
int exec_fd_args(char **argv);

/*
 * What a bwrap child forked before the plan is sent when it may start
 * (agentfsd registered it): the descriptors it keeps, then argc and envc
 * strings, each ended by a NUL, to the end of the pipe.
 */
struct launch_head {
	int keep[3];
	uint32_t argc, envc;
};
int exec_launch_write(int fd, const int keep[3], const struct argv_buf *a);
bool exec_launch_read(int fd, struct launch_head *h, char ***argv, char ***env);

/* exec-env.c */
bool exec_in_path(const char *prog);
void exec_loader_vars_hold(struct argv_buf *a);
void exec_git_env(struct argv_buf *a);
void exec_loader_vars_restore(void);
void exec_loader_vars_clear(void);
void exec_env_set(const char *assignment);
void exec_env_file(const char *path);

/* exec-user.c */
void exec_become(const struct ids *id);
void exec_stay(uid_t uid);
char *exec_ids_format(const struct ids *id);
bool exec_ids_parse(const char *s, struct ids *id);

/* exec-as.c */
int exec_as(int argc, char **argv);
void exec_run_command(char **cmd) __attribute__((noreturn));
void exec_landlock_scope(void);
void exec_filter(int chan, bool optional);
void exec_session_keyring(void);

/* exec-guard.c */
#define EXEC_GUARD_FDS 65 /* the most descriptors the guard has poll watch */
bool exec_socket_var(const char *name);
void exec_hide_host_sockets(struct argv_buf *a, bool network);
int exec_unix_guard_chan(void);
void exec_unix_guard_start(const char *agent_socket, bool network, int sandbox_end);
int exec_unix_guard_pollfds(struct pollfd *pf);
void exec_unix_guard_serve(const struct pollfd *pf, int n);

#endif

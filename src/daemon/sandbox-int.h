/* SPDX-License-Identifier: MIT */
/*
 * Private to src/daemon/sandbox.c (the records: made, registered, taken
 * back), src/daemon/sandbox-disk.c (kept on disk) and src/daemon/sandbox-ops.c
 * (what is done to them and told of them: limits and cgroups, signals,
 * rm --force, show and ps).
 */
#ifndef AGENTFS_SANDBOX_INT_H
#define AGENTFS_SANDBOX_INT_H

#include "src/daemon/bots-int.h"

#include <sys/syscall.h>
#include <unistd.h>

/*
 * A sandbox running a bot's commands: the `agentfs exec` that asked and the
 * bwrap it started (whose death, by --die-with-parent, ends every process
 * in the sandbox). Each is held by pidfd, so a signal can only reach the
 * processes that registered, never a later one with the same pid; on disk
 * each is named by its pid and start time, which a restarted daemon checks
 * before it takes them back. The record goes when the exec ends (its pidfd
 * becomes readable). Loop only, as the bots are.
 */
struct sandbox_run {
	struct bot *bot;
	pid_t pid; /* the agentfs exec (for danger-full-access, the command) */
	int pidfd; /* always held */
	unsigned long long pid_start;
	pid_t child; /* its bwrap, once registered; 0: none */
	int childfd; /* -1: none */
	unsigned long long child_start;
	pid_t init; /* the sandbox's init, from a client that reports it; 0: none */
	int initfd;
	uid_t uid;		       /* the client's, who registered it */
	uid_t run_uid;		       /* the bot's user when it started */
	time_t started;		       /* wall clock */
	cJSON *argv;		       /* the command, as the client gave it (capped) */
	char cg[BOT_NAME_MAX + 24];    /* its cgroup's name (cgroup.c), "" without */
	uint64_t memory_max, pids_max; /* the limits it was started with */
	struct event *ev;
	LIST_ENTRY(sandbox_run) entry;
};

#define SANDBOXES_MAX 256 /* per bot */

static inline int pidfd_open_pid(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static inline int pidfd_signal(int fd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0);
}

/* sandbox-disk.c */
void sandboxes_save(void);
const cJSON *sandboxes_unsure(void); /* sandbox.c: records not taken back, kept */
void sandbox_log_add(const struct sandbox_run *sb);
bool sandbox_log_end(const struct sandbox_run *sb);
void sandboxes_disk_stop(void);
cJSON *sandboxes_read(void);
bool sandboxes_unread(void);
bool sandboxes_take_back(void); /* sandbox.c */

/* sandbox-ops.c */
void sandbox_cgroup_end(const char *name);
void sandbox_cgroups_stop(int wait_ms);
void sandbox_cgroups_sweep(void);
void sandbox_signal(struct sandbox_run *sb, int sig);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * agentfs-enter (src/enter/enter.c; `agentfs exec --as` for an older agentfsd):
 * the sandbox's first program, inside bwrap's
 * namespaces: root with CAP_SETUID and CAP_SETGID only (bwrap run by root),
 * or already the operator (bwrap run by an operator who is not root, in a
 * user namespace of its own). It becomes the bot's user for good, gives the
 * command a session keyring of its own, confines what is left to confine
 * from inside (Landlock scopes, the seccomp filter whose listener goes to
 * the outer agentfs exec: exec-guard.c) and runs the command. Nothing here
 * talks to agentfsd or reads a file a bot chose: its arguments come from
 * the outer agentfs exec, on bwrap's command line.
 */
#include "src/common/agentfs.h"
#include "src/cli/exec.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/keyctl.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

/*
 * Landlock (Linux 6.12, ABI 6): the command may not connect to abstract
 * UNIX sockets or signal processes made outside its sandbox. Without
 * network that is what the network namespace gives already; with network
 * it keeps the host's abstract sockets (X11, D-Bus) out of reach. An older
 * kernel has no such scopes: nothing is done. A kernel that has them and
 * fails to apply them stops the command.
 */
#define LL_CREATE_RULESET 444
#define LL_RESTRICT_SELF 446
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LL_SCOPE_SIGNAL (1ULL << 1)

struct ll_ruleset_attr {
	uint64_t handled_access_fs, handled_access_net, scoped;
};

void exec_landlock_scope(void)
{
	struct ll_ruleset_attr attr = {0, 0, LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL};
	long abi = syscall(LL_CREATE_RULESET, NULL, 0, 1U);
	int fd;

	if (abi < 6)
		return;
	fd = (int)syscall(LL_CREATE_RULESET, &attr, sizeof attr, 0U);
	if (fd < 0)
		die("landlock: cannot make a ruleset: %s", strerror(errno));
	if (syscall(LL_RESTRICT_SELF, fd, 0U) != 0)
		die("landlock: cannot restrict the command: %s", strerror(errno));
	close(fd);
}

/* ---- the filter ------------------------------------------------------------ */

#define X32_SYSCALL_BIT 0x40000000U
#define ARG_LO(n) (offsetof(struct seccomp_data, args) + 8 * (n))
#define RET_ERRNO(e) (SECCOMP_RET_ERRNO | ((e)&SECCOMP_RET_DATA))

/*
 * Every confined command. Another architecture's or x32's syscalls kill
 * the process (i386's socketcall would connect unseen, its keyctl would
 * pass). The kernel's keyrings fail with EPERM, as in podman's and
 * docker's default profiles: they are not namespaced, and the user keyring
 * (@u, @us) is one per uid, the host user's and every bot's of that user,
 * so a bot could read its user's keys, leave keys for another bot, or fill
 * the user's key quota. (A user namespace would give each sandbox user
 * keyrings of its own, but bwrap run as root makes none; the filter works
 * for every sandbox alike.) io_uring is absent: its operations pass no
 * filter (its connect would bypass the guard below).
 */
static const struct sock_filter common_filter[] = {
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_SYSCALL_BIT, 0, 1),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_add_key, 2, 0),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_keyctl, 1, 0),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_request_key, 0, 1),
	BPF_STMT(BPF_RET | BPF_K, RET_ERRNO(EPERM)),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
	BPF_STMT(BPF_RET | BPF_K, RET_ERRNO(ENOSYS)),
};

/*
 * Without network, after common_filter (the syscall number still loaded):
 * connect goes to the supervisor (exec-guard.c); socket and socketpair of
 * AF_UNIX: stream and seqpacket only (AF_UNIX's SOCK_RAW is a datagram
 * socket too); AF_VSOCK (not namespaced: the hypervisor's host) refused.
 */
static const struct sock_filter guard_filter[] = {
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_connect, 0, 1),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 1, 0),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socketpair, 0, 8),
	/* socket / socketpair: the domain (an int: the low 32 bits) */
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(0)),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_VSOCK, 5, 0),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 0, 5),
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(1)),
	BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xf),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SOCK_STREAM, 2, 0),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SOCK_SEQPACKET, 1, 0),
	BPF_STMT(BPF_RET | BPF_K, RET_ERRNO(EACCES)),
};

/*
 * Install common_filter, then guard_filter if guard (its listener is
 * returned), then allow. 0 or the listener, or -1 with errno.
 */
static int filter_install(bool guard)
{
	struct sock_filter prog_buf[sizeof common_filter / sizeof common_filter[0] +
				    sizeof guard_filter / sizeof guard_filter[0] + 1];
	struct sock_fprog prog = {0, prog_buf};
	int fd;

	memcpy(prog_buf, common_filter, sizeof common_filter);
	prog.len = sizeof common_filter / sizeof common_filter[0];
	if (guard) {
		memcpy(prog_buf + prog.len, guard_filter, sizeof guard_filter);
		prog.len += sizeof guard_filter / sizeof guard_filter[0];
	}
	prog_buf[prog.len++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	if (!guard)
		return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
	/* the supervisor needs pidfd_getfd (Linux 5.6): without it, no listener */
	if (syscall(SYS_pidfd_getfd, -1, 0, 0) < 0 && errno == ENOSYS)
		return -1;
	/* Once the supervisor has the notification, only a fatal signal ends the wait. */
	fd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			  SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV,
			  &prog);
	if (fd < 0 && errno == EINVAL)
		fd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
				  SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	return fd;
}

/*
 * In agentfs-enter, once the bot's user: install the filter. With the guard's
 * channel (no network), hand its listener to the outer agentfs exec over
 * chan. A kernel without seccomp user notification and pidfd_getfd (Linux
 * 5.6) stops the command, unless optional (--allow-host-sockets): then the
 * filter goes in without the guard. A kernel that takes no filter at all
 * stops it always: the keyrings would be open.
 */
void exec_filter(int chan, bool optional)
{
	int fd = filter_install(chan >= 0);

	if (fd < 0 && chan >= 0 && optional) {
		fprintf(stderr,
			"agentfs: warning: the kernel refused the seccomp filter's listener (%s): "
			"host pathname sockets are reachable (--allow-host-sockets)\n",
			strerror(errno));
		close(chan);
		chan = -1;
		fd = filter_install(false);
	}
	if (fd < 0 && chan >= 0)
		die("cannot keep host UNIX sockets out of reach: the kernel refused the "
		    "seccomp filter (%s; it needs seccomp user notification and "
		    "pidfd_getfd, Linux 5.6, "
		    "CONFIG_SECCOMP_FILTER). Nothing was run; `agentfs exec "
		    "--allow-host-sockets` runs it with the host's pathname sockets "
		    "reachable",
		    strerror(errno));
	if (fd < 0)
		die("cannot keep the kernel's keyrings out of reach: the kernel refused the "
		    "seccomp filter (%s; CONFIG_SECCOMP_FILTER). Nothing was run",
		    strerror(errno));
	if (chan < 0)
		return;
	if (fdpass_send(chan, NULL, 0, "L", fd) != 0)
		die("cannot hand the seccomp listener to agentfs exec: %s", strerror(errno));
	close(fd);
	close(chan);
}

/*
 * A session keyring of the command's own, made as the bot's user: the
 * caller's (a login's, with root's user keyring linked in by pam_keyinit)
 * must not come in. The filter refuses keyctl to the command, but the
 * kernel itself still searches the session keyring for keys it needs
 * (fscrypt v1 and ecryptfs keys, request_key upcalls). It costs one key of
 * the user's quota (/proc/sys/kernel/keys/maxkeys) while the sandbox runs.
 */
void exec_session_keyring(void)
{
	if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) < 0 && errno != ENOSYS)
		die("cannot give the command a session keyring of its own: %s%s", strerror(errno),
		    errno == EDQUOT ? " (the user's key quota, /proc/sys/kernel/keys/maxkeys, "
				      "is used up)"
				    : "");
}

/*
 * Run CMD as shells do: 127 if it is not found, 126 if it cannot be run,
 * with the reason on stderr.
 */
void exec_run_command(char **cmd)
{
	int e;

	execvp(cmd[0], cmd);
	e = errno;
	/* execvp says EACCES for a PATH folder it may not search: found nowhere is 127. */
	if (e == EACCES && strchr(cmd[0], '/') == NULL && !exec_in_path(cmd[0]))
		e = ENOENT;
	if (e == ENOENT && strchr(cmd[0], '/') == NULL)
		fprintf(stderr, "agentfs: %s: command not found\n", cmd[0]);
	else
		fprintf(stderr, "agentfs: cannot run %s: %s\n", cmd[0], strerror(e));
	exit(e == ENOENT || e == ENOTDIR ? 127 : 126);
}

/*
 * Inside the sandbox, as its first program: bwrap starts agentfs-enter (or,
 * from an agentfsd that names none, `agentfs exec --as`) with
 * `IDS [OPTIONS] -- CMD` (ARGV[0] is IDS), which becomes the bot's user
 * for good and runs CMD. Run as root (bwrap run by root, every capability
 * dropped but CAP_SETUID and CAP_SETGID), IDS is UID:GID:GROUPS and the
 * switch from root clears every capability; in an operator's user
 * namespace, IDS is =UID, the operator, which it already is.
 *   --unix=FD[,optional]  no network: the guard's channel (exec-guard.c)
 *   --stderr=FD           the command's standard error; bwrap's own is a
 *                         pipe the outer agentfs exec reads
 *   --ctty                standard input is our pty: take it as the
 *                         controlling terminal, in a session of our own
 *                         (bwrap's --new-session made one for its init,
 *                         whose child this is, so this is no group leader)
 */
int exec_as(int argc, char **argv)
{
	struct ids id;
	int cmd = 1, chan = -1, err_fd = -1;
	bool optional = false, ctty = false;
	bool bad = argc < 2 || !exec_ids_parse(argv[0], &id) || id.uid == 0;
	char *end;

	for (; !bad && cmd < argc && strcmp(argv[cmd], "--") != 0; cmd++) {
		if (strncmp(argv[cmd], "--unix=", 7) == 0) {
			chan = (int)strtol(argv[cmd] + 7, &end, 10);
			optional = strcmp(end, ",optional") == 0;
			bad = chan < 3 || (*end != '\0' && !optional);
		} else if (strncmp(argv[cmd], "--stderr=", 9) == 0) {
			err_fd = (int)strtol(argv[cmd] + 9, &end, 10);
			bad = err_fd < 3 || *end != '\0';
		} else if (strcmp(argv[cmd], "--ctty") == 0) {
			ctty = true;
		} else {
			bad = true;
		}
	}
	if (bad || cmd + 1 >= argc)
		die("bad arguments: this is the first program of an agentfs exec sandbox, and only "
		    "agentfs exec runs it");
	if (err_fd >= 0 && (dup2(err_fd, STDERR_FILENO) < 0 || close(err_fd) != 0))
		die("no standard error for the command: %s", strerror(errno));
	if (id.ngroups < 0)
		exec_stay(id.uid);
	else
		exec_become(&id);
	exec_session_keyring();
	if (ctty && (setsid() < 0 || ioctl(STDIN_FILENO, TIOCSCTTY, 0) != 0))
		die("cannot take the terminal as the command's own: %s", strerror(errno));
	exec_landlock_scope();
	exec_filter(chan, optional);
	exec_loader_vars_restore();
	exec_run_command(argv + cmd + 1);
}

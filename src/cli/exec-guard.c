/* SPDX-License-Identifier: MIT */
/*
 * agentfs exec: the supervisor of a confined command's connects, in the
 * outer agentfs exec (root, or the operator the bot runs as), outside the
 * sandbox.
 *
 * With network off, TCP, UDP and abstract UNIX sockets are cut by the
 * sandbox's own network namespace, and /run is hidden. A pathname UNIX
 * socket elsewhere on the host (a 0666 mysql.sock, ~/.docker/run/docker.sock)
 * is a file: connect() needs no write to the filesystem, and Landlock (up to
 * ABI 7) has no control over it. So, with network off, the command runs under
 * a seccomp filter (exec-as.c) that hands every connect(2) to this
 * supervisor, which connects the command's own socket for it: to its
 * AGENT_SOCKET, to a socket listening in the sandbox's network namespace, or
 * to anything that is not a pathname, and answers EACCES to the rest. It
 * never lets the kernel go on with the command's own arguments
 * (SECCOMP_USER_NOTIF_FLAG_CONTINUE): another thread of the command could
 * change the address, the path or the fd between our check and the kernel's
 * reading. What is checked is what is connected:
 *  - the address is copied once from the command's memory;
 *  - the socket is the command's own open file (pidfd_getfd);
 *  - the path is opened once (O_PATH, as the bot's user, from the command's
 *    root and folder, symbolic links followed as connect would but no /proc
 *    magic link), the inode checked, and the connect goes through
 *    /proc/self/fd/N, a magic link to that very inode.
 * Sockets that carry an address per message are cut instead: AF_UNIX
 * datagram sockets (socket and socketpair: a connected pair can still
 * sendto(2) any path), AF_VSOCK, and io_uring (its connect bypasses seccomp).
 *
 * Each connect is served by a walker: a child process of this one, which
 * joins the command's user (if it has one of its own), mount and network
 * namespaces, takes its root and folder, becomes its user with no
 * capability, opens, checks and connects, and exits with the errno to
 * answer. Nothing it took can leak back: it ends after one connect. The
 * supervisor keeps no threads; a walker's pidfd tells when it is done.
 */
#include "fusefs/fusefs.h"
#include "src/common/agentfs.h"
#include "src/cli/exec.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/netlink.h>
#include <linux/openat2.h>
#include <linux/rtnetlink.h>
#include <linux/seccomp.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif

/* Variables that name host sockets and agents: never passed in. */
static const char *const socket_vars[] = {
	"SSH_AUTH_SOCK",	   "SSH_AGENT_PID",  "DBUS_SESSION_BUS_ADDRESS",
	"DBUS_SYSTEM_BUS_ADDRESS", "GPG_AGENT_INFO", "XDG_RUNTIME_DIR",
	"WAYLAND_DISPLAY",	   "DISPLAY",	     "XAUTHORITY",
};

/* Is name one of them? (exec -e may not set one: see exec_env_set) */
bool exec_socket_var(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof socket_vars / sizeof socket_vars[0]; i++)
		if (strcmp(name, socket_vars[i]) == 0)
			return true;
	return false;
}

/*
 * Host sockets: TCP, UDP and abstract UNIX sockets live in the network
 * namespace, which a bot without network does not share. Pathname sockets
 * are files: the host's services keep theirs under /run (/var/run links
 * there), which a bot without network gets empty; /tmp is private anyway;
 * the rest is the guard's (below). The variables that point at agents are
 * dropped for every bot.
 */
void exec_hide_host_sockets(struct argv_buf *a, bool network)
{
	struct stat st;
	size_t i;

	for (i = 0; i < sizeof socket_vars / sizeof socket_vars[0]; i++) {
		exec_arg(a, "--unsetenv");
		exec_arg(a, socket_vars[i]);
	}
	if (network)
		return;
	if (stat("/run", &st) == 0 && S_ISDIR(st.st_mode)) {
		exec_arg(a, "--tmpfs");
		exec_arg(a, "/run");
	}
	if (lstat("/var/run", &st) == 0 && S_ISDIR(st.st_mode)) {
		exec_arg(a, "--tmpfs");
		exec_arg(a, "/var/run");
	}
}

static int recv_fd(int chan)
{
	char byte, cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {&byte, 1};
	struct msghdr m = {0};
	struct cmsghdr *c;
	int fd = -1;

	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = cbuf;
	m.msg_controllen = sizeof cbuf;
	if (recvmsg(chan, &m, MSG_CMSG_CLOEXEC) != 1)
		return -1;
	c = CMSG_FIRSTHDR(&m);
	if (c != NULL && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
	    c->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(&fd, CMSG_DATA(c), sizeof fd);
	return fd;
}

#define MAX_PENDING (EXEC_GUARD_FDS - 1)

/* A connect being served: the notification and the walker serving it. */
struct walk {
	uint64_t id;  /* the notification's */
	uint32_t pid; /* the command's thread that asked (for the log) */
	pid_t walker;
	int pidfd; /* the walker's; -1: a free slot */
};

/*
 * The guard's state, one per agentfs exec, on its one thread: chan until
 * the listener comes, then listener (kept to the end: it is what answers);
 * done once no filtered process is left; the AGENT_SOCKET's inode, set
 * before the sandbox starts.
 */
static struct {
	int chan, listener;
	bool done;
	bool have_agent;
	dev_t agent_dev;
	ino_t agent_ino;
	struct walk walks[MAX_PENDING];
} guard = {.chan = -1, .listener = -1};

static void answer(uint64_t id, int err)
{
	struct seccomp_notif_resp resp = {id, 0, -err, 0};

	/* ENOENT: the command was killed meanwhile, nothing waits for us. */
	ioctl(guard.listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

/* ---- the walker (a child process, one connect) ------------------------------ */

/* The walker's answer when it failed itself (it said why on stderr). */
#define WALK_FAILED 255

static void __attribute__((noreturn, format(printf, 2, 3)))
walk_fail(uint32_t pid, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	int e = errno;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	/* a plain write: the walker is a child of a process that may hold stdio locks */
	dprintf(STDERR_FILENO, "agentfs: host-socket guard: pid %u: %s: %s (connect refused)\n",
		(unsigned)pid, msg, strerror(e));
	_exit(WALK_FAILED);
}

/* The target's file ids and groups, as the kernel sees them in /proc/PID/status. */
struct target {
	int proc, pidfd, root, cwd;
	uid_t uid;
	gid_t gid, groups[MAX_GROUPS];
	int ngroups;
	bool own_userns; /* it has a user namespace other than ours */
};

static int target_ids(struct target *t)
{
	char buf[8192], *p, *end;
	unsigned long v;

	if (read_text(t->proc, "status", buf, sizeof buf) <= 0)
		return -1;
	/* "Uid:\treal\teffective\tsaved\tfs": the fs ids decide file access. */
	if ((p = strstr(buf, "\nUid:")) == NULL ||
	    sscanf(p, "\nUid: %*u %*u %*u %u", &t->uid) != 1 ||
	    (p = strstr(buf, "\nGid:")) == NULL ||
	    sscanf(p, "\nGid: %*u %*u %*u %u", &t->gid) != 1 ||
	    (p = strstr(buf, "\nGroups:")) == NULL) {
		errno = EPROTO;
		return -1;
	}
	p += strlen("\nGroups:");
	for (t->ngroups = 0; t->ngroups < MAX_GROUPS;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p < '0' || *p > '9')
			break;
		errno = 0;
		v = strtoul(p, &end, 10);
		if (errno != 0 || v >= UINT32_MAX) {
			errno = EPROTO;
			return -1;
		}
		t->groups[t->ngroups++] = (gid_t)v;
		p = end;
	}
	return 0;
}

/* Drop every capability this process holds (gained by joining a user namespace). */
static int caps_clear(void)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct c[2] = {{0, 0, 0}, {0, 0, 0}};

	if (syscall(SYS_capset, &h, c) != 0 || syscall(SYS_capget, &h, c) != 0)
		return -1;
	return (c[0].effective | c[0].permitted | c[1].effective | c[1].permitted) != 0 ? -1 : 0;
}

/*
 * Is a socket bound to (dev, ino) listening in nl's network namespace?
 * sock_diag's UDIAG_SHOW_VFS gives the kernel's own dev_t (MAJOR << 20 |
 * MINOR, not stat's encoding) and the low 32 bits of the inode number.
 * 1 yes, 0 no, -1 failed.
 */
static int listening(int nl, dev_t dev, ino_t ino)
{
	struct {
		struct nlmsghdr h;
		struct unix_diag_req r;
	} q = {{sizeof q, SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP, 1, 0},
	       {AF_UNIX, 0, 0, 1U << 10 /* TCP_LISTEN */, 0, UDIAG_SHOW_VFS, {0, 0}}};
	uint32_t kdev = (major(dev) << 20) | minor(dev);
	static char buf[32768] __attribute__((aligned(8)));
	struct nlmsghdr *h;
	int found = 0;
	ssize_t n;

	if (send(nl, &q, sizeof q, 0) != (ssize_t)sizeof q)
		return -1;
	for (;;) {
		n = recv(nl, buf, sizeof buf, 0);
		if (n <= 0)
			return -1;
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			struct unix_diag_msg *m = NLMSG_DATA(h);
			struct rtattr *a;
			int len;

			if (h->nlmsg_type == NLMSG_DONE)
				return found;
			if (h->nlmsg_type == NLMSG_ERROR) {
				errno = EPROTO;
				return -1;
			}
			len = (int)h->nlmsg_len - (int)NLMSG_LENGTH(sizeof *m);
			for (a = (struct rtattr *)(m + 1); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
				struct unix_diag_vfs v;

				if (a->rta_type != UNIX_DIAG_VFS || RTA_PAYLOAD(a) < sizeof v)
					continue;
				memcpy(&v, RTA_DATA(a), sizeof v);
				if (v.udiag_vfs_dev == kdev && v.udiag_vfs_ino == (uint32_t)ino)
					found = 1;
			}
		}
	}
}

static int diag_socket(void)
{
	return socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
}

/*
 * In the walker: step into the target's world. Its mount namespace, so its
 * root and folder are walked in its mount tree, and its network namespace,
 * so what listens is what it sees; its root and folder; then its user with
 * no capability left: what the walk reaches is what the command could.
 * Root needs no user namespace to join the others (it has every capability
 * over those made under it) and becomes the command's ids as the host knows
 * them. An operator's walker joins the sandbox's user namespace first (the
 * operator made it: joining gives the capabilities the rest needs), where it
 * already is the command's user (bwrap's one mapping; no user namespace can
 * be made inside), and drops what joining gave.
 */
static void walker_enter(const struct target *t, uint32_t pid)
{
	bool as_root = geteuid() == 0;
	int flags = CLONE_NEWNS | CLONE_NEWNET | (!as_root && t->own_userns ? CLONE_NEWUSER : 0);

	if (setns(t->pidfd, flags) != 0)
		walk_fail(pid, "cannot join its namespaces");
	if (fchdir(t->root) != 0 || chroot(".") != 0 || fchdir(t->cwd) != 0)
		walk_fail(pid, "cannot take its root and folder");
	if (as_root && fs_become(t->uid, t->gid, t->groups, t->ngroups) != 0)
		walk_fail(pid, "cannot take the bot's ids");
	if (caps_clear() != 0)
		walk_fail(pid, "cannot drop the capabilities it was given");
}

/*
 * May the command connect to the socket file fd? 0, or the errno to
 * answer. host_nl: a sock_diag socket of the host's network namespace (made
 * before the walker left it); nl: one of the sandbox's.
 */
static int pathname_allowed(int fd, int nl, int host_nl)
{
	struct stat st;
	int r;

	if (fstat(fd, &st) != 0)
		return EACCES;
	if (!S_ISSOCK(st.st_mode))
		return ECONNREFUSED;
	if (guard.have_agent && st.st_dev == guard.agent_dev && st.st_ino == guard.agent_ino)
		return 0;
	if ((r = listening(nl, st.st_dev, st.st_ino)) != 0)
		return r < 0 ? -1 : 0;
	/*
	 * Refused: EACCES if the host listens there; else, as the kernel would
	 * say, ECONNREFUSED (a stale socket file, of the bot's own most often:
	 * git credential-cache and the like start their server on that answer).
	 */
	return listening(host_nl, st.st_dev, st.st_ino) == 0 ? ECONNREFUSED : EACCES;
}

/*
 * The walker's whole life: one connect of the command's socket sock (its
 * own open file) to addr (len bytes, copied once from its memory). Exits
 * with the errno to answer, 0 for connected, WALK_FAILED for a failure of
 * its own.
 */
static void __attribute__((noreturn))
walker(const struct target *t, uint32_t pid, int sock, struct sockaddr_storage *addr, socklen_t len)
{
	struct sockaddr_un *un = (struct sockaddr_un *)addr;
	struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_NO_MAGICLINKS};
	char path[sizeof un->sun_path + 1], link[32];
	int self, host_nl, nl = -1, fd, domain, r;
	socklen_t dl = sizeof domain;

	/* Made here, before the walk leaves them: our /proc/self/fd and the host's network. */
	self = open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
	host_nl = diag_socket();
	if (self < 0 || host_nl < 0)
		walk_fail(pid, "cannot prepare the walk");
	if (getsockopt(sock, SOL_SOCKET, SO_DOMAIN, &domain, &dl) != 0)
		_exit(errno == ENOTSOCK ? ENOTSOCK : EBADF);
	walker_enter(t, pid);
	/* Another family on an AF_UNIX socket is no path to the kernel either: as is. */
	if (domain == AF_UNIX && len > sizeof *un)
		_exit(EINVAL); /* as unix_validate_addr says */
	if (domain == AF_UNIX && un->sun_family == AF_UNIX &&
	    len > offsetof(struct sockaddr_un, sun_path) && un->sun_path[0] != '\0') {
		/* A pathname ends at its NUL or at addrlen, as the kernel reads it. */
		memcpy(path, un->sun_path, len - offsetof(struct sockaddr_un, sun_path));
		path[len - offsetof(struct sockaddr_un, sun_path)] = '\0';
		/*
		 * As connect would walk it, but no /proc magic link: the command
		 * may not follow those of root's processes in the sandbox.
		 * Without openat2 (Linux 5.6, or a container's seccomp profile)
		 * there is no such walk: refused, never a plain open.
		 */
		fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
		if (fd < 0 && errno == ENOSYS)
			walk_fail(pid, "openat2 is not available to walk the socket's path");
		if (fd < 0)
			_exit(errno == ENOENT || errno == EACCES || errno == ENOTDIR ||
					      errno == ELOOP || errno == ENAMETOOLONG
				      ? errno
				      : EACCES);
		if ((nl = diag_socket()) < 0)
			walk_fail(pid, "cannot look at the sandbox's sockets");
		r = pathname_allowed(fd, nl, host_nl);
		if (r < 0)
			walk_fail(pid, "cannot check the socket");
		if (r != 0)
			_exit(r);
		/* relative to our /proc/self/fd: the magic link to the inode checked */
		if (fchdir(self) != 0)
			walk_fail(pid, "cannot reach the socket checked");
		memset(addr, 0, sizeof *addr);
		un->sun_family = AF_UNIX;
		snprintf(link, sizeof link, "%d", fd);
		memcpy(un->sun_path, link, strlen(link));
		len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(link));
	}
	r = connect(sock, (struct sockaddr *)addr, len) == 0 ? 0 : errno;
	_exit(r == WALK_FAILED ? EACCES : r);
}

/* ---- the supervisor ----------------------------------------------------------- */

static void target_close(struct target *t)
{
	int *fds[] = {&t->proc, &t->pidfd, &t->root, &t->cwd};
	size_t i;

	for (i = 0; i < sizeof fds / sizeof fds[0]; i++)
		if (*fds[i] >= 0)
			close(*fds[i]);
}

/* Has the process behind procfd a user namespace other than ours? */
static int other_userns(int procfd)
{
	struct stat ours, theirs;

	if (stat("/proc/self/ns/user", &ours) != 0 || fstatat(procfd, "ns/user", &theirs, 0) != 0)
		return -1;
	return ours.st_ino != theirs.st_ino || ours.st_dev != theirs.st_dev;
}

static int target_open(struct target *t, pid_t pid)
{
	char path[64];
	int r;

	/* pid is the calling thread's: its fd table, folder and namespaces */
	snprintf(path, sizeof path, "/proc/%d", (int)pid);
	t->proc = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (t->proc < 0 || target_ids(t) != 0)
		return -1;
	t->pidfd = (int)syscall(SYS_pidfd_open, pid, PIDFD_THREAD);
	/* before Linux 6.9, a process's pidfd only: its threads share its fds, mostly */
	if (t->pidfd < 0 && errno == EINVAL)
		t->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	t->root = openat(t->proc, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
	t->cwd = openat(t->proc, "cwd", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (t->pidfd < 0 || t->root < 0 || t->cwd < 0 || (r = other_userns(t->proc)) < 0)
		return -1;
	t->own_userns = r == 1;
	return 0;
}

/*
 * Start serving one notification: take the command's socket and address
 * (checked still valid after), and fork the walker. 0 when a walker runs,
 * else the errno to answer now (-1: a failure of ours, said on stderr).
 */
static int walk_start(const struct seccomp_notif *req, struct walk *w)
{
	struct target t = {-1, -1, -1, -1, 0, 0, {0}, 0, false};
	struct sockaddr_storage addr;
	socklen_t len = (socklen_t)req->data.args[2];
	struct iovec local = {&addr, len}, remote = {(void *)(uintptr_t)req->data.args[1], len};
	const char *what = "cannot look at the process";
	int sock = -1, r = -1;
	pid_t pid;

	memset(&addr, 0, sizeof addr);
	if ((size_t)req->data.args[2] > sizeof addr)
		return EINVAL;
	if (target_open(&t, (pid_t)req->pid) != 0)
		goto out;
	sock = (int)syscall(SYS_pidfd_getfd, t.pidfd, (int)req->data.args[0], 0);
	if (sock < 0) {
		r = errno == EBADF ? EBADF : -1;
		goto out;
	}
	if (len > 0 && process_vm_readv((pid_t)req->pid, &local, 1, &remote, 1, 0) != len) {
		r = EFAULT;
		goto out;
	}
	/* All above is the target's only if it is still the one waiting. */
	if (ioctl(guard.listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) != 0) {
		r = ENOENT;
		goto out;
	}
	what = "cannot start a walker";
	pid = fork();
	if (pid == 0)
		walker(&t, req->pid, sock, &addr, len);
	if (pid > 0) {
		w->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
		w->walker = pid;
		if (w->pidfd >= 0)
			r = 0;
		else
			waitpid(pid, NULL, 0); /* it answers nothing: refused below */
	}
out:
	if (r < 0)
		fprintf(stderr, "agentfs: host-socket guard: pid %u: %s: %s (connect refused)\n",
			(unsigned)req->pid, what, strerror(errno));
	if (sock >= 0)
		close(sock);
	target_close(&t);
	return r < 0 ? EACCES : r;
}

/* A walker ended: its exit status is the answer. */
static void walk_done(struct walk *w)
{
	siginfo_t si = {0};
	int r = EACCES;

	if (waitid((idtype_t)P_PIDFD, (id_t)w->pidfd, &si, WEXITED) == 0 &&
	    si.si_code == CLD_EXITED && si.si_status != WALK_FAILED)
		r = si.si_status;
	if (r != ENOENT || ioctl(guard.listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &w->id) == 0)
		answer(w->id, r);
	close(w->pidfd);
	w->pidfd = -1;
}

/* A notification came: serve it, or answer at once. */
static void notif_take(void)
{
	struct seccomp_notif req;
	struct walk *w = NULL;
	size_t i;
	int r;

	memset(&req, 0, sizeof req);
	if (ioctl(guard.listener, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0)
		return;
	for (i = 0; i < MAX_PENDING && w == NULL; i++)
		if (guard.walks[i].pidfd < 0)
			w = &guard.walks[i];
	if (w == NULL) {
		answer(req.id, EAGAIN);
		return;
	}
	w->id = req.id;
	w->pid = req.pid;
	r = walk_start(&req, w);
	if (r != 0)
		answer(req.id, r);
}

/*
 * Before bwrap is forked: the channel agentfs-enter sends the listener on
 * (its end for the sandbox is returned: not close-on-exec, bwrap passes it
 * on).
 */
int exec_unix_guard_chan(void)
{
	int sp[2];
	size_t i;

	for (i = 0; i < MAX_PENDING; i++)
		guard.walks[i].pidfd = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sp) != 0)
		die("socketpair: %s", strerror(errno));
	if (fcntl(sp[0], F_SETFD, FD_CLOEXEC) != 0)
		die("cannot keep the guard's channel: %s", strerror(errno));
	guard.chan = sp[0];
	return sp[1];
}

/*
 * Once the plan is known, before bwrap starts: the AGENT_SOCKET's inode, the
 * one host socket the bot may reach; or, for a bot with network (no
 * guard), the channel closed (sandbox_end, the sandbox's end, too).
 */
void exec_unix_guard_start(const char *agent_socket, bool network, int sandbox_end)
{
	struct stat st;

	if (network) {
		close(guard.chan);
		close(sandbox_end);
		guard.chan = -1;
		return;
	}
	if (agent_socket != NULL && *agent_socket != '\0' && stat(agent_socket, &st) == 0 &&
	    S_ISSOCK(st.st_mode)) {
		guard.have_agent = true;
		guard.agent_dev = st.st_dev;
		guard.agent_ino = st.st_ino;
	}
}

/*
 * What the guard waits on, into pf (room for MAX_PENDING + 1): the channel
 * or the listener, and each walker. The count.
 */
int exec_unix_guard_pollfds(struct pollfd *pf)
{
	int n = 0;
	size_t i;

	if (!guard.done && (guard.listener >= 0 || guard.chan >= 0))
		pf[n++] = (struct pollfd){guard.listener >= 0 ? guard.listener : guard.chan, POLLIN,
					  0};
	for (i = 0; i < MAX_PENDING; i++)
		if (guard.walks[i].pidfd >= 0)
			pf[n++] = (struct pollfd){guard.walks[i].pidfd, POLLIN, 0};
	return n;
}

/* What the poll saw on the descriptors exec_unix_guard_pollfds gave. */
void exec_unix_guard_serve(const struct pollfd *pf, int n)
{
	size_t i;
	int k;

	for (k = 0; k < n; k++) {
		if (pf[k].revents == 0)
			continue;
		if (pf[k].fd == guard.chan && guard.listener < 0) {
			guard.listener = recv_fd(guard.chan);
			close(guard.chan);
			guard.chan = -1;
		} else if (pf[k].fd == guard.listener) {
			if (pf[k].revents & POLLIN)
				notif_take();
			else if (pf[k].revents & (POLLHUP | POLLERR))
				guard.done = true; /* no filtered process is left */
		} else {
			for (i = 0; i < MAX_PENDING; i++)
				if (guard.walks[i].pidfd == pf[k].fd)
					walk_done(&guard.walks[i]);
		}
	}
}

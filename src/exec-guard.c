/* SPDX-License-Identifier: MIT */
/*
 * agentfs exec: which sockets a confined command reaches, and the
 * supervisor of its connects (outside the sandbox, in the outer agentfs exec).
 *
 * With network off, TCP, UDP and abstract UNIX sockets are cut by the
 * sandbox's own network namespace, and /run is hidden. A pathname UNIX
 * socket elsewhere on the host (a 0666 mysql.sock, ~/.docker/run/docker.sock)
 * is a file: connect() needs no write to the filesystem, and Landlock (up to
 * ABI 7) has no control over it. So, with network off, the command runs under
 * a seccomp filter that hands every connect(2) to the outer `agentfs exec`
 * (root, outside the sandbox), which connects the command's own socket for
 * it: to its AGENT_SOCKET, to a socket listening in the sandbox's network
 * namespace, or to anything that is not a pathname, and answers EACCES to
 * the rest. It never lets the kernel go on with the command's own arguments
 * (SECCOMP_USER_NOTIF_FLAG_CONTINUE): another thread of the command could
 * change the address, the path or the fd between our check and the kernel's
 * reading. What is checked is what is connected:
 *  - the address is copied once from the command's memory;
 *  - the socket is the command's own open file (pidfd_getfd);
 *  - the path is opened once (O_PATH, as the bot's user, from the command's
 *    root and folder), the inode checked, and the connect goes through
 *    /proc/thread-self/fd/N, a magic link to that very inode.
 * Sockets that carry an address per message are cut instead: AF_UNIX
 * datagram sockets (socket and socketpair: a connected pair can still
 * sendto(2) any path), AF_VSOCK, and io_uring (its connect bypasses seccomp).
 *
 * The path is walked from the target's /proc/TID/root and /proc/TID/cwd by
 * a thread that made its root and folder its own (unshare CLONE_FS, chroot):
 * a walk from a mount of the target's namespace stays in that namespace's
 * mount tree, so no setns into it is needed, nor a way back; the thread
 * ends after one connect, and its ids, root and network namespace with it.
 */
#include "src/agentfs.h"
#include "src/exec.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
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

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif

/* Variables that name host sockets and agents: never passed in. */
static const char *const socket_vars[] = {
	"SSH_AUTH_SOCK",	   "SSH_AGENT_PID",  "DBUS_SESSION_BUS_ADDRESS",
	"DBUS_SYSTEM_BUS_ADDRESS", "GPG_AGENT_INFO", "XDG_RUNTIME_DIR",
	"WAYLAND_DISPLAY",	   "DISPLAY",	     "XAUTHORITY",
};

/*
 * Host sockets: TCP, UDP and abstract UNIX sockets live in the network
 * namespace, which a bot without network does not share. Pathname sockets
 * are files: the host's services keep theirs under /run (/var/run links
 * there), which a bot without network gets empty; /tmp is private anyway;
 * the rest is the seccomp guard's (below). The variables that point at
 * agents are dropped for every bot.
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

/* ---- outside: the supervisor ------------------------------------------------ */

#define MAX_PENDING 64

/*
 * The guard's state, one per agentfs exec. The main thread (supervise's
 * loop) owns chan, done and listener, which it sets once and never closes
 * (workers answer on it; the process ends with bwrap); host_net (our own
 * network namespace), have_agent, agent_dev and agent_ino are set before
 * the sandbox starts and never change; pending is atomic.
 */
static struct {
	int chan, listener, host_net;
	bool done;
	bool have_agent;
	dev_t agent_dev;
	ino_t agent_ino;
	int pending;
} guard = {-1, -1, -1, false, false, 0, 0, 0};

/* One notification, owned by its worker thread, which frees it. */
struct unix_job {
	struct seccomp_notif req;
};

static void guard_log(const struct seccomp_notif *req, const char *what)
{
	fprintf(stderr, "agentfs: host-socket guard: pid %u: %s: %s (connect refused)\n",
		(unsigned)req->pid, what, strerror(errno));
}

static void answer(const struct seccomp_notif *req, int err)
{
	struct seccomp_notif_resp resp = {req->id, 0, -err, 0};

	/* ENOENT: the command was killed meanwhile, nothing waits for us. */
	ioctl(guard.listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

/* The caller's process and ids, as the kernel sees them in /proc/PID/status. */
static int target_ids(int procfd, pid_t *tgid, uid_t *uid, gid_t *gid, gid_t *groups, int *ngroups)
{
	char buf[4096], *p;
	int cap = *ngroups;
	unsigned long v;

	if (read_text(procfd, "status", buf, sizeof buf) <= 0)
		return -1;
	/* "Uid:\treal\teffective\tsaved\tfs": the fs ids decide file access. */
	if ((p = strstr(buf, "\nTgid:")) == NULL || sscanf(p, "\nTgid: %d", tgid) != 1 ||
	    (p = strstr(buf, "\nUid:")) == NULL || sscanf(p, "\nUid: %*u %*u %*u %u", uid) != 1 ||
	    (p = strstr(buf, "\nGid:")) == NULL || sscanf(p, "\nGid: %*u %*u %*u %u", gid) != 1 ||
	    (p = strstr(buf, "\nGroups:")) == NULL) {
		errno = EPROTO;
		return -1;
	}
	p += strlen("\nGroups:");
	for (*ngroups = 0; *ngroups < cap;) {
		char *end;

		while (*p == ' ' || *p == '\t')
			p++;
		if (*p < '0' || *p > '9')
			break;
		v = strtoul(p, &end, 10);
		groups[(*ngroups)++] = (gid_t)v;
		p = end;
	}
	return 0;
}

/* Per-thread credentials (glibc's wrappers would change every thread). */
static int thread_become(uid_t uid, gid_t gid, const gid_t *groups, int ngroups)
{
	if (syscall(SYS_setgroups, (size_t)ngroups, groups) != 0 ||
	    syscall(SYS_setresgid, gid, gid, gid) != 0 ||
	    syscall(SYS_setresuid, uid, uid, uid) != 0)
		return -1;
	return 0;
}

static int thread_fs_ids(uid_t uid, gid_t gid, const gid_t *groups, int ngroups)
{
	if (syscall(SYS_setgroups, (size_t)ngroups, groups) != 0)
		return -1;
	syscall(SYS_setfsgid, gid);
	syscall(SYS_setfsuid, uid);
	if ((gid_t)syscall(SYS_setfsgid, -1) != gid || (uid_t)syscall(SYS_setfsuid, -1) != uid) {
		errno = EPERM;
		return -1;
	}
	return 0;
}

/*
 * Is a socket bound to (dev, ino) listening in this thread's network
 * namespace? sock_diag's UDIAG_SHOW_VFS gives the kernel's own dev_t
 * (MAJOR << 20 | MINOR, not stat's encoding) and the low 32 bits of the
 * inode number.
 */
static int listening_here(dev_t dev, ino_t ino)
{
	struct {
		struct nlmsghdr h;
		struct unix_diag_req r;
	} q = {{sizeof q, SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP, 1, 0},
	       {AF_UNIX, 0, 0, 1U << 10 /* TCP_LISTEN */, 0, UDIAG_SHOW_VFS, {0, 0}}};
	uint32_t kdev = (major(dev) << 20) | minor(dev);
	static __thread char buf[32768] __attribute__((aligned(8)));
	int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG), found = 0;
	struct nlmsghdr *h;
	ssize_t n;

	if (nl < 0)
		return -1;
	if (send(nl, &q, sizeof q, 0) != (ssize_t)sizeof q)
		goto fail;
	for (;;) {
		n = recv(nl, buf, sizeof buf, 0);
		if (n <= 0)
			goto fail;
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			struct unix_diag_msg *m = NLMSG_DATA(h);
			struct rtattr *a;
			int len;

			if (h->nlmsg_type == NLMSG_DONE) {
				close(nl);
				return found;
			}
			if (h->nlmsg_type == NLMSG_ERROR) {
				errno = EPROTO;
				goto fail;
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
fail:
	close(nl);
	return -1;
}

/* The files a pathname check needs from the target, opened as root. */
struct target {
	int pidfd, proc, root, cwd, self;
	uid_t uid;
	gid_t gid, groups[256];
	int ngroups;
};

static void target_close(struct target *t)
{
	int *fds[] = {&t->pidfd, &t->proc, &t->root, &t->cwd, &t->self};
	size_t i;

	for (i = 0; i < sizeof fds / sizeof fds[0]; i++)
		if (*fds[i] >= 0)
			close(*fds[i]);
}

static int target_open(struct target *t, pid_t pid)
{
	char path[64];
	pid_t tgid;

	/* pid is the calling thread's: its fd table, folder and namespaces */
	snprintf(path, sizeof path, "/proc/%d", (int)pid);
	t->proc = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	t->ngroups = 256;
	if (t->proc < 0 || target_ids(t->proc, &tgid, &t->uid, &t->gid, t->groups, &t->ngroups))
		return -1;
	t->pidfd = (int)syscall(SYS_pidfd_open, pid, PIDFD_THREAD);
	/* before Linux 6.9, a process's pidfd only: its threads share its fds, mostly */
	if (t->pidfd < 0 && errno == EINVAL)
		t->pidfd = (int)syscall(SYS_pidfd_open, tgid, 0);
	t->root = openat(t->proc, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
	t->cwd = openat(t->proc, "cwd", O_PATH | O_DIRECTORY | O_CLOEXEC);
	t->self = open("/proc/thread-self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (t->pidfd < 0 || t->root < 0 || t->cwd < 0 || t->self < 0)
		return -1;
	return 0;
}

/*
 * Open path as the target would reach it: from its root and its folder, in
 * its mount namespace (the walk from /proc/PID/root stays in the target's
 * mount tree), with its file ids and groups. This thread's root and folder
 * are its own (unshare CLONE_FS) and die with it. Returns an O_PATH fd.
 */
static int open_as_target(const struct target *t, const char *path)
{
	struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_NO_MAGICLINKS};
	int fd;

	if (unshare(CLONE_FS) != 0 || fchdir(t->root) != 0 || chroot(".") != 0 ||
	    fchdir(t->cwd) != 0)
		return -1;
	if (thread_fs_ids(t->uid, t->gid, t->groups, t->ngroups) != 0)
		return -1;
	/* As connect would, but no /proc magic link: this thread may follow those
	 * of root's processes in the sandbox, the command may not. */
	fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
	if (fd < 0 && errno == ENOSYS)
		fd = open(path, O_PATH | O_CLOEXEC);
	syscall(SYS_setfsuid, 0);
	syscall(SYS_setfsgid, 0);
	return fd;
}

/* May the target connect to the socket file fd? 0, or the errno to answer. */
static int pathname_allowed(const struct target *t, int fd)
{
	struct stat st;
	int r;

	if (fstat(fd, &st) != 0)
		return EACCES;
	if (!S_ISSOCK(st.st_mode))
		return ECONNREFUSED;
	if (guard.have_agent && st.st_dev == guard.agent_dev && st.st_ino == guard.agent_ino)
		return 0;
	if (setns(t->pidfd, CLONE_NEWNET) != 0)
		return -1;
	r = listening_here(st.st_dev, st.st_ino);
	if (r != 0)
		return r < 0 ? -1 : 0;
	/*
	 * Refused: EACCES if the host listens there; else, as the kernel would
	 * say, ECONNREFUSED (a stale socket file, of the bot's own most often:
	 * git credential-cache and the like start their server on that answer).
	 */
	if (guard.host_net < 0 || setns(guard.host_net, CLONE_NEWNET) != 0)
		return EACCES;
	r = listening_here(st.st_dev, st.st_ino);
	return r == 0 ? ECONNREFUSED : EACCES;
}

/*
 * One connect, in its own thread: duplicate the target's socket, copy its
 * address once, check, connect as the bot's user, answer. Returns the
 * errno to answer (0: connected), or -1 for a failure of ours.
 */
static int serve_connect(const struct seccomp_notif *req, const char **what)
{
	struct target t = {-1, -1, -1, -1, -1, 0, 0, {0}, 0};
	struct sockaddr_storage addr;
	struct sockaddr_un *un = (struct sockaddr_un *)&addr;
	socklen_t len = (socklen_t)req->data.args[2], dl = sizeof(int);
	struct iovec local = {&addr, len}, remote = {(void *)(uintptr_t)req->data.args[1], len};
	char path[sizeof un->sun_path + 1], link[32];
	int sock = -1, fd = -1, domain, r = -1;

	memset(&addr, 0, sizeof addr);
	if ((size_t)req->data.args[2] > sizeof addr)
		return EINVAL;
	*what = "cannot look at the process";
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
	if (getsockopt(sock, SOL_SOCKET, SO_DOMAIN, &domain, &dl) != 0) {
		r = errno == ENOTSOCK ? ENOTSOCK : -1;
		goto out;
	}
	if (domain == AF_UNIX && len > sizeof *un) {
		r = EINVAL; /* as unix_validate_addr says */
		goto out;
	}
	/* Another family on an AF_UNIX socket is no path to the kernel either: as is. */
	if (domain == AF_UNIX && un->sun_family == AF_UNIX &&
	    len > offsetof(struct sockaddr_un, sun_path) && un->sun_path[0] != '\0') {
		/* A pathname ends at its NUL or at addrlen, as the kernel reads it. */
		memcpy(path, un->sun_path, len - offsetof(struct sockaddr_un, sun_path));
		path[len - offsetof(struct sockaddr_un, sun_path)] = '\0';
		*what = "cannot check the socket's path";
		fd = open_as_target(&t, path);
		if (fd < 0) {
			r = errno == ENOENT || errno == EACCES || errno == ENOTDIR ||
					    errno == ELOOP || errno == ENAMETOOLONG
				    ? errno
				    : -1;
			goto out;
		}
		if ((r = pathname_allowed(&t, fd)) != 0)
			goto out;
		/* relative to /proc/thread-self/fd: the magic link to the inode checked */
		if (fchdir(t.self) != 0)
			goto fail;
		memset(&addr, 0, sizeof addr);
		un->sun_family = AF_UNIX;
		snprintf(link, sizeof link, "%d", fd);
		memcpy(un->sun_path, link, strlen(link));
		len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(link));
	}
	*what = "cannot take the bot's ids";
	if (thread_become(t.uid, t.gid, t.groups, t.ngroups) != 0)
		goto fail;
	r = connect(sock, (struct sockaddr *)&addr, len) == 0 ? 0 : errno;
	goto out;
fail:
	r = -1;
out:
	if (r < 0 && errno == 0)
		errno = EPROTO;
	if (fd >= 0)
		close(fd);
	if (sock >= 0)
		close(sock);
	target_close(&t);
	return r;
}

static void *job_run(void *arg)
{
	struct unix_job *job = arg;
	const char *what = "";
	int r;

	errno = 0;
	r = serve_connect(&job->req, &what);
	if (r < 0) {
		guard_log(&job->req, what);
		r = EACCES;
	}
	if (r != ENOENT || ioctl(guard.listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &job->req.id) == 0)
		answer(&job->req, r);
	__atomic_sub_fetch(&guard.pending, 1, __ATOMIC_SEQ_CST);
	free(job);
	return NULL;
}

/*
 * Before bwrap starts: the channel exec --as sends the listener on (its end
 * for the sandbox is returned: not close-on-exec, bwrap passes it on), and
 * the AGENT_SOCKET's inode, the one host socket the bot may reach.
 */
int exec_unix_guard_start(const char *agent_socket)
{
	int sp[2];
	struct stat st;

	if (agent_socket != NULL && *agent_socket != '\0' && stat(agent_socket, &st) == 0 &&
	    S_ISSOCK(st.st_mode)) {
		guard.have_agent = true;
		guard.agent_dev = st.st_dev;
		guard.agent_ino = st.st_ino;
	}
	guard.host_net = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sp) != 0)
		die("socketpair: %s", strerror(errno));
	fcntl(sp[0], F_SETFD, FD_CLOEXEC);
	guard.chan = sp[0];
	return sp[1];
}

int exec_unix_guard_fd(void)
{
	return guard.done ? -1 : guard.listener >= 0 ? guard.listener : guard.chan;
}

/* What the poll of supervise saw on exec_unix_guard_fd. */
void exec_unix_guard_serve(short revents)
{
	struct unix_job *job;
	pthread_attr_t attr;
	pthread_t th;
	sigset_t all, old;

	if (guard.listener < 0 && guard.chan >= 0) {
		if (revents & (POLLIN | POLLHUP | POLLERR)) {
			guard.listener = recv_fd(guard.chan);
			close(guard.chan);
			guard.chan = -1;
		}
		return;
	}
	if (guard.listener < 0)
		return;
	if (!(revents & POLLIN)) {
		/* No filtered process is left. Workers may still use the fd: kept. */
		if (revents & (POLLHUP | POLLERR))
			guard.done = true;
		return;
	}
	job = calloc(1, sizeof *job);
	if (job == NULL)
		return;
	if (ioctl(guard.listener, SECCOMP_IOCTL_NOTIF_RECV, &job->req) != 0) {
		free(job);
		return;
	}
	if (__atomic_add_fetch(&guard.pending, 1, __ATOMIC_SEQ_CST) > MAX_PENDING) {
		__atomic_sub_fetch(&guard.pending, 1, __ATOMIC_SEQ_CST);
		answer(&job->req, EAGAIN);
		free(job);
		return;
	}
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	if (pthread_create(&th, &attr, job_run, job) != 0) {
		errno = EAGAIN;
		guard_log(&job->req, "cannot start a thread");
		__atomic_sub_fetch(&guard.pending, 1, __ATOMIC_SEQ_CST);
		answer(&job->req, EACCES);
		free(job);
	}
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

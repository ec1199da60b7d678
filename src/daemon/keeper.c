/* SPDX-License-Identifier: MIT */
/*
 * The keeper: where agentfsd keeps descriptors that must outlive it when
 * no systemd holds them (containers, a machine without systemd). A FUSE
 * connection ends when the last holder of its /dev/fuse descriptor closes
 * it; while the keeper holds them, the bots' mounts stay the same mounts
 * across a restart of agentfsd, and their requests wait for the next one
 * (agentfsd(8), RESTART AND UPGRADE).
 *
 * It is agentfsd's own binary started as `agentfsd --keeper STATE GRACE`
 * with its listening socket as descriptor 3 (agentfsd made and bound it:
 * the keeper opens no path at all), and it does nothing but hold
 * descriptors by name and hand them back, the way systemd's fd store does:
 *
 *   P name  + 1 fd   keep fd under name (one kept there before is closed)
 *   D name           close the one kept under name
 *   L                send every one back ("F name" + fd each), then "E count"
 *   G seconds        the grace period (below)
 *   R                close every one and exit (agentfs shutdown)
 *
 * on a SOCK_SEQPACKET socket, one message each, from root only. While no
 * agentfsd is connected it waits GRACE seconds for one, then closes
 * everything and exits: the mounts then end as a stop ends them (their
 * users get ENOTCONN) and the next agentfsd mounts afresh. SIGTERM and
 * SIGINT end it the same way, at once.
 *
 * What it must never do, and does not: read or write any descriptor it
 * holds (a bot's file, a FUSE connection), follow a path, run anything, or
 * take a descriptor from anyone but root. It drops every capability before
 * it serves: holding and passing descriptors needs none, and a keeper
 * that could be made to do more than that is one more root process to
 * attack. How agentfsd starts it and reaches it is here too (fdstore.c
 * uses them).
 */
#include "src/common/agentfs.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

#define KEEPER_CLIENTS 8 /* an agentfsd, and the one taking over from it */
#define KEEPER_NBUCKETS 4096

struct kept {
	struct kept *next;
	int fd;
	char name[];
};

static struct kept *buckets[KEEPER_NBUCKETS];
static size_t nkept;
static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

static struct kept **find(const char *name)
{
	uint64_t h = 1469598103934665603ull;
	const char *s;
	struct kept **pp;

	for (s = name; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	for (pp = &buckets[h % KEEPER_NBUCKETS]; *pp != NULL; pp = &(*pp)->next)
		if (strcmp((*pp)->name, name) == 0)
			break;
	return pp;
}

static void drop(const char *name)
{
	struct kept **pp = find(name), *k = *pp;

	if (k == NULL)
		return;
	*pp = k->next;
	close(k->fd);
	free(k);
	nkept--;
}

static void put(const char *name, int fd)
{
	struct kept **pp = find(name), *k;

	if (*pp != NULL) {
		close((*pp)->fd);
		(*pp)->fd = fd;
		return;
	}
	k = malloc(sizeof *k + strlen(name) + 1);
	if (k == NULL) {
		close(fd); /* out of memory: that one is not kept */
		return;
	}
	k->next = NULL;
	k->fd = fd;
	strcpy(k->name, name);
	*pp = k;
	nkept++;
}

static void drop_all(void)
{
	struct kept *k;
	size_t b;

	for (b = 0; b < KEEPER_NBUCKETS; b++) {
		while ((k = buckets[b]) != NULL) {
			buckets[b] = k->next;
			close(k->fd);
			free(k);
		}
	}
	nkept = 0;
}

static void send_all(int s)
{
	char msg[512];
	struct kept *k;
	size_t b, n = 0;

	for (b = 0; b < KEEPER_NBUCKETS; b++)
		for (k = buckets[b]; k != NULL; k = k->next) {
			snprintf(msg, sizeof msg, "F%s", k->name);
			if (fdpass_send(s, NULL, 0, msg, k->fd) == 0)
				n++;
		}
	snprintf(msg, sizeof msg, "E%zu", n);
	fdpass_send(s, NULL, 0, msg, -1);
}

/* A name: printable, no blank, at most 255 bytes (systemd's FDNAME rules, less ':') */
static bool name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 255)
		return false;
	for (; *s != '\0'; s++)
		if (*s <= ' ' || *s > '~' || *s == ':')
			return false;
	return true;
}

/* One message from a client: false when the client is to be dropped. */
static bool serve_one(int s, unsigned *grace)
{
	char buf[512];
	ssize_t n;
	int fd;

	n = fdstore_recv(s, buf, sizeof buf, &fd);
	if (n <= 0)
		return n < 0 && (errno == EINTR || errno == EAGAIN);
	switch (buf[0]) {
	case 'P':
		if (fd >= 0 && name_ok(buf + 1)) {
			put(buf + 1, fd);
			fd = -1;
		}
		break;
	case 'D':
		drop(buf + 1);
		break;
	case 'L':
		send_all(s);
		break;
	case 'G':
		*grace = (unsigned)strtoul(buf + 1, NULL, 10);
		break;
	case 'R':
		drop_all();
		stop = 1;
		break;
	default:
		break;
	}
	if (fd >= 0)
		close(fd);
	return true;
}

/* Root only: the socket is in root's state folder, and its peer is checked too. */
static bool peer_is_root(int s)
{
	struct ucred cr;
	socklen_t len = sizeof cr;

	return getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 && cr.uid == 0;
}

/* No capability at all: it only holds and passes descriptors. */
static void drop_capabilities(void)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];
	unsigned long c;

	for (c = 0; c <= CAP_LAST_CAP; c++)
		prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
	memset(d, 0, sizeof d);
	syscall(SYS_capset, &h, d);
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

/*
 * One message from s into buf (a string) and the one descriptor it carries
 * (-1: none; any more are closed, one a message): its length, 0 at the
 * end, -1 with errno.
 */
ssize_t fdstore_recv(int s, char *buf, size_t len, int *fd)
{
	char cbuf[CMSG_SPACE(sizeof(int) * 4)];
	struct iovec iov = {buf, len - 1};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = cbuf,
			    .msg_controllen = sizeof cbuf};
	struct cmsghdr *c;
	ssize_t n;
	int k, nfd, got;

	*fd = -1;
	n = recvmsg(s, &mh, MSG_CMSG_CLOEXEC);
	if (n < 0)
		return -1;
	for (c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (k = 0; k < nfd; k++) {
			memcpy(&got, CMSG_DATA(c) + k * sizeof(int), sizeof got);
			if (*fd < 0)
				*fd = got;
			else
				close(got);
		}
	}
	buf[n] = '\0';
	return n;
}

int keeper_connect(const struct sockaddr_un *sa)
{
	struct timeval tv = {5, 0};
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	if (s < 0)
		return -errno;
	if (connect(s, (const struct sockaddr *)sa, sizeof *sa) != 0) {
		int e = errno;

		close(s);
		return -e;
	}
	/* a keeper that stopped reading must not hold a worker for ever */
	setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	return s;
}

/*
 * fd as descriptor at, kept across exec. dup2() onto itself changes
 * nothing, so a descriptor already there (a socket made while 3 was the
 * lowest free one) would keep its close-on-exec flag and be gone in the
 * keeper, which then never answers.
 */
static int fd_at(int fd, int at)
{
	if (fd == at)
		return fcntl(at, F_SETFD, 0);
	return dup2(fd, at) == at ? 0 : -1;
}

/*
 * Start a keeper on sa: the socket is made and bound here, and becomes its
 * descriptor 3; it leaves our session (setsid) and is not our child (a
 * second fork), so it outlives us however we end.
 */
int keeper_start(const char *self, const struct sockaddr_un *sa, const char *state_dir,
		 unsigned grace, char *err, size_t errlen)
{
	char gs[16], *argv[] = {(char *)self, "--keeper", (char *)state_dir, gs, NULL};
	int ls, st, e;
	pid_t pid;

	snprintf(gs, sizeof gs, "%u", grace);
	if (self[0] == '\0') {
		snprintf(err, errlen, "cannot start the keeper: /proc/self/exe unreadable");
		return -ENOENT;
	}
	ls = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (ls < 0)
		goto fail;
	unlink(sa->sun_path); /* a stale one: a keeper there would have answered */
	if (bind(ls, (const struct sockaddr *)sa, sizeof *sa) != 0 ||
	    chmod(sa->sun_path, 0600) != 0 || listen(ls, 8) != 0)
		goto fail;
	pid = fork();
	if (pid < 0)
		goto fail;
	if (pid == 0) {
		int nul;

		if (setsid() < 0 || fork() != 0)
			_exit(0);
		/* 3 first: /dev/null must not be opened there and then replaced */
		if (fd_at(ls, 3) != 0 || (nul = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0 ||
		    fd_at(nul, 0) != 0 || fd_at(nul, 1) != 0 || fd_at(nul, 2) != 0)
			_exit(127);
		execv(self, argv);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	close(ls);
	return 0;
fail:
	e = errno;
	if (ls >= 0)
		close(ls);
	snprintf(err, errlen, "cannot start the keeper at %s: %s", sa->sun_path, strerror(e));
	return -e;
}

/* agentfsd --keeper STATE GRACE, descriptor 3 listening (agentfsd's fdstore.c starts it) */
int keeper_main(int argc, char **argv)
{
	struct pollfd pfd[1 + KEEPER_CLIENTS];
	struct sigaction sa = {.sa_handler = on_stop};
	unsigned grace = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10) : 60;
	int64_t deadline = 0;
	struct rlimit rl;
	int nclients = 0, k, c, timeout, on = 0;
	socklen_t len = sizeof on;

	close_range(4, ~0U, 0);
	/* without it, poll would report 3 invalid for ever: say so and end */
	if (getsockopt(3, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) != 0 || !on) {
		fprintf(stderr, "agentfsd --keeper: descriptor 3 is not a listening socket "
				"(agentfsd starts its keeper itself)\n");
		return 1;
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	drop_capabilities();
	pfd[0].fd = 3;
	pfd[0].events = POLLIN;
	while (!stop) {
		if (nclients == 0 && deadline == 0)
			deadline = mono_ms() + (int64_t)grace * 1000;
		if (nclients > 0)
			deadline = 0;
		if (deadline != 0 && mono_ms() >= deadline)
			break; /* no agentfsd took over: let go */
		timeout = deadline != 0 ? (int)(deadline - mono_ms()) : -1;
		if (poll(pfd, 1 + (nfds_t)nclients, timeout < 0 && deadline != 0 ? 0 : timeout) <
		    0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (k = 1; k <= nclients; k++) {
			if (pfd[k].revents == 0)
				continue;
			if ((pfd[k].revents & POLLIN) && serve_one(pfd[k].fd, &grace))
				continue;
			close(pfd[k].fd); /* gone, or hung up */
			pfd[k--] = pfd[nclients--];
		}
		if ((pfd[0].revents & POLLIN) && (c = accept4(3, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
			if (nclients == KEEPER_CLIENTS || !peer_is_root(c)) {
				close(c);
			} else {
				pfd[++nclients].fd = c;
				pfd[nclients].events = POLLIN;
				pfd[nclients].revents = 0;
			}
		}
	}
	drop_all();
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * Where agentfsd keeps the descriptors that must outlive it, so that a
 * restart is invisible to the bots (agentfsd(8), RESTART AND UPGRADE):
 * every mount's /dev/fuse descriptors and table, the listening sockets,
 * the files bots hold locks on. Two stores, one protocol of names:
 *
 *  - under systemd (NOTIFY_SOCKET set), its fd store: each descriptor is
 *    sent with "FDSTORE=1" and "FDNAME=name", removed with
 *    "FDSTOREREMOVE=1"; the next start gets them back in LISTEN_FDS and
 *    LISTEN_FDNAMES (the unit sets FileDescriptorStoreMax=);
 *  - else the keeper (keeper.c), started on first use and found again by
 *    the next agentfsd at STATE/keeper.sock.
 *
 * The store holds a duplicate; agentfsd keeps using its own. A name is
 * given once ("FDSTORE" adds, the keeper replaces); what the previous
 * agentfsd left is "handed over" until taken (fdstore_take) or let go.
 * Calls from any thread: each is one datagram or SEQPACKET message, which
 * the kernel keeps whole.
 */
#include "src/common/agentfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#define LISTEN_FDS_START 3

struct handed {
	char *name;
	int fd;
};

/* Set up before any thread runs (fdstore_early, fdstore_open); then immutable but handed. */
static struct {
	enum fdstore_kind kind;
	int sock;		 /* the keeper's connection, or a datagram socket for systemd */
	struct sockaddr_un addr; /* systemd's NOTIFY_SOCKET */
	socklen_t addr_len;
	char self[PATH_MAX];	   /* this program, for the keeper */
	struct sockaddr_un keeper; /* where the keeper listens, or is to be started */
	char state_dir[PATH_MAX];
	unsigned grace;
	pthread_mutex_t lock; /* handed */
	struct handed *handed;
	size_t nhanded;
} fds = {.kind = FDSTORE_NONE, .sock = -1, .lock = PTHREAD_MUTEX_INITIALIZER};

static int handed_add(const char *name, int fd)
{
	struct handed *h = realloc(fds.handed, (fds.nhanded + 1) * sizeof *h);

	if (h == NULL)
		return -ENOMEM;
	fds.handed = h;
	h[fds.nhanded].name = strdup(name);
	if (h[fds.nhanded].name == NULL)
		return -ENOMEM;
	h[fds.nhanded++].fd = fd;
	return 0;
}

/*
 * First thing in main(), before descriptors are closed: what systemd
 * handed over (LISTEN_PID is ours). Returns the highest descriptor to keep.
 */
int fdstore_early(void)
{
	const char *pid = getenv("LISTEN_PID"), *n = getenv("LISTEN_FDS"),
		   *names = getenv("LISTEN_FDNAMES");
	char *copy = NULL, *save = NULL, *name;
	long count, k;
	int top = 2;

	if (readlink("/proc/self/exe", fds.self, sizeof fds.self - 1) < 0)
		fds.self[0] = '\0';
	if (pid == NULL || n == NULL || strtol(pid, NULL, 10) != (long)getpid())
		goto out;
	count = strtol(n, NULL, 10);
	if (count <= 0 || count > 1 << 20)
		goto out;
	copy = names != NULL ? strdup(names) : NULL;
	name = copy != NULL ? strtok_r(copy, ":", &save) : NULL;
	for (k = 0; k < count; k++) {
		int fd = LISTEN_FDS_START + (int)k;

		if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0)
			continue;
		if (name == NULL || handed_add(name, fd) != 0)
			close(fd); /* unnamed: not one of ours */
		else
			top = fd;
		name = name != NULL ? strtok_r(NULL, ":", &save) : NULL;
	}
	free(copy);
out:
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	return top;
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

/* A message to systemd (READY=1, STOPPING=1, ...); nothing without systemd. */
void fdstore_notify(const char *msg)
{
	if (fds.kind == FDSTORE_SYSTEMD)
		fdpass_send(fds.sock, &fds.addr, fds.addr_len, msg, -1);
}

static int keeper_start(const struct sockaddr_un *sa, const char *state_dir, unsigned grace,
			char *err, size_t errlen);
static int keeper_connect(const struct sockaddr_un *sa);

/*
 * The first descriptor to keep starts the keeper (the control socket's,
 * in main(), before any thread): a daemon that fails to start leaves none.
 */
static int keeper_spawn(void)
{
	char err[512], msg[32];
	int tries;

	if (keeper_start(&fds.keeper, fds.state_dir, fds.grace, err, sizeof err) != 0) {
		log_msg(LOG_ERR, "%s: a restart will be a stop", err);
		fds.kind = FDSTORE_NONE;
		return -1;
	}
	for (tries = 0; tries < 200 && (fds.sock = keeper_connect(&fds.keeper)) < 0; tries++)
		usleep(5000);
	if (fds.sock < 0) {
		log_msg(LOG_ERR, "cannot reach the keeper at %s: %s: a restart will be a stop",
			fds.keeper.sun_path, strerror(-fds.sock));
		fds.kind = FDSTORE_NONE;
		return -1;
	}
	snprintf(msg, sizeof msg, "G%u", fds.grace);
	return fdpass_send(fds.sock, NULL, 0, msg, -1);
}

/* Keep fd under name (a duplicate: fd stays the caller's); 0 or -errno. */
int fdstore_put(const char *name, int fd)
{
	char msg[512];

	switch (fds.kind) {
	case FDSTORE_SYSTEMD:
		snprintf(msg, sizeof msg, "FDSTORE=1\nFDNAME=%s", name);
		return fdpass_send(fds.sock, &fds.addr, fds.addr_len, msg, fd);
	case FDSTORE_KEEPER:
		if (fds.sock < 0 && keeper_spawn() != 0)
			return -EPIPE;
		snprintf(msg, sizeof msg, "P%s", name);
		return fdpass_send(fds.sock, NULL, 0, msg, fd);
	default:
		return -ENOTSUP;
	}
}

/* Let go of what is kept under name. */
void fdstore_drop(const char *name)
{
	char msg[512];

	switch (fds.kind) {
	case FDSTORE_SYSTEMD:
		snprintf(msg, sizeof msg, "FDSTOREREMOVE=1\nFDNAME=%s", name);
		fdpass_send(fds.sock, &fds.addr, fds.addr_len, msg, -1);
		break;
	case FDSTORE_KEEPER:
		snprintf(msg, sizeof msg, "D%s", name);
		if (fds.sock >= 0)
			fdpass_send(fds.sock, NULL, 0, msg, -1);
		break;
	default:
		break;
	}
}

enum fdstore_kind fdstore_kind(void)
{
	return fds.kind;
}

/* The descriptor the previous agentfsd kept under name, now the caller's; -1: none. */
int fdstore_take(const char *name)
{
	size_t k;
	int fd = -1;

	pthread_mutex_lock(&fds.lock);
	for (k = 0; k < fds.nhanded; k++) {
		if (fds.handed[k].fd >= 0 && strcmp(fds.handed[k].name, name) == 0) {
			fd = fds.handed[k].fd;
			fds.handed[k].fd = -1;
			break;
		}
	}
	pthread_mutex_unlock(&fds.lock);
	return fd;
}

/*
 * The socket the last agentfsd kept under name, if it still listens at
 * path: then it is taken as it is, and a client that connected while no
 * agentfsd ran, waiting in its backlog, is answered now, where a new socket
 * would have refused it (ENOENT, ECONNREFUSED). -1: none (any other is closed).
 */
int fdstore_take_socket(const char *name, const char *path)
{
	struct sockaddr_un sa;
	struct stat st;
	socklen_t len;
	int fd = fdstore_take(name), on = 0;

	if (fd < 0)
		return -1;
	len = sizeof on;
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) == 0 && on) {
		len = sizeof sa;
		memset(&sa, 0, sizeof sa);
		if (getsockname(fd, (struct sockaddr *)&sa, &len) == 0 &&
		    sa.sun_family == AF_UNIX &&
		    strncmp(sa.sun_path, path, sizeof sa.sun_path) == 0 && lstat(path, &st) == 0 &&
		    S_ISSOCK(st.st_mode) &&
		    /* the loop accepts until EAGAIN: a blocking socket would stall it */
		    (on = fcntl(fd, F_GETFL)) >= 0 &&
		    ((on & O_NONBLOCK) || fcntl(fd, F_SETFL, on | O_NONBLOCK) == 0))
			return fd;
	}
	close(fd);
	return -1;
}

/* Each handed-over descriptor not yet taken: fn takes it (true) or leaves it. */
void fdstore_handed_each(bool (*fn)(void *arg, const char *name, int fd), void *arg)
{
	size_t k;

	pthread_mutex_lock(&fds.lock);
	for (k = 0; k < fds.nhanded; k++)
		if (fds.handed[k].fd >= 0 && fn(arg, fds.handed[k].name, fds.handed[k].fd))
			fds.handed[k].fd = -1;
	pthread_mutex_unlock(&fds.lock);
}

/* What no one took is closed and let go of in the store too. */
void fdstore_handed_done(void)
{
	size_t k;

	pthread_mutex_lock(&fds.lock);
	for (k = 0; k < fds.nhanded; k++) {
		if (fds.handed[k].fd >= 0) {
			log_msg(LOG_INFO, "restart: letting go of %s (nothing uses it now)",
				fds.handed[k].name);
			fdstore_drop(fds.handed[k].name);
			close(fds.handed[k].fd);
		}
		free(fds.handed[k].name);
	}
	free(fds.handed);
	fds.handed = NULL;
	fds.nhanded = 0;
	pthread_mutex_unlock(&fds.lock);
}

/* Everything a running keeper holds, as handed over; 0 or -errno */
static int keeper_list(char *err, size_t errlen)
{
	char buf[512];
	int fd, r;

	if ((r = fdpass_send(fds.sock, NULL, 0, "L", -1)) != 0) {
		snprintf(err, errlen, "the keeper: %s", strerror(-r));
		return r;
	}
	for (;;) {
		if (fdstore_recv(fds.sock, buf, sizeof buf, &fd) <= 0) {
			snprintf(err, errlen,
				 "the keeper ended while handing its descriptors over");
			return -EPIPE;
		}
		if (buf[0] == 'E')
			return 0;
		if (buf[0] != 'F' || fd < 0 || handed_add(buf + 1, fd) != 0) {
			if (fd >= 0)
				close(fd);
		}
	}
}

static int keeper_connect(const struct sockaddr_un *sa)
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
 * Start a keeper on sa: the socket is made and bound here, and becomes its
 * descriptor 3; it leaves our session (setsid) and is not our child (a
 * second fork), so it outlives us however we end.
 */
static int keeper_start(const struct sockaddr_un *sa, const char *state_dir, unsigned grace,
			char *err, size_t errlen)
{
	char gs[16], *argv[] = {fds.self, "--keeper", (char *)state_dir, gs, NULL};
	int ls, st, e;
	pid_t pid;

	snprintf(gs, sizeof gs, "%u", grace);
	if (fds.self[0] == '\0') {
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
		int nul = open("/dev/null", O_RDWR | O_CLOEXEC);

		if (setsid() < 0 || fork() != 0)
			_exit(0);
		if (dup2(ls, 3) != 3 || nul < 0 || dup2(nul, 0) < 0 || dup2(nul, 1) < 0 ||
		    dup2(nul, 2) < 0)
			_exit(127);
		execv(fds.self, argv);
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

static int open_systemd(const char *path, char *err, size_t errlen)
{
	fds.addr.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof fds.addr.sun_path) {
		snprintf(err, errlen, "NOTIFY_SOCKET is too long");
		return -ENAMETOOLONG;
	}
	strcpy(fds.addr.sun_path, path);
	fds.addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path));
	if (path[0] == '@')
		fds.addr.sun_path[0] = '\0'; /* abstract */
	else
		fds.addr_len++;
	fds.sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fds.sock < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -errno;
	}
	fds.kind = FDSTORE_SYSTEMD;
	return 0;
}

/*
 * Before any thread runs: the store this agentfsd uses, and what it holds
 * from the one before. GRACE 0: none (a restart is a stop, as before).
 */
int fdstore_open(const char *state_dir, unsigned grace, char *err, size_t errlen)
{
	const char *notify = getenv("NOTIFY_SOCKET");
	char msg[32];
	int r;

	if (notify != NULL && notify[0] != '\0') {
		r = open_systemd(notify, err, errlen);
		unsetenv("NOTIFY_SOCKET");
		return r;
	}
	if (grace == 0)
		return 0;
	fds.keeper.sun_family = AF_UNIX;
	if (snprintf(fds.keeper.sun_path, sizeof fds.keeper.sun_path, "%s/keeper.sock",
		     state_dir) >= (int)sizeof fds.keeper.sun_path) {
		snprintf(err, errlen, "%s/keeper.sock: path too long for a socket", state_dir);
		return -ENAMETOOLONG;
	}
	snprintf(fds.state_dir, sizeof fds.state_dir, "%s", state_dir);
	fds.grace = grace;
	fds.kind = FDSTORE_KEEPER;
	fds.sock = keeper_connect(&fds.keeper);
	if (fds.sock < 0)
		return 0; /* none: started with the first descriptor kept */
	log_msg(LOG_INFO, "restart: the keeper holds the last agentfsd's descriptors");
	if ((r = keeper_list(err, errlen)) != 0)
		return r;
	snprintf(msg, sizeof msg, "G%u", grace);
	return fdpass_send(fds.sock, NULL, 0, msg, -1);
}

/* The keeper's grace period, from a configuration read again */
void fdstore_set_grace(unsigned seconds)
{
	char msg[32];

	fds.grace = seconds;
	if (fds.kind != FDSTORE_KEEPER || fds.sock < 0)
		return;
	snprintf(msg, sizeof msg, "G%u", seconds);
	fdpass_send(fds.sock, NULL, 0, msg, -1);
}

/* agentfs shutdown: the store lets go of everything (mounts end as a stop ends them). */
void fdstore_release(const char *state_dir)
{
	char path[PATH_MAX];

	if (fds.kind != FDSTORE_KEEPER || fds.sock < 0)
		return;
	fdpass_send(fds.sock, NULL, 0, "R", -1);
	snprintf(path, sizeof path, "%s/keeper.sock", state_dir);
	unlink(path);
}

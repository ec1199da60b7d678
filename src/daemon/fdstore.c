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
 *
 * The keeper is a process like any other: SIGKILL, the OOM killer or a
 * crash end it while agentfsd runs, and with it everything it held. So
 * agentfsd remembers what it holds (kept[]: the name and a duplicate of
 * our own, closed when dropped; what the keeper handed over at start is
 * there too), watches its connection in the event loop (fdstore_watch: the
 * keeper never sends unasked, so a readable connection is an ended one),
 * and starts a new keeper that is given all of it again (keeper_replace).
 * Each kept descriptor is thus open twice in agentfsd: the caller's and
 * kept[]'s. The callers (fusefs, listen.c, restart.c) close theirs when
 * they please, often before the drop, so kept[] cannot borrow theirs.
 * One lock (keep_lock) covers kept[], the keeper's connection and each
 * message on it: a put from a job thread and a refill never interleave.
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

#include <event2/event.h>

#define LISTEN_FDS_START 3
#define KEPT_NBUCKETS 1024
#define KEEPER_TRIES 3 /* keepers started in a row for one that ended */

struct handed {
	char *name;
	int fd;
};

/* What the keeper holds for us, each with a duplicate of our own */
struct kept {
	struct kept *next;
	int fd;
	char name[];
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
	pthread_mutex_t lock; /* handed; taken before keep_lock */
	struct handed *handed;
	size_t nhanded;
	/* the keeper: sock, grace, kept, nkept, released, watch (kind is atomic) */
	pthread_mutex_t keep_lock;
	struct kept *kept[KEPT_NBUCKETS];
	size_t nkept;
	bool released;	    /* agentfs shutdown: the keeper ends, and stays ended */
	struct event *watch; /* sock readable: the keeper ended */
} fds = {.kind = FDSTORE_NONE,
	 .sock = -1,
	 .lock = PTHREAD_MUTEX_INITIALIZER,
	 .keep_lock = PTHREAD_MUTEX_INITIALIZER};

/* The kind changes while threads read it: a keeper that cannot be replaced makes it NONE. */
static enum fdstore_kind kind_get(void)
{
	return __atomic_load_n(&fds.kind, __ATOMIC_ACQUIRE);
}

static void kind_set(enum fdstore_kind k)
{
	__atomic_store_n(&fds.kind, k, __ATOMIC_RELEASE);
}

static struct kept **kept_find(const char *name)
{
	uint64_t h = 1469598103934665603ull;
	struct kept **pp;
	const char *s;

	for (s = name; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	for (pp = &fds.kept[h % KEPT_NBUCKETS]; *pp != NULL; pp = &(*pp)->next)
		if (strcmp((*pp)->name, name) == 0)
			break;
	return pp;
}

/* Remember that the keeper holds fd under name (a duplicate of ours); 0 or -errno */
static int kept_add(const char *name, int fd)
{
	struct kept **pp = kept_find(name), *k;
	int dup = fcntl(fd, F_DUPFD_CLOEXEC, 3);

	if (dup < 0)
		return -errno;
	if (*pp != NULL) {
		close((*pp)->fd);
		(*pp)->fd = dup;
		return 0;
	}
	k = malloc(sizeof *k + strlen(name) + 1);
	if (k == NULL) {
		close(dup);
		return -ENOMEM;
	}
	k->next = NULL;
	k->fd = dup;
	strcpy(k->name, name);
	*pp = k;
	fds.nkept++;
	return 0;
}

static void kept_del(const char *name)
{
	struct kept **pp = kept_find(name), *k = *pp;

	if (k == NULL)
		return;
	*pp = k->next;
	close(k->fd);
	free(k);
	fds.nkept--;
}

static void kept_clear(void)
{
	struct kept *k;
	size_t b;

	for (b = 0; b < KEPT_NBUCKETS; b++) {
		while ((k = fds.kept[b]) != NULL) {
			fds.kept[b] = k->next;
			close(k->fd);
			free(k);
		}
	}
	fds.nkept = 0;
}

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
	if (kind_get() == FDSTORE_SYSTEMD)
		fdpass_send(fds.sock, &fds.addr, fds.addr_len, msg, -1);
}

static int keeper_start(const struct sockaddr_un *sa, const char *state_dir, unsigned grace,
			char *err, size_t errlen);
static int keeper_connect(const struct sockaddr_un *sa);

/*
 * The first descriptor to keep starts the keeper (the control socket's,
 * in main(), before any thread): a daemon that fails to start leaves none.
 * Later only keeper_replace() starts one. With keep_lock held, or before
 * any thread runs.
 */
static int keeper_spawn(void)
{
	char err[512], msg[32];
	int tries;

	if (keeper_start(&fds.keeper, fds.state_dir, fds.grace, err, sizeof err) != 0) {
		log_msg(LOG_ERR, "%s: a restart will be a stop", err);
		kind_set(FDSTORE_NONE);
		return -1;
	}
	for (tries = 0; tries < 200 && (fds.sock = keeper_connect(&fds.keeper)) < 0; tries++)
		usleep(5000);
	if (fds.sock < 0) {
		log_msg(LOG_ERR, "cannot reach the keeper at %s: %s: a restart will be a stop",
			fds.keeper.sun_path, strerror(-fds.sock));
		fds.sock = -1;
		kind_set(FDSTORE_NONE);
		return -1;
	}
	snprintf(msg, sizeof msg, "G%u", fds.grace);
	return fdpass_send(fds.sock, NULL, 0, msg, -1);
}

/* The keeper ended under this send: the watch gives the next one what kept[] holds. */
static bool keeper_gone(int r)
{
	return r == -EPIPE || r == -ECONNRESET || r == -ENOTCONN;
}

/* fdstore_put to the keeper, with keep_lock held */
static int keeper_put(const char *name, int fd)
{
	char msg[512];
	int r;

	if (kind_get() != FDSTORE_KEEPER) /* none could be started again */
		return -ENOTSUP;
	if (fds.sock < 0 && keeper_spawn() != 0)
		return -EPIPE;
	if ((r = kept_add(name, fd)) != 0)
		return r;
	snprintf(msg, sizeof msg, "P%s", name);
	r = fdpass_send(fds.sock, NULL, 0, msg, fd);
	if (r != 0 && !keeper_gone(r))
		kept_del(name); /* not kept (a keeper that stopped reading) */
	return keeper_gone(r) ? 0 : r;
}

/* Keep fd under name (a duplicate: fd stays the caller's); 0 or -errno. */
int fdstore_put(const char *name, int fd)
{
	char msg[512];
	int r;

	switch (kind_get()) {
	case FDSTORE_SYSTEMD:
		snprintf(msg, sizeof msg, "FDSTORE=1\nFDNAME=%s", name);
		return fdpass_send(fds.sock, &fds.addr, fds.addr_len, msg, fd);
	case FDSTORE_KEEPER:
		pthread_mutex_lock(&fds.keep_lock);
		r = keeper_put(name, fd);
		pthread_mutex_unlock(&fds.keep_lock);
		return r;
	default:
		return -ENOTSUP;
	}
}

/* Let go of what is kept under name. */
void fdstore_drop(const char *name)
{
	char msg[512];

	switch (kind_get()) {
	case FDSTORE_SYSTEMD:
		snprintf(msg, sizeof msg, "FDSTOREREMOVE=1\nFDNAME=%s", name);
		fdpass_send(fds.sock, &fds.addr, fds.addr_len, msg, -1);
		break;
	case FDSTORE_KEEPER:
		snprintf(msg, sizeof msg, "D%s", name);
		pthread_mutex_lock(&fds.keep_lock);
		kept_del(name);
		if (fds.sock >= 0)
			fdpass_send(fds.sock, NULL, 0, msg, -1);
		pthread_mutex_unlock(&fds.keep_lock);
		break;
	default:
		break;
	}
}

enum fdstore_kind fdstore_kind(void)
{
	return kind_get();
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
			continue;
		}
		/* still the keeper's: one to give again to a next keeper */
		if ((r = kept_add(buf + 1, fd)) != 0)
			log_msg(LOG_WARNING,
				"restart: %s: %s: a next keeper would not be given it",
				buf + 1, strerror(-r));
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
	kind_set(FDSTORE_SYSTEMD);
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
	kind_set(FDSTORE_KEEPER);
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

	pthread_mutex_lock(&fds.keep_lock);
	fds.grace = seconds;
	if (kind_get() == FDSTORE_KEEPER && fds.sock >= 0) {
		snprintf(msg, sizeof msg, "G%u", seconds);
		fdpass_send(fds.sock, NULL, 0, msg, -1);
	}
	pthread_mutex_unlock(&fds.keep_lock);
}

/* agentfs shutdown: the store lets go of everything (mounts end as a stop ends them). */
void fdstore_release(const char *state_dir)
{
	char path[PATH_MAX];

	if (kind_get() != FDSTORE_KEEPER)
		return;
	pthread_mutex_lock(&fds.keep_lock);
	fds.released = true; /* its end is no news: no next keeper */
	if (fds.sock >= 0) {
		fdpass_send(fds.sock, NULL, 0, "R", -1);
		snprintf(path, sizeof path, "%s/keeper.sock", state_dir);
		unlink(path);
	}
	kept_clear();
	pthread_mutex_unlock(&fds.keep_lock);
}

/* Everything kept[] holds, to a keeper just started; 0 or -errno (it ended too) */
static int keeper_refill(void)
{
	char msg[512];
	struct kept *k;
	size_t b;
	int r;

	for (b = 0; b < KEPT_NBUCKETS; b++) {
		for (k = fds.kept[b]; k != NULL; k = k->next) {
			snprintf(msg, sizeof msg, "P%s", k->name);
			if ((r = fdpass_send(fds.sock, NULL, 0, msg, k->fd)) != 0)
				return r;
		}
	}
	return 0;
}

static void on_keeper(evutil_socket_t s, short what, void *arg);

/* Watch the keeper's connection; with keep_lock held, in the loop's thread */
static void watch_arm(struct event_base *base)
{
	if (fds.watch != NULL)
		event_free(fds.watch);
	fds.watch = event_new(base, fds.sock, EV_READ | EV_PERSIST, on_keeper, base);
	if (fds.watch == NULL || event_add(fds.watch, NULL) != 0)
		log_msg(LOG_WARNING, "cannot watch the keeper: out of memory: if it ends, a "
				     "restart or crash of agentfsd ends every mount");
}

/*
 * The keeper ended while we run, and with it what it held: a restart or a
 * crash of agentfsd now would end every mount. A new keeper is given all
 * of it again; one that ends again while being given it is replaced too,
 * KEEPER_TRIES times in a row. With keep_lock held, in the loop's thread.
 */
static void keeper_replace(struct event_base *base)
{
	size_t n = fds.nkept;
	int tries, r = 0;

	event_free(fds.watch);
	fds.watch = NULL;
	close(fds.sock);
	fds.sock = -1;
	log_msg(LOG_WARNING,
		"the keeper (%s) ended: it held %zu descriptors (the mounts, their open files, "
		"the sockets) so that a restart or crash of agentfsd is invisible to the bots; "
		"starting a new keeper and giving it all of them again",
		fds.keeper.sun_path, n);
	for (tries = 0; tries < KEEPER_TRIES; tries++) {
		if (keeper_spawn() != 0) { /* logged: a restart will be a stop */
			kept_clear();
			return;
		}
		if ((r = keeper_refill()) == 0) {
			watch_arm(base);
			log_msg(LOG_INFO, "a new keeper holds the %zu descriptors: a restart or crash "
					  "of agentfsd is invisible to the bots again", n);
			return;
		}
		close(fds.sock);
		fds.sock = -1;
	}
	log_msg(LOG_ERR, "the new keepers ended too while given the descriptors (%s): none is "
			 "kept any more, a restart or crash of agentfsd ends every mount",
		strerror(-r));
	kind_set(FDSTORE_NONE);
	kept_clear();
}

static void on_keeper(evutil_socket_t s, short what, void *arg)
{
	char buf[512];
	ssize_t n;
	int fd;

	(void)what;
	pthread_mutex_lock(&fds.keep_lock);
	if (s != fds.sock || kind_get() != FDSTORE_KEEPER)
		goto out; /* an old connection's last event */
	n = recv(s, buf, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		goto out;
	if (n > 0) { /* a message not asked for: not a keeper's; dropped */
		if (fdstore_recv(s, buf, sizeof buf, &fd) >= 0 && fd >= 0)
			close(fd);
		goto out;
	}
	if (fds.released) { /* agentfs shutdown told it to end */
		event_free(fds.watch);
		fds.watch = NULL;
		goto out;
	}
	keeper_replace(arg);
out:
	pthread_mutex_unlock(&fds.keep_lock);
}

/*
 * In the event loop, before it runs: notice at once when the keeper ends
 * (the keeper never sends unasked: its connection readable is its end).
 * Starts the keeper if nothing was kept yet.
 */
void fdstore_watch(struct event_base *base)
{
	if (kind_get() != FDSTORE_KEEPER)
		return;
	pthread_mutex_lock(&fds.keep_lock);
	if (!fds.released && (fds.sock >= 0 || keeper_spawn() == 0))
		watch_arm(base);
	pthread_mutex_unlock(&fds.keep_lock);
}

/* Before the loop is freed */
void fdstore_unwatch(void)
{
	pthread_mutex_lock(&fds.keep_lock);
	if (fds.watch != NULL)
		event_free(fds.watch);
	fds.watch = NULL;
	pthread_mutex_unlock(&fds.keep_lock);
}

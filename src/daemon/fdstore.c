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
 * Calls from any thread: each is one datagram or SEQPACKET message.
 *
 * The keeper is a process like any other: SIGKILL, the OOM killer or a
 * crash end it while agentfsd runs, and with it everything it held. So
 * agentfsd remembers what it holds (kept[]), watches its connection in the
 * event loop (fdstore_watch: the keeper never sends unasked, so a readable
 * connection is an ended one), and starts a new keeper that is given all
 * of it again (keeper_replace), from the descriptors agentfsd holds anyway:
 * kept[] owns only what was given to it (fdstore_give), no kept descriptor
 * is open twice here. As no number may be trusted once its owner could
 * have closed it (numbers are reused at once):
 *  - fdstore_put lends fd: its owner keeps it open at that number until
 *    fdstore_drop (or fdstore_forget) of its name has returned;
 *  - what the previous keeper handed over is lent by handed[] until taken;
 *    once taken (fdstore_take, fdstore_handed_each) its number is
 *    forgotten, until its taker says it holds it for good (fdstore_back);
 *  - a name whose descriptor is forgotten is not given to a next keeper
 *    (it is as soon as it is back).
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

/* What the keeper holds for us, and where it is in this process */
struct kept {
	struct kept *next;
	int fd;	    /* -1: taken, not back yet (not to be given to a next keeper) */
	bool own;   /* fd is kept[]'s (fdstore_give), else lent by its owner */
	bool given; /* the running keeper has it */
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
	bool released;	     /* agentfs shutdown: the keeper ends, and stays ended */
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

/* Where name's descriptor is now (fd, own: kept[]'s); its entry, NULL: out of memory */
static struct kept *kept_set(const char *name, int fd, bool own)
{
	struct kept **pp = kept_find(name), *k = *pp;

	if (k == NULL) {
		k = malloc(sizeof *k + strlen(name) + 1);
		if (k == NULL)
			return NULL;
		k->next = NULL;
		strcpy(k->name, name);
		*pp = k;
		fds.nkept++;
	} else if (k->own && k->fd >= 0 && k->fd != fd) {
		close(k->fd);
	}
	k->fd = fd;
	k->own = own;
	k->given = false;
	return k;
}

/* name's descriptor is not to be trusted any more (taken, or closed by its owner) */
static void kept_forget(const char *name)
{
	struct kept *k = *kept_find(name);

	if (k == NULL)
		return;
	if (k->own && k->fd >= 0)
		close(k->fd);
	k->fd = -1;
	k->own = false;
}

/* name is let go of; a descriptor of kept[]'s own is closed unless keep_fd */
static void kept_del(const char *name, bool keep_fd)
{
	struct kept **pp = kept_find(name), *k = *pp;

	if (k == NULL)
		return;
	*pp = k->next;
	if (k->own && k->fd >= 0 && !keep_fd)
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
			if (k->own && k->fd >= 0)
				close(k->fd);
			free(k);
		}
	}
	fds.nkept = 0;
}

/* Handed-over fd is taken: its number is the taker's now (fds.lock held) */
static void handed_taken(const char *name, int fd)
{
	struct kept *k;

	pthread_mutex_lock(&fds.keep_lock);
	k = *kept_find(name);
	if (k != NULL && !k->own && k->fd == fd)
		kept_forget(name);
	pthread_mutex_unlock(&fds.keep_lock);
}

/* Handed-over fd was left by who was asked to take it: handed[] lends it again */
static void handed_untaken(const char *name, int fd)
{
	struct kept *k;

	pthread_mutex_lock(&fds.keep_lock);
	k = *kept_find(name);
	if (k != NULL && k->fd < 0)
		k->fd = fd;
	pthread_mutex_unlock(&fds.keep_lock);
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

/* A message to systemd (READY=1, STOPPING=1, ...); nothing without systemd. */
void fdstore_notify(const char *msg)
{
	if (kind_get() == FDSTORE_SYSTEMD)
		fdpass_send(fds.sock, &fds.addr, fds.addr_len, msg, -1);
}

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

	if (keeper_start(fds.self, &fds.keeper, fds.state_dir, fds.grace, err, sizeof err) != 0) {
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

/* fdstore_put (own: fdstore_give) to the keeper, with keep_lock held; fd is not closed here */
static int keeper_put(const char *name, int fd, bool own)
{
	struct kept *k;
	char msg[512];
	int r;

	if (kind_get() != FDSTORE_KEEPER) /* none could be started again */
		return -ENOTSUP;
	if (fds.sock < 0 && keeper_spawn() != 0)
		return -EPIPE;
	if ((k = kept_set(name, fd, own)) == NULL)
		return -ENOMEM;
	snprintf(msg, sizeof msg, "P%s", name);
	r = fdpass_send(fds.sock, NULL, 0, msg, fd);
	if (r == 0)
		k->given = true;
	else if (!keeper_gone(r))
		kept_del(name, true); /* not kept (a keeper that stopped reading) */
	return keeper_gone(r) ? 0 : r;
}

/*
 * Keep fd under name; 0 or -errno. fd is lent: the caller keeps it open at
 * that number until fdstore_drop(name) (or fdstore_forget) has returned,
 * as a next keeper may be given it from there.
 */
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
		r = keeper_put(name, fd, false);
		pthread_mutex_unlock(&fds.keep_lock);
		return r;
	default:
		return -ENOTSUP;
	}
}

/* fdstore_put of a descriptor the caller has no use for: the store's now, whatever happens */
int fdstore_give(const char *name, int fd)
{
	int r;

	if (kind_get() != FDSTORE_KEEPER) {
		r = fdstore_put(name, fd);
		close(fd);
		return r;
	}
	pthread_mutex_lock(&fds.keep_lock);
	r = keeper_put(name, fd, true);
	pthread_mutex_unlock(&fds.keep_lock);
	if (r != 0)
		close(fd);
	return r;
}

/*
 * What the caller took from the store (fdstore_take, fdstore_handed_each)
 * is kept under name still, and it holds it for good now at fd, lent as by
 * fdstore_put (give: fd is the store's, as by fdstore_give). Nothing if name
 * was dropped or put again meanwhile. A keeper started since is given it.
 */
void fdstore_back(const char *name, int fd, bool give)
{
	struct kept *k;
	char msg[512];

	if (kind_get() != FDSTORE_KEEPER) {
		if (give)
			close(fd);
		return;
	}
	pthread_mutex_lock(&fds.keep_lock);
	k = *kept_find(name);
	if (k == NULL || k->fd >= 0) {
		if (give)
			close(fd);
	} else {
		k->fd = fd;
		k->own = give;
		snprintf(msg, sizeof msg, "P%s", name);
		if (!k->given && fds.sock >= 0 && fdpass_send(fds.sock, NULL, 0, msg, fd) == 0)
			k->given = true;
	}
	pthread_mutex_unlock(&fds.keep_lock);
}

/* The caller closes what it put under name, which stays kept (a restart) */
void fdstore_forget(const char *name)
{
	if (kind_get() != FDSTORE_KEEPER)
		return;
	pthread_mutex_lock(&fds.keep_lock);
	kept_forget(name);
	pthread_mutex_unlock(&fds.keep_lock);
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
		kept_del(name, false);
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

/*
 * The descriptor the previous agentfsd kept under name, now the caller's
 * (still kept: a next keeper is given it only once fdstore_back); -1: none.
 */
int fdstore_take(const char *name)
{
	size_t k;
	int fd = -1;

	pthread_mutex_lock(&fds.lock);
	for (k = 0; k < fds.nhanded; k++) {
		if (fds.handed[k].fd >= 0 && strcmp(fds.handed[k].name, name) == 0) {
			fd = fds.handed[k].fd;
			handed_taken(name, fd);
			fds.handed[k].fd = -1;
			break;
		}
	}
	pthread_mutex_unlock(&fds.lock);
	return fd;
}

/*
 * Each handed-over descriptor not yet taken: fn takes it (true: then as by
 * fdstore_take) or leaves it.
 */
void fdstore_handed_each(bool (*fn)(void *arg, const char *name, int fd), void *arg)
{
	size_t k;

	pthread_mutex_lock(&fds.lock);
	for (k = 0; k < fds.nhanded; k++) {
		struct handed *h = &fds.handed[k];

		if (h->fd < 0)
			continue;
		handed_taken(h->name, h->fd); /* before fn: it may give it back at once */
		if (fn(arg, h->name, h->fd))
			h->fd = -1;
		else
			handed_untaken(h->name, h->fd);
	}
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
	struct kept *k;
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
		/* still the keeper's; lent by handed[] to give to a next keeper */
		if ((k = kept_set(buf + 1, fd, false)) != NULL)
			k->given = true;
		else
			log_msg(LOG_WARNING,
				"restart: %s: out of memory: a next keeper would not be given it",
				buf + 1);
	}
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

/*
 * Everything kept[] holds, to a keeper just started: 0 or -errno (it ended
 * too). *left: those taken and not back yet, given once back (fdstore_back).
 */
static int keeper_refill(size_t *left)
{
	char msg[512];
	struct kept *k;
	size_t b;
	int r;

	*left = 0;
	for (b = 0; b < KEPT_NBUCKETS; b++) {
		for (k = fds.kept[b]; k != NULL; k = k->next) {
			k->given = false;
			if (k->fd < 0) {
				(*left)++;
				continue;
			}
			snprintf(msg, sizeof msg, "P%s", k->name);
			if ((r = fdpass_send(fds.sock, NULL, 0, msg, k->fd)) != 0)
				return r;
			k->given = true;
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
	size_t n = fds.nkept, left;
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
		if ((r = keeper_refill(&left)) == 0) {
			watch_arm(base);
			log_msg(LOG_INFO,
				"a new keeper holds the %zu descriptors: a restart or crash "
				"of agentfsd is invisible to the bots again",
				n - left);
			if (left > 0)
				log_msg(LOG_INFO,
					"%zu more, taken over at start and not in use yet, "
					"are given to it once they are",
					left);
			return;
		}
		close(fds.sock);
		fds.sock = -1;
	}
	log_msg(LOG_ERR,
		"the new keepers ended too while given the descriptors (%s): none is "
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

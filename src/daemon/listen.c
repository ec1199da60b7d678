/* SPDX-License-Identifier: MIT */
/*
 * The sockets: the control socket and every bot's, bound with their owner
 * and mode (or taken back from the fd store after a restart), listened on,
 * and closed. A client accepted is checked here (SO_PEERCRED: root, the
 * bot's user, or on the control socket an operator) and admitted within
 * the shares of max_clients before server.c serves it as a peer.
 */
#include "src/daemon/server-int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <event2/event.h>

/*
 * The backlog is the kernel's (thousands): after this many accepts a socket
 * waits one turn of the loop, so the clients accepted are served and closed
 * before more come.
 */
#define ACCEPT_BURST 64

/*
 * Out of descriptors (every mount's server shares this process's table with
 * the sockets), a client waits in the backlog until one is free. A shortage
 * that lasts (a limit too low for what the bots hold open) would keep every
 * client waiting with no word: after SHORT_TELL_MS each waiting client is
 * accepted on the descriptor kept in reserve for it, told why and closed.
 */
#define SHORT_TELL_MS 1000
#define SHORT_RETRY_MS 200

/* A one-line answer to a client not served (it is nonblocking: a short line fits), then close. */
static void say_and_close(int fd, const char *line, int n)
{
	if (write(fd, line, (size_t)n) < 0)
		log_msg(LOG_DEBUG, "write: %s", strerror(errno));
	close(fd);
}

/* One error line for a client whose user may not use this socket, then close. */
static void peer_refuse(int fd, const struct listener *ls)
{
	char line[256];
	int n;

	if (ls->bot == NULL && ls->srv->cfg->group_found)
		n = snprintf(line, sizeof line,
			     "{\"ok\":false,\"error\":{\"code\":\"forbidden\",\"message\":"
			     "\"permission denied: the control socket is " CONTROL_SOCKET_DENIED
			     ", and members of group %s\"}}\n",
			     ls->srv->cfg->group != NULL ? ls->srv->cfg->group : "agentfs");
	else if (ls->bot == NULL)
		n = snprintf(line, sizeof line,
			     "{\"ok\":false,\"error\":{\"code\":\"forbidden\",\"message\":"
			     "\"permission denied: the control socket is " CONTROL_SOCKET_DENIED
			     "\"}}\n");
	else
		n = snprintf(
			line, sizeof line,
			"{\"ok\":false,\"error\":{\"code\":\"forbidden\",\"message\":"
			"\"permission denied: this bot's socket is for root and uid %u only\"}}\n",
			(unsigned)ls->owner);
	say_and_close(fd, line, n);
}

/*
 * Shares of max_clients (agentfsd(8), LIMITS): no one process and no one
 * bot's socket holds more than a quarter of it, and the bots' sockets
 * together leave a quarter to the control socket, so one bot (or one
 * runaway client) holding connections cannot lock out the others or the
 * operator.
 */
static unsigned client_share(const struct server *srv)
{
	unsigned max = srv->cfg->max_clients, s = max / 4;

	if (s < 16)
		s = 16;
	return s < max ? s : max;
}

/* NULL if a client of pid on ls may be served now, else why not */
/*
 * NULL if a client of pid on ls, charged to fam and op (op_shared: not
 * root's), may be served now, else why not: no one process, no one family's
 * sockets and no one operator other than root holds more than a share.
 */
static const char *admit(const struct server *srv, const struct listener *ls, pid_t pid,
			 const struct account *fam, const struct account *op, bool op_shared)
{
	unsigned share = client_share(srv), of_pid = 0, of_fam = 0, of_op = 0;
	const struct peer *p;

	if (srv->npeers >= srv->cfg->max_clients)
		return "too many clients";
	if (ls->bot != NULL && srv->npeers - srv->nctl + share >= srv->cfg->max_clients)
		return "too many clients on bots' sockets (the rest is kept for the control "
		       "socket)";
	if (srv->npeers < share)
		return NULL; /* no one can be over a share yet: skip the count */
	TAILQ_FOREACH(p, &srv->peers, entry) {
		if (p->dead)
			continue;
		of_pid += p->pid == pid;
		of_fam += fam != NULL && p->fam == fam;
		of_op += op_shared && p->op == op;
	}
	if (of_pid >= share)
		return "too many connections from one process";
	if (of_fam >= share)
		return "too many clients on this bot's socket and its family's";
	if (of_op >= share)
		return "too many clients of this operator and its bots";
	return NULL;
}

/* Is the client on fd in the operators' group (its primary or a supplementary group)? */
static bool peer_in_group(int fd, const struct ucred *cred, const struct config *cfg)
{
	gid_t groups[1024];
	socklen_t len = sizeof groups;
	size_t i;

	if (!cfg->group_found)
		return false;
	if (cred->gid == cfg->group_gid)
		return true;
	/* The groups it had when it connected; too many to read: not decided, so no. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) != 0)
		return false;
	for (i = 0; i < len / sizeof *groups; i++)
		if (groups[i] == cfg->group_gid)
			return true;
	return false;
}

/* May this client use the socket? Root, the bot's user, or on the control socket an operator. */
static bool peer_allowed(int fd, const struct ucred *cred, const struct listener *ls)
{
	if (cred->uid == 0)
		return true;
	if (ls->bot != NULL)
		return cred->uid == ls->owner;
	return peer_in_group(fd, cred, ls->srv->cfg);
}

/* A client accepted on ls: checked, admitted and served, or told why not. */
static void listener_accept(struct listener *ls, int fd)
{
	struct server *srv = ls->srv;
	struct account *fam, *op;
	struct ucred cred;
	socklen_t clen = sizeof cred;
	const char *why;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0) {
		close(fd);
		return;
	}
	if (!peer_allowed(fd, &cred, ls)) {
		/* The socket's mode already keeps others out; this is the second lock. */
		log_msg(LOG_WARNING, "refused a client with uid %u on %s", cred.uid, ls->path);
		peer_refuse(fd, ls);
		return;
	}
	/* a bot's client is its family's and its operator's; the control socket's, its uid's */
	fam = ls->bot != NULL ? acct_hold(ls->bot->fam) : NULL;
	op = ls->bot != NULL ? acct_hold(ls->bot->op) : acct_operator(cred.uid);
	if ((why = admit(srv, ls, cred.pid, fam, op,
			 (ls->bot != NULL ? ls->bot->owner_uid : cred.uid) != 0)) != NULL) {
		char busy[200];
		int n = snprintf(
			busy, sizeof busy,
			"{\"ok\":false,\"error\":{\"code\":\"limit\",\"message\":\"%s\"}}\n", why);

		say_and_close(fd, busy, n);
		acct_put(fam);
		acct_put(op);
		return;
	}
	server_peer_add(srv, fd, ls->bot, &cred, fam, op);
}

/* One error line to a client accepted on the reserve, then close. */
static void peer_tell_short(int fd)
{
	struct rlimit rl;
	char line[512];
	int n;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		rl.rlim_cur = 0;
	n = snprintf(line, sizeof line,
		     "{\"ok\":false,\"error\":{\"code\":\"limit\",\"message\":"
		     "\"agentfsd is out of file descriptors (its limit is %llu): it cannot serve "
		     "clients until some are free. Raise its limit (LimitNOFILE=, or prlimit "
		     "--nofile) and restart it (the mounts stay), or end what holds files open "
		     "in the bots' roots\"}}\n",
		     (unsigned long long)rl.rlim_cur);
	say_and_close(fd, line, n);
}

/*
 * Tell the clients waiting on ls that there are no descriptors for them:
 * each accepted on the reserve, answered and closed, the reserve taken again
 * (a server's thread may take the slot first: then the rest wait).
 */
static void listener_tell_short(struct listener *ls)
{
	struct server *srv = ls->srv;
	int i, fd;

	for (i = 0; i < ACCEPT_BURST; i++) {
		if (srv->reserve < 0 &&
		    (srv->reserve = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
			return;
		close(srv->reserve);
		fd = accept4(ls->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		srv->reserve = -1;
		if (fd < 0) {
			srv->reserve = open("/dev/null", O_RDONLY | O_CLOEXEC);
			return;
		}
		peer_tell_short(fd);
		srv->told++;
	}
}

/*
 * Accepts fail for want of descriptors: log the shortage once, tell the
 * waiting once it lasts. While clients wait, accepts fail every
 * SHORT_RETRY_MS; a failure after a quiet second (the shortage may have
 * ended with no client to see it) begins a new shortage, grace and all.
 */
static void listener_short(struct listener *ls, int e)
{
	struct server *srv = ls->srv;
	struct timeval pause = {0, SHORT_RETRY_MS * 1000};
	int64_t now = mono_ms();

	if (srv->short_since == 0 || now - srv->short_last > SHORT_TELL_MS) {
		srv->short_since = now;
		srv->told = 0;
		log_msg(LOG_WARNING,
			"accept on %s: %s: clients wait until descriptors are free, and "
			"are told so after %d ms",
			ls->path, strerror(e), SHORT_TELL_MS);
	} else if (now - srv->short_since >= SHORT_TELL_MS) {
		listener_tell_short(ls);
	}
	srv->short_last = now;
	event_del(ls->ev);
	event_add(ls->retry, &pause);
}

/* An accept worked: a shortage, if there was one, is over. */
static void listener_unshort(struct server *srv)
{
	if (srv->short_since == 0)
		return;
	log_msg(LOG_NOTICE,
		"accepting clients again: out of descriptors for %lld ms at least (%lu "
		"told so)",
		(long long)(srv->short_last - srv->short_since), srv->told);
	srv->short_since = 0;
}

/*
 * Clients wait on ls: accept a burst of them. A client reconnecting as
 * fast as it is served would otherwise keep the loop here and every other
 * client waiting; the event fires again once the loop has turned. Out of
 * descriptors, stop accepting for a moment instead of spinning.
 */
static void listener_ready(evutil_socket_t lfd, short what, void *arg)
{
	struct listener *ls = arg;
	int i, fd, e;

	for (i = 0; i < ACCEPT_BURST; i++) {
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd >= 0) {
			listener_unshort(ls->srv);
			listener_accept(ls, fd);
			continue;
		}
		e = errno;
		if (e == EINTR || e == ECONNABORTED)
			continue;
		if (e == EAGAIN || e == EWOULDBLOCK)
			return;
		if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
			listener_short(ls, e);
			return;
		}
		log_msg(LOG_ERR, "accept on %s: %s", ls->path, strerror(e));
		return;
	}
}

static void listener_retry(evutil_socket_t fd, short what, void *arg)
{
	struct listener *ls = arg;

	event_add(ls->ev, NULL);
}

/*
 * The listen backlog: the kernel's limit (net.core.somaxconn), so a burst of
 * clients (many bots' tools starting together) waits there while the loop
 * is busy instead of failing with EAGAIN; libevent's default is 128.
 */
static int listen_backlog(void)
{
	FILE *f = fopen("/proc/sys/net/core/somaxconn", "re");
	int n = 0;

	if (f != NULL) {
		if (fscanf(f, "%d", &n) != 1)
			n = 0;
		fclose(f);
	}
	if (n <= 0)
		n = SOMAXCONN;
	return n > 65535 ? 65535 : n;
}

/* Is a daemon answering on this socket path? Used to refuse a second one. */
static bool socket_in_use(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, r;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	strcpy(sa.sun_path, path);
	r = connect(fd, (struct sockaddr *)&sa, sizeof sa);
	close(fd);
	return r == 0;
}

static uid_t bot_socket_uid(const struct bot *b)
{
	return b->uid_set && b->uid != 0 ? b->uid : b->owner_uid;
}

/*
 * The socket the last agentfsd kept under name, if it still listens at
 * path: then it is taken as it is, and a client that connected while no
 * agentfsd ran, waiting in its backlog, is answered now, where a new socket
 * would have refused it (ENOENT, ECONNREFUSED). -1: none (any other is closed).
 */
static int take_socket(const char *name, const char *path)
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

/* A new socket bound at path, its mode set; -errno with err filled */
static int socket_bind(struct server *srv, const char *path, struct bot *bot, char *err,
		       size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	int fd, e;

	strcpy(sa.sun_path, path);
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "%s exists and is not a socket", path);
			return -EEXIST;
		}
		if (bot == NULL && socket_in_use(path)) {
			snprintf(err, errlen, "another agentfsd is listening on %s", path);
			return -EADDRINUSE;
		}
		unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		e = errno;
		snprintf(err, errlen, "socket: %s", strerror(e));
		return -e;
	}
	/*
	 * No umask(): it is process-wide, and mount workers create files at
	 * the same time. Nobody can connect before listen(), so the socket's
	 * mode is set on its path between bind and listen.
	 */
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		e = errno;
		close(fd);
		snprintf(err, errlen, "cannot bind %s: %s", path, strerror(e));
		return -e;
	}
	/* The control socket is for root and, if it exists, the operators' group. */
	if (bot == NULL && srv->cfg->group_found && chown(path, 0, srv->cfg->group_gid) != 0) {
		e = errno;
		close(fd);
		unlink(path);
		snprintf(err, errlen, "cannot chown %s: %s", path, strerror(e));
		return -e;
	}
	if (chmod(path, bot == NULL && srv->cfg->group_found ? 0660 : 0600) != 0) {
		e = errno;
		close(fd);
		unlink(path);
		snprintf(err, errlen, "cannot chmod %s: %s", path, strerror(e));
		return -e;
	}
	/* A bot's socket is for its commands: they run as its user. */
	if (bot != NULL && bot_socket_uid(bot) != 0 &&
	    chown(path, bot_socket_uid(bot), (gid_t)-1) != 0)
		log_msg(LOG_WARNING, "chown %s: %s", path, strerror(errno));
	return fd;
}

/*
 * Listen on path (bound now, or taken back from the fd store), accepting
 * clients at once or (hold) only from server_accept_start on: until then a
 * client that connects waits in the backlog.
 */
static int listen_on(struct server *srv, const char *path, struct bot *bot, bool hold, char *err,
		     size_t errlen)
{
	char store_name[BOT_NAME_MAX + 8];
	struct listener *ls;
	bool handed;
	int fd, e;

	if (srv->closed) {
		snprintf(err, errlen, "agentfsd is stopping: no new socket (%s)", path);
		return -ESHUTDOWN;
	}
	if (strlen(path) >= sizeof((struct sockaddr_un *)0)->sun_path) {
		snprintf(err, errlen, "socket path too long (%zu bytes, at most %zu): %s",
			 strlen(path), sizeof((struct sockaddr_un *)0)->sun_path - 1, path);
		return -ENAMETOOLONG;
	}
	snprintf(store_name, sizeof store_name, "%s%s", bot != NULL ? "bot." : "ctl",
		 bot != NULL ? bot->name : "");
	fd = take_socket(store_name, path);
	handed = fd >= 0;
	if (!handed && (fd = socket_bind(srv, path, bot, err, errlen)) < 0)
		return fd;
	ls = calloc(1, sizeof *ls);
	if (ls == NULL || (ls->path = strdup(path)) == NULL) {
		free(ls);
		close(fd);
		unlink(path);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ls->srv = srv;
	ls->bot = bot;
	snprintf(ls->store_name, sizeof ls->store_name, "%s", store_name);
	ls->owner = bot != NULL ? bot_socket_uid(bot) : geteuid();
	ls->fd = fd;
	ls->ev = event_new(srv->base, fd, EV_READ | EV_PERSIST, listener_ready, ls);
	ls->retry = evtimer_new(srv->base, listener_retry, ls);
	if (ls->ev == NULL || ls->retry == NULL || listen(fd, listen_backlog()) != 0 ||
	    (bot == NULL && event_priority_set(ls->ev, PRIO_OPERATOR) != 0) ||
	    (!hold && event_add(ls->ev, NULL) != 0)) {
		e = errno;
		if (ls->ev != NULL)
			event_free(ls->ev);
		if (ls->retry != NULL)
			event_free(ls->retry);
		close(fd);
		unlink(path);
		free(ls->path);
		free(ls);
		snprintf(err, errlen, "cannot listen on %s: %s", path,
			 strerror(e != 0 ? e : ENOMEM));
		return -ENOMEM;
	}
	LIST_INSERT_HEAD(&srv->listeners, ls, entry);
	/* kept for the next agentfsd (fdstore.c); a handed one is kept already, ours now */
	if (handed)
		fdstore_back(store_name, ls->fd, false);
	else if (fdstore_kind() != FDSTORE_NONE && fdstore_put(store_name, ls->fd) != 0)
		log_msg(LOG_WARNING, "cannot keep %s for a restart", path);
	if (bot != NULL)
		bot->sock = ls;
	return 0;
}

int server_listen(struct server *srv, const char *path, struct bot *bot, char *err, size_t errlen)
{
	return listen_on(srv, path, bot, false, err, errlen);
}

int server_listen_hold(struct server *srv, const char *path, struct bot *bot, char *err,
		       size_t errlen)
{
	return listen_on(srv, path, bot, true, err, errlen);
}

int server_accept_start(struct listener *ls)
{
	return event_add(ls->ev, NULL) == 0 ? 0 : -ENOMEM;
}

const char *server_listener_path(const struct listener *ls)
{
	return ls->path;
}

/* KEEP: a restart, the socket stays (its file, and the store's descriptor) */
static void listener_free(struct listener *ls, bool keep)
{
	LIST_REMOVE(ls, entry);
	if (ls->bot != NULL && ls->bot->sock == ls)
		ls->bot->sock = NULL;
	event_free(ls->ev);
	event_free(ls->retry);
	if (!keep) {
		unlink(ls->path);
		fdstore_drop(ls->store_name);
	} else {
		fdstore_forget(ls->store_name); /* the store's stays, ours goes */
	}
	close(ls->fd); /* lent to the store until here (fdstore_put) */
	free(ls->path);
	free(ls);
}

/* Close a bot's socket and drop every client connected through it. */
void server_unlisten(struct server *srv, struct bot *bot)
{
	struct listener *ls, *ls1;

	for (ls = LIST_FIRST(&srv->listeners); ls != NULL; ls = ls1) {
		ls1 = LIST_NEXT(ls, entry);
		if (ls->bot == bot)
			listener_free(ls, false);
	}
	server_peers_cut(srv, bot);
	bot->sock = NULL;
}

/* Stop accepting; connected clients keep getting answers until freed. */
void server_shutdown(struct server *srv)
{
	struct listener *ls;

	srv->closed = true;
	while ((ls = LIST_FIRST(&srv->listeners)) != NULL)
		listener_free(ls, false);
}

/* A restart: stop accepting, but the sockets stay for the next agentfsd (fdstore.c). */
void server_handover(struct server *srv)
{
	struct listener *ls;

	srv->closed = true;
	while ((ls = LIST_FIRST(&srv->listeners)) != NULL)
		listener_free(ls, true);
}

bool server_closed(const struct server *srv)
{
	return srv->closed;
}

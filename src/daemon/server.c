/* SPDX-License-Identifier: MIT */
/*
 * Transport: the control socket and every bot's socket, their peers and
 * newline framing. A peer owns its fd, its bufferevent and the caller's
 * credentials; whole lines go to proto_dispatch(), which never sees a
 * socket. A peer's life: create, lost (dead, stops reading), freed once no
 * job holds it.
 */
#include "src/common/agentfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <syslog.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

/*
 * A client that lets this much wait unread is closed: it does not read its
 * replies. Every byte waiting is charged to the client's accounts too
 * (accounts.c, reply memory), so many connections cannot add up past a
 * share.
 */
#define OUTPUT_MAX (16 * 1024 * 1024)
#define PARTIAL_LINE_TIMEOUT 30
/*
 * The backlog is the kernel's (thousands): after this many accepts a socket
 * waits one turn of the loop, so the clients accepted are served and closed
 * before more come.
 */
#define ACCEPT_BURST 64
/*
 * A bot's client has at most this many of its lines answered per turn of
 * the loop: a client that sends thousands at once waits its turn again,
 * between the other clients. The operator's clients and the control socket
 * run at a higher priority than every bot's (PRIO_OPERATOR): a bot's flood
 * of requests never stands between the operator and its answer.
 */
#define BOT_LINES_PER_TURN 4
#define PRIO_OPERATOR 0
#define PRIO_DEFAULT 1
#define NPRIO 2

struct listener {
	struct server *srv;
	int fd;
	struct event *ev;    /* readable: clients wait (listener_ready) */
	struct event *retry; /* out of descriptors: accept again after a pause */
	char *path;
	char store_name[BOT_NAME_MAX + 8]; /* in the fd store: "ctl" or "bot.NAME" */
	struct bot *bot; /* NULL: the control socket */
	uid_t owner;	 /* besides root, the uid allowed to connect */
	LIST_ENTRY(listener) entry;
};

struct peer {
	struct server *srv;
	struct bufferevent *bev;
	struct bot *bot; /* NULL: the operator */
	uid_t uid;
	gid_t gid;
	pid_t pid;
	bool dead;	     /* lost: no more reading or replies */
	bool busy;	     /* a request is being answered; later lines wait */
	bool skipping;	     /* dropping the rest of an over-long line */
	bool eof;	     /* the client shut its side; close once answered */
	struct event *again; /* a bot's client with lines left after its turn */
	/* a stream (log --follow): told once when the peer goes; its input is ignored */
	void (*closed)(void *arg);
	void *closed_arg;
	unsigned refs;
	/* what it holds is charged to (held): its bot's family, and its operator */
	struct account *fam, *op;
	unsigned long long charged; /* reply bytes charged and not yet given back */
	TAILQ_ENTRY(peer) entry;
};

struct server {
	struct event_base *base;
	struct config *cfg;
	LIST_HEAD(, listener) listeners;
	TAILQ_HEAD(, peer) peers;
	unsigned npeers;
	unsigned nctl; /* of them, on the control socket */
};

static void peer_read(struct bufferevent *bev, void *arg);

struct server *server_create(struct event_base *base, struct config *cfg)
{
	struct server *srv = calloc(1, sizeof *srv);

	if (srv == NULL)
		return NULL;
	/* before any event exists: new events take PRIO_DEFAULT (NPRIO / 2) */
	if (event_base_priority_init(base, NPRIO) != 0) {
		free(srv);
		return NULL;
	}
	srv->base = base;
	srv->cfg = cfg;
	LIST_INIT(&srv->listeners);
	TAILQ_INIT(&srv->peers);
	return srv;
}

unsigned server_clients(const struct server *srv)
{
	return srv->npeers;
}

static void peer_free(struct peer *p)
{
	if (p->again != NULL)
		event_free(p->again);
	TAILQ_REMOVE(&p->srv->peers, p, entry);
	p->srv->npeers--;
	if (p->bot == NULL)
		p->srv->nctl--;
	acct_give(p->fam, p->op, AR_OUTPUT, p->charged);
	acct_put(p->fam);
	acct_put(p->op);
	free(p);
}

/* Give back what left the output buffer since it was charged. */
static void peer_settle(struct peer *p)
{
	size_t left = p->bev != NULL ? evbuffer_get_length(bufferevent_get_output(p->bev)) : 0;

	if (p->charged > left) {
		acct_give(p->fam, p->op, AR_OUTPUT, p->charged - left);
		p->charged = left;
	}
}

void server_peer_accounts(const struct peer *p, struct account **fam, struct account **op)
{
	*fam = p->fam;
	*op = p->op;
}

/*
 * Free the peer's bufferevent, and what its buffers hold at once: libevent
 * frees a bufferevent only once the loop turns, and one turn serves every
 * client that sent something, so many closed clients' unread replies would
 * add up. A bufferevent keeps its output's front (and input's end) frozen
 * for itself; it is ours to thaw now that it goes.
 */
static void peer_free_bev(struct peer *p)
{
	struct evbuffer *out, *in;

	if (p->bev == NULL)
		return;
	out = bufferevent_get_output(p->bev);
	in = bufferevent_get_input(p->bev);
	evbuffer_unfreeze(out, 1);
	evbuffer_drain(out, evbuffer_get_length(out));
	evbuffer_unfreeze(in, 0);
	evbuffer_drain(in, evbuffer_get_length(in));
	bufferevent_free(p->bev);
	p->bev = NULL;
}

/* A stream's owner hears that it ended, once, before the peer is marked dead. */
static void peer_closed(struct peer *p)
{
	void (*fn)(void *) = p->closed;

	p->closed = NULL;
	if (fn != NULL)
		fn(p->closed_arg);
}

/* Mark the peer dead and close its connection; freed when no job holds it. */
static void peer_lost(struct peer *p)
{
	if (p->dead)
		return;
	p->refs++;
	peer_closed(p);
	p->refs--;
	p->dead = true;
	peer_free_bev(p);
	if (p->again != NULL)
		event_del(p->again);
	peer_settle(p); /* what it was owed is gone with its buffer */
	if (p->refs == 0)
		peer_free(p);
}

void server_peer_ref(struct peer *p)
{
	p->refs++;
}

void server_peer_unref(struct peer *p)
{
	if (--p->refs == 0 && p->dead)
		peer_free(p);
}

bool server_peer_alive(const struct peer *p)
{
	return !p->dead;
}

struct bot *server_peer_bot(const struct peer *p)
{
	return p->bot;
}

uid_t server_peer_uid(const struct peer *p)
{
	return p->uid;
}

pid_t server_peer_pid(const struct peer *p)
{
	return p->pid;
}

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

/*
 * A pidfd of the process that connected, from the kernel (SO_PEERPIDFD,
 * Linux 6.5): it names that process even after its pid is reused, where a
 * pidfd_open of the pid from SO_PEERCRED could name a later one. -1 with
 * errno (ENOPROTOOPT on an older kernel) when the kernel cannot say.
 */
int server_peer_pidfd(const struct peer *p)
{
	socklen_t len = sizeof(int);
	int fd = -1;

	if (getsockopt(bufferevent_getfd(p->bev), SOL_SOCKET, SO_PEERPIDFD, &fd, &len) != 0)
		return -1;
	return fd;
}

/* Close once the client has shut its side and everything it asked is answered. */
static void peer_maybe_close(struct peer *p)
{
	if (!p->dead && p->eof && !p->busy &&
	    evbuffer_get_length(bufferevent_get_output(p->bev)) == 0)
		peer_lost(p);
}

/*
 * The error a client gets instead of a reply its share cannot hold, with
 * the reply's id; a line of at most a few hundred bytes, sent uncharged.
 */
static char *too_large(const cJSON *reply, size_t n, const char *why)
{
	cJSON *e = proto_error("limit", "the reply (%zu bytes) was not sent: %s; ask for less", n,
			       why);
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(reply, "id");
	char *text;

	if (id != NULL)
		cJSON_AddItemToObject(e, "id", cJSON_Duplicate(id, true));
	text = cJSON_PrintUnformatted(e);
	cJSON_Delete(e);
	return text;
}

static void free_text(const void *data, size_t len, void *arg)
{
	free((void *)data);
}

/*
 * Queue text (taken) and a newline for p. A long one is held as it is (no
 * copy, freed once it is sent): libevent would copy it into a buffer of
 * twice its size. A short one is copied, into the buffer's last chunk if
 * it has room: held by reference, each would cost a chunk of 1 KiB.
 */
#define LINE_BY_REFERENCE (64 * 1024)

static void queue_line(struct peer *p, char *text)
{
	size_t len = strlen(text);
	char *line = len >= LINE_BY_REFERENCE ? realloc(text, len + 2) : NULL;

	if (line == NULL) {
		bufferevent_write(p->bev, text, len);
		bufferevent_write(p->bev, "\n", 1);
		free(text);
		return;
	}
	line[len] = '\n';
	line[len + 1] = '\0';
	if (evbuffer_add_reference(bufferevent_get_output(p->bev), line, len + 1, free_text,
				   NULL) != 0) {
		bufferevent_write(p->bev, line, len + 1);
		free(line);
	}
}

void server_reply(struct peer *p, cJSON *reply)
{
	char *text, why[256];
	size_t n, queued;

	if (p->dead) {
		cJSON_Delete(reply);
		return;
	}
	text = cJSON_PrintUnformatted(reply);
	if (text == NULL) {
		cJSON_Delete(reply);
		log_msg(LOG_ERR, "out of memory formatting a reply");
		peer_lost(p);
		return;
	}
	n = strlen(text) + 1;
	peer_settle(p);
	queued = evbuffer_get_length(bufferevent_get_output(p->bev));
	if (queued > 0 && queued + n > OUTPUT_MAX) {
		/* It does not read its replies: it may not hold the daemon's memory. */
		log_msg(LOG_WARNING, "client pid %ld does not read its replies; closing it",
			(long)p->pid);
		goto lost;
	}
	if (!acct_take(p->fam, p->op, AR_OUTPUT, n, why, sizeof why)) {
		/* a stream, or a client that has not read what it has: closed, as above */
		if (queued > 0 || p->closed != NULL) {
			log_msg(LOG_WARNING,
				"client pid %ld: closed, its reply memory is used up: %s",
				(long)p->pid, why);
			goto lost;
		}
		free(text);
		text = too_large(reply, n, why);
		n = 0; /* not charged */
		if (text == NULL)
			goto lost;
	} else {
		p->charged += n;
	}
	cJSON_Delete(reply);
	queue_line(p, text);
	return;
lost:
	cJSON_Delete(reply);
	free(text);
	peer_lost(p);
}

/*
 * Make p a stream: the request that made it stays unanswered for good, the
 * owner sends lines with server_reply() and hears of the client's end by
 * closed(arg). Reading goes on only to notice that end.
 */
void server_peer_stream(struct peer *p, void (*closed)(void *arg), void *arg)
{
	p->closed = closed;
	p->closed_arg = arg;
	if (p->bev != NULL) {
		/* no partial-line timer: a stream may stay quiet for hours */
		bufferevent_set_timeouts(p->bev, NULL, NULL);
		bufferevent_enable(p->bev, EV_READ);
	}
}

/* The owner ends a stream: close once what was sent is out. */
void server_peer_end(struct peer *p)
{
	p->closed = NULL;
	if (p->dead)
		return;
	p->busy = false;
	p->eof = true;
	bufferevent_disable(p->bev, EV_READ);
	peer_maybe_close(p);
}

/* A deferred request was answered: take the next buffered line. */
void server_peer_resume(struct peer *p)
{
	if (p->dead)
		return;
	p->busy = false;
	bufferevent_enable(p->bev, EV_READ);
	peer_read(p->bev, p);
}

/* A bot's client whose turn ended with lines left: its next turn. */
static void peer_again(evutil_socket_t fd, short what, void *arg)
{
	struct peer *p = arg;

	if (!p->dead && !p->busy && p->bev != NULL)
		peer_read(p->bev, p);
}

static void peer_read(struct bufferevent *bev, void *arg)
{
	struct peer *p = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer_ptr eol;
	struct timeval tv = {PARTIAL_LINE_TIMEOUT, 0};
	unsigned turn = 0;
	size_t len;
	char *line;

	/* A reply may lose the peer (it does not read): keep it until we return. */
	p->refs++;
	if (p->closed != NULL) /* a stream: what the client sends means nothing */
		evbuffer_drain(in, evbuffer_get_length(in));
	while (!p->dead && !p->busy) {
		if (p->bot != NULL && turn++ == BOT_LINES_PER_TURN) {
			static const struct timeval now = {0, 0};

			/* its turn is over: the rest after every other client's */
			if (p->again == NULL)
				p->again = evtimer_new(p->srv->base, peer_again, p);
			if (p->again != NULL && event_add(p->again, &now) == 0)
				break;
		}
		eol = evbuffer_search_eol(in, NULL, NULL, EVBUFFER_EOL_LF);
		if (eol.pos < 0) {
			len = evbuffer_get_length(in);
			if (len > LINE_MAX_BYTES) {
				evbuffer_drain(in, len);
				if (!p->skipping)
					server_reply(
						p, proto_error("line_too_long",
							       "request line longer than %d bytes",
							       LINE_MAX_BYTES));
				p->skipping = true;
			}
			/* Only a half-sent line is timed: idle clients may wait. */
			bufferevent_set_timeouts(bev, len > 0 || p->skipping ? &tv : NULL, NULL);
			break;
		}
		len = (size_t)eol.pos;
		if (p->skipping || len > LINE_MAX_BYTES) {
			evbuffer_drain(in, len + 1);
			if (!p->skipping)
				server_reply(p, proto_error("line_too_long",
							    "request line longer than %d bytes",
							    LINE_MAX_BYTES));
			p->skipping = false;
			continue;
		}
		line = malloc(len + 1);
		if (line == NULL) {
			server_reply(p, proto_error("internal", "out of memory"));
			peer_lost(p);
			return;
		}
		evbuffer_remove(in, line, len);
		evbuffer_drain(in, 1);
		line[len] = '\0';
		if (len > 0 && line[len - 1] == '\r')
			line[--len] = '\0';
		if (len > 0 && proto_dispatch(p->srv, p, line, len)) {
			p->busy = true;
			if (p->bev != NULL && p->closed == NULL)
				bufferevent_disable(p->bev, EV_READ);
		}
		free(line);
	}
	if (!p->dead && p->bev != NULL)
		peer_maybe_close(p);
	server_peer_unref(p);
}

static void peer_write(struct bufferevent *bev, void *arg)
{
	peer_settle(arg);
	peer_maybe_close(arg);
}

static void peer_event(struct bufferevent *bev, short what, void *arg)
{
	struct peer *p = arg;

	if ((what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) && p->closed != NULL) {
		peer_lost(p); /* a stream ends with its client */
		return;
	}
	if (what & BEV_EVENT_TIMEOUT) {
		/* Say why, then close once the reply is out (peer_write). */
		evbuffer_drain(bufferevent_get_input(bev),
			       evbuffer_get_length(bufferevent_get_input(bev)));
		server_reply(p, proto_error("timeout", "no complete line within %d seconds",
					    PARTIAL_LINE_TIMEOUT));
		p->eof = true;
		bufferevent_disable(bev, EV_READ);
		bufferevent_set_timeouts(bev, NULL, NULL);
		peer_maybe_close(p);
		return;
	}
	if (what & BEV_EVENT_EOF) {
		/* Answer what was sent before the client shut its side. */
		p->eof = true;
		bufferevent_disable(bev, EV_READ);
		peer_read(bev, p);
		return;
	}
	if (what & BEV_EVENT_ERROR)
		peer_lost(p);
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
	if (write(fd, line, (size_t)n) < 0)
		log_msg(LOG_DEBUG, "write: %s", strerror(errno));
	close(fd);
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
	struct peer *p;

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

		if (write(fd, busy, (size_t)n) < 0)
			log_msg(LOG_DEBUG, "write: %s", strerror(errno));
		close(fd);
		acct_put(fam);
		acct_put(op);
		return;
	}
	p = calloc(1, sizeof *p);
	if (p == NULL) {
		close(fd);
		acct_put(fam);
		acct_put(op);
		return;
	}
	p->srv = srv;
	p->bot = ls->bot;
	p->uid = cred.uid;
	p->gid = cred.gid;
	p->pid = cred.pid;
	p->fam = fam;
	p->op = op;
	p->bev = bufferevent_socket_new(srv->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (p->bev == NULL || op == NULL) {
		if (p->bev != NULL)
			bufferevent_free(p->bev);
		else
			close(fd);
		acct_put(p->fam);
		acct_put(p->op);
		free(p);
		return;
	}
	TAILQ_INSERT_TAIL(&srv->peers, p, entry);
	srv->npeers++;
	if (p->bot == NULL) {
		srv->nctl++;
		bufferevent_priority_set(p->bev, PRIO_OPERATOR);
	}
	bufferevent_setcb(p->bev, peer_read, peer_write, peer_event, p);
	bufferevent_enable(p->bev, EV_READ | EV_WRITE);
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
	struct timeval pause = {0, 200 * 1000};
	int i, fd, e;

	for (i = 0; i < ACCEPT_BURST; i++) {
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd >= 0) {
			listener_accept(ls, fd);
			continue;
		}
		e = errno;
		if (e == EINTR || e == ECONNABORTED)
			continue;
		if (e == EAGAIN || e == EWOULDBLOCK)
			return;
		if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
			log_msg(LOG_WARNING, "accept on %s: %s; pausing", ls->path, strerror(e));
			event_del(ls->ev);
			event_add(ls->retry, &pause);
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

int server_listen(struct server *srv, const char *path, struct bot *bot, char *err, size_t errlen)
{
	char store_name[BOT_NAME_MAX + 8];
	struct listener *ls;
	bool handed;
	int fd, e;

	if (strlen(path) >= sizeof((struct sockaddr_un *)0)->sun_path) {
		snprintf(err, errlen, "socket path too long (%zu bytes, at most %zu): %s",
			 strlen(path), sizeof((struct sockaddr_un *)0)->sun_path - 1, path);
		return -ENAMETOOLONG;
	}
	snprintf(store_name, sizeof store_name, "%s%s", bot != NULL ? "bot." : "ctl",
		 bot != NULL ? bot->name : "");
	fd = fdstore_take_socket(store_name, path);
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
	    event_add(ls->ev, NULL) != 0) {
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
	/* kept for the next agentfsd (fdstore.c); a handed one is kept already */
	if (!handed && fdstore_kind() != FDSTORE_NONE &&
	    fdstore_put(store_name, ls->fd) != 0)
		log_msg(LOG_WARNING, "cannot keep %s for a restart", path);
	if (bot != NULL)
		bot->sock = ls;
	return 0;
}

const char *server_listener_path(const struct listener *ls)
{
	return ls->path;
}

/* KEEP: a restart, the socket stays (its file, and the store's descriptor) */
static void listener_free(struct listener *ls, bool keep)
{
	LIST_REMOVE(ls, entry);
	event_free(ls->ev);
	close(ls->fd);
	event_free(ls->retry);
	if (!keep) {
		unlink(ls->path);
		fdstore_drop(ls->store_name);
	}
	free(ls->path);
	free(ls);
}

/* Close a bot's socket and drop every client connected through it. */
void server_unlisten(struct server *srv, struct bot *bot)
{
	struct listener *ls, *ls1;
	struct peer *p, *p1;

	for (ls = LIST_FIRST(&srv->listeners); ls != NULL; ls = ls1) {
		ls1 = LIST_NEXT(ls, entry);
		if (ls->bot == bot)
			listener_free(ls, false);
	}
	for (p = TAILQ_FIRST(&srv->peers); p != NULL; p = p1) {
		p1 = TAILQ_NEXT(p, entry);
		if (p->bot == bot) {
			p->bot = NULL;
			srv->nctl++; /* counted as bot-less from now on, as peer_free() expects */
			p->eof = true;
			p->refs++;
			peer_closed(p);
			p->refs--;
			/* Cut off at once; a job still holding it drops its answer. */
			if (!p->busy || p->refs == 0) {
				peer_lost(p);
			} else {
				p->dead = true;
				peer_free_bev(p);
			}
		}
	}
	bot->sock = NULL;
}

/* Stop accepting; connected clients keep getting answers until freed. */
void server_shutdown(struct server *srv)
{
	struct listener *ls;

	while ((ls = LIST_FIRST(&srv->listeners)) != NULL)
		listener_free(ls, false);
}

/* A restart: stop accepting, but the sockets stay for the next agentfsd (fdstore.c). */
void server_handover(struct server *srv)
{
	struct listener *ls;

	while ((ls = LIST_FIRST(&srv->listeners)) != NULL)
		listener_free(ls, true);
}

/* Run the loop a little longer so replies already queued reach their clients. */
void server_drain(struct server *srv, struct event_base *base)
{
	struct timespec start, now;
	struct peer *p;
	bool pending;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		pending = false;
		TAILQ_FOREACH(p, &srv->peers, entry)
			if (p->bev != NULL &&
			    evbuffer_get_length(bufferevent_get_output(p->bev)) > 0)
				pending = true;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (!pending || now.tv_sec - start.tv_sec >= 2)
			break;
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		usleep(1000);
	}
}

void server_free(struct server *srv)
{
	struct peer *p;

	if (srv == NULL)
		return;
	server_shutdown(srv);
	while ((p = TAILQ_FIRST(&srv->peers)) != NULL) {
		if (p->bev != NULL) {
			bufferevent_flush(p->bev, EV_WRITE, BEV_FINISHED);
			bufferevent_free(p->bev);
			p->bev = NULL;
		}
		peer_free(p);
	}
	free(srv);
}

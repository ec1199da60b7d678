/* SPDX-License-Identifier: MIT */
/*
 * Transport: the peers of the control socket and of every bot's socket,
 * and their newline framing (the sockets themselves, and who may connect
 * to them, are listen.c's). A peer owns its fd, its bufferevent and the
 * caller's credentials; whole lines go to proto_dispatch(), which never
 * sees a socket. A peer's life: create (server_peer_add), lost (dead, stops
 * reading), freed once no job holds it.
 */
#include "src/daemon/server-int.h"

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
 * A bot's client has at most this many of its lines answered per turn of
 * the loop: a client that sends thousands at once waits its turn again,
 * between the other clients.
 */
#define BOT_LINES_PER_TURN 4

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
	/* none: told clients wait instead (listen.c tries again to open it) */
	srv->reserve = open("/dev/null", O_RDONLY | O_CLOEXEC);
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

/* A client listen.c admitted: fd, fam and op are the peer's now, or given back. */
int server_peer_add(struct server *srv, int fd, struct bot *bot, const struct ucred *cred,
		    struct account *fam, struct account *op)
{
	struct peer *p = calloc(1, sizeof *p);

	if (p == NULL) {
		close(fd);
		acct_put(fam);
		acct_put(op);
		return -ENOMEM;
	}
	p->srv = srv;
	p->bot = bot;
	p->uid = cred->uid;
	p->gid = cred->gid;
	p->pid = cred->pid;
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
		return -ENOMEM;
	}
	TAILQ_INSERT_TAIL(&srv->peers, p, entry);
	srv->npeers++;
	if (p->bot == NULL) {
		srv->nctl++;
		bufferevent_priority_set(p->bev, PRIO_OPERATOR);
	}
	bufferevent_setcb(p->bev, peer_read, peer_write, peer_event, p);
	bufferevent_enable(p->bev, EV_READ | EV_WRITE);
	return 0;
}

/* A bot's socket closed (listen.c): every client connected through it is cut off. */
void server_peers_cut(struct server *srv, struct bot *bot)
{
	struct peer *p, *p1;

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
	if (srv->reserve >= 0)
		close(srv->reserve);
	free(srv);
}

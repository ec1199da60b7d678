/* SPDX-License-Identifier: MIT */
/*
 * Events: what happened to each bot (writes refused by its mounts, mounts
 * lost and restored, the bot made, configured, deleted), kept in a bounded
 * ring per bot and one for the whole daemon, and served by the `log` op,
 * once or as a stream (follow). Refusals come from mount workers; the rest
 * from the loop. Nothing here blocks: a follower that does not read is cut
 * off by the transport (server_reply's output limit).
 *
 * Bounded (agentfsd(8), LIMITS): a ring holds at most RING_MAX events and
 * RING_BYTES of them (the daemon's, DAEMON_RING_BYTES), the oldest going
 * first; a string of an event keeps at most EVENT_STR_MAX bytes (a path
 * 1,000 folders deep keeps its end); a family and an operator hold at most
 * their share of ACCT_STREAMS_MAX streams.
 */
#include "src/common/agentfs.h"
#include "fusefs/fusefs.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include <event2/event.h>

#define RING_MAX 1000
#define RING_BYTES (512 * 1024)
#define DAEMON_RING_BYTES (2 * 1024 * 1024)
#define EVENT_STR_MAX 4096

/* One event: its sequence number and its object as one line of JSON. */
struct entry {
	uint64_t seq;
	char *json;
};

/*
 * A bounded ring of events. The bot's ring is made with the bot (loop) and
 * freed with it (bot_free, after its mounts are gone); the daemon's lives
 * from events_init to events_stop. Its fields are under ev.lock.
 */
struct evring {
	char *bot; /* NULL: the daemon's ring, which gets every event */
	struct entry v[RING_MAX];
	size_t head, n;	     /* oldest at v[head] */
	size_t bytes;	     /* of their texts */
	uint64_t dropped;    /* pushed out by newer ones */
	uint64_t total;	     /* ever added */
	struct follower *fw; /* streams reading it (loop only) */
};

/*
 * A `log --follow` stream: holds a peer reference, and a stream of its
 * peer's accounts, until it ends. Loop only.
 */
struct follower {
	struct follower *next;
	struct peer *peer;
	struct evring *ring;
	uint64_t next_seq;
	struct account *fam, *op;
};

/*
 * lock protects every ring's entries and counters and seq; rings and
 * followers are made and freed on the loop only. Lock order: ev.lock, then
 * nothing (no server call is made with it held).
 */
static struct {
	pthread_mutex_t lock;
	uint64_t seq; /* the last number given */
	struct evring all;
	struct event *wake; /* made active from any thread: feed the followers */
	bool ready;
} ev = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void ring_push(struct evring *r, uint64_t seq, char *json)
{
	size_t at, len = strlen(json), max = r->bot != NULL ? RING_BYTES : DAEMON_RING_BYTES;

	while (r->n > 0 && (r->n == RING_MAX || r->bytes + len > max)) {
		r->bytes -= strlen(r->v[r->head].json);
		free(r->v[r->head].json);
		r->head = (r->head + 1) % RING_MAX;
		r->n--;
		r->dropped++;
	}
	at = (r->head + r->n) % RING_MAX;
	r->v[at].seq = seq;
	r->v[at].json = json;
	r->bytes += len;
	r->n++;
	r->total++;
}

/* A string field longer than EVENT_STR_MAX keeps its end, after "...". */
static void cut_field(cJSON *o, const char *k)
{
	const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
	char *cut;
	size_t n;

	if (s == NULL || (n = strlen(s)) <= EVENT_STR_MAX)
		return;
	if (asprintf(&cut, "...%s", s + n - (EVENT_STR_MAX - 3)) < 0)
		return;
	cJSON_ReplaceItemInObjectCaseSensitive(o, k, cJSON_CreateString(cut));
	free(cut);
}

/* Add o (taken) for bot's ring (NULL: the daemon's only). Any thread. */
static void add(struct evring *r, cJSON *o)
{
	char *text, *copy = NULL;
	uint64_t seq;

	pthread_mutex_lock(&ev.lock);
	seq = ++ev.seq;
	cJSON_AddNumberToObject(o, "seq", (double)seq);
	text = cJSON_PrintUnformatted(o);
	if (text != NULL && r != NULL)
		copy = strdup(text);
	if (text != NULL)
		ring_push(&ev.all, seq, text);
	if (copy != NULL)
		ring_push(r, seq, copy);
	pthread_mutex_unlock(&ev.lock);
	cJSON_Delete(o);
	if (ev.ready)
		event_active(ev.wake, EV_READ, 0);
}

struct evring *events_ring_new(const char *bot)
{
	struct evring *r = calloc(1, sizeof *r);

	if (r == NULL || (r->bot = strdup(bot)) == NULL) {
		free(r);
		return NULL;
	}
	return r;
}

/* A refusal in one of b's mounts (from a worker). */
void events_refused(struct bot *b, struct fs_mount *m, const struct fs_event *fe)
{
	cJSON *o;

	if (b->ring == NULL)
		return;
	o = event_from_fs(fe, fs_mount_source(m));
	cut_field(o, "path");
	cut_field(o, "to");
	cut_field(o, "reason");
	cJSON_AddStringToObject(o, "bot", b->name);
	add(b->ring, o);
}

/* A daemon event of bot b (loop): type, the root it concerns or NULL, and a message. */
void events_bot(struct bot *b, const char *type, const char *path, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	cJSON *o = cJSON_CreateObject();

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	cJSON_AddNumberToObject(o, "time", event_now());
	cJSON_AddStringToObject(o, "type", type);
	if (path != NULL)
		cJSON_AddStringToObject(o, "path", path);
	cJSON_AddStringToObject(o, "message", msg);
	cJSON_AddStringToObject(o, "bot", b->name);
	add(b->ring, o);
}

/* The events of r numbered from since on, parsed, as a reply's array; *last: the last one's. */
static cJSON *ring_since(struct evring *r, uint64_t since, uint64_t *last)
{
	cJSON *arr = cJSON_CreateArray(), *o;
	char **texts;
	size_t i, k = 0, n;

	pthread_mutex_lock(&ev.lock);
	n = r->n;
	texts = calloc(n + 1, sizeof *texts);
	for (i = 0; texts != NULL && i < n; i++) {
		struct entry *e = &r->v[(r->head + i) % RING_MAX];

		if (e->seq >= since && (texts[k] = strdup(e->json)) != NULL) {
			k++;
			*last = e->seq;
		}
	}
	pthread_mutex_unlock(&ev.lock);
	for (i = 0; i < k; i++) {
		if ((o = cJSON_Parse(texts[i])) != NULL)
			cJSON_AddItemToArray(arr, o);
		free(texts[i]);
	}
	free(texts);
	return arr;
}

/* Its peer reference and its stream go back. */
static void follower_free(struct follower *f)
{
	server_peer_unref(f->peer);
	acct_give(f->fam, f->op, AR_STREAMS, 1);
	acct_put(f->fam);
	acct_put(f->op);
	free(f);
}

static void follower_drop(struct follower *f)
{
	struct follower **pp;

	for (pp = &f->ring->fw; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == f) {
			*pp = f->next;
			break;
		}
	}
	follower_free(f);
}

/* The client of a stream went away (transport callback). */
static void follower_closed(void *arg)
{
	follower_drop(arg);
}

/*
 * Send f what its ring got since it was last fed. A reply may lose the peer
 * (it does not read), which drops and frees f: the peer is held meanwhile,
 * and f is not touched once it is gone.
 */
static void follower_feed(struct follower *f)
{
	struct peer *p = f->peer;
	uint64_t last = 0;
	cJSON *arr = ring_since(f->ring, f->next_seq, &last), *o, *line;
	bool alive;

	server_peer_ref(p);
	while ((o = cJSON_DetachItemFromArray(arr, 0)) != NULL) {
		if (!server_peer_alive(p)) {
			cJSON_Delete(o);
			continue;
		}
		line = cJSON_CreateObject();
		cJSON_AddItemToObject(line, "event", o);
		server_reply(p, line);
	}
	cJSON_Delete(arr);
	alive = server_peer_alive(p);
	server_peer_unref(p);
	if (alive && last != 0)
		f->next_seq = last + 1;
}

static void ring_feed(struct evring *r)
{
	struct follower *f, *next;

	for (f = r->fw; f != NULL; f = next) {
		next = f->next;
		follower_feed(f);
	}
}

static struct bots *all_bots;

/* New events were added: every stream gets its own. */
static void wake_cb(evutil_socket_t fd, short what, void *arg)
{
	struct bot *b;

	ring_feed(&ev.all);
	if (all_bots != NULL)
		TAILQ_FOREACH(b, all_bots, entry)
			if (b->ring != NULL)
				ring_feed(b->ring);
}

/* The bot is gone: its streams get what is left, then end. Loop only. */
void events_ring_free(struct evring *r)
{
	struct follower *f;
	size_t i;

	if (r == NULL)
		return;
	ring_feed(r);
	while ((f = r->fw) != NULL) {
		r->fw = f->next;
		server_peer_end(f->peer);
		follower_free(f);
	}
	pthread_mutex_lock(&ev.lock);
	for (i = 0; i < r->n; i++)
		free(r->v[(r->head + i) % RING_MAX].json);
	pthread_mutex_unlock(&ev.lock);
	free(r->bot);
	free(r);
}

/*
 * The log op: the events of b (NULL: of the whole daemon) numbered from
 * since on; with follow, the connection then streams each new one.
 * Returns true when the peer is held (a stream).
 */
bool events_log(struct request *r, struct bot *b, uint64_t since, bool follow)
{
	struct evring *ring = b != NULL ? b->ring : &ev.all;
	struct account *fam = NULL, *op = NULL;
	struct follower *f;
	uint64_t last = 0, dropped, total;
	char why[256];
	cJSON *body;

	if (ring == NULL) {
		request_fail(r, proto_error("internal", "no events are kept for bot %s", b->name));
		return false;
	}
	if (follow && r->peer != NULL) {
		server_peer_accounts(r->peer, &fam, &op);
		if (!acct_take(fam, op, AR_STREAMS, 1, why, sizeof why)) {
			request_fail(r, proto_error("limit", "no more log streams: %s", why));
			return false;
		}
	}
	body = cJSON_CreateObject();
	cJSON_AddItemToObject(body, "events", ring_since(ring, since, &last));
	pthread_mutex_lock(&ev.lock);
	dropped = ring->dropped;
	total = ring->total;
	if (last == 0)
		last = ev.seq;
	pthread_mutex_unlock(&ev.lock);
	cJSON_AddNumberToObject(body, "dropped", (double)dropped);
	cJSON_AddNumberToObject(body, "total", (double)total);
	cJSON_AddNumberToObject(body, "next", (double)(last + 1));
	if (!follow || r->peer == NULL) {
		request_reply(r, body);
		return false;
	}
	f = calloc(1, sizeof *f);
	if (f == NULL) {
		acct_give(fam, op, AR_STREAMS, 1);
		cJSON_Delete(body);
		request_fail(r, proto_error("internal", "out of memory"));
		return false;
	}
	f->fam = acct_hold(fam);
	f->op = acct_hold(op);
	cJSON_AddBoolToObject(body, "follow", true);
	request_reply(r, body);
	cJSON_Delete(r->id); /* a stream's lines carry no id */
	r->id = NULL;
	if (!server_peer_alive(r->peer)) {
		acct_give(fam, op, AR_STREAMS, 1);
		acct_put(f->fam);
		acct_put(f->op);
		free(f);
		return false;
	}
	f->peer = r->peer;
	f->ring = ring;
	f->next_seq = last + 1;
	f->next = ring->fw;
	ring->fw = f;
	server_peer_ref(r->peer);
	server_peer_stream(r->peer, follower_closed, f);
	/* anything added between the reply and now */
	follower_feed(f);
	return true;
}

int events_init(struct event_base *base, struct bots *bots)
{
	all_bots = bots;
	ev.wake = event_new(base, -1, 0, wake_cb, NULL);
	if (ev.wake == NULL)
		return -1;
	ev.ready = true;
	return 0;
}

/* After every bot is gone (and its mounts): the daemon's streams end. */
void events_stop(void)
{
	struct follower *f;
	size_t i;

	while ((f = ev.all.fw) != NULL) {
		ev.all.fw = f->next;
		server_peer_end(f->peer);
		follower_free(f);
	}
	ev.ready = false;
	if (ev.wake != NULL)
		event_free(ev.wake);
	ev.wake = NULL;
	for (i = 0; i < ev.all.n; i++)
		free(ev.all.v[(ev.all.head + i) % RING_MAX].json);
	ev.all.n = 0;
	ev.all.bytes = 0;
	all_bots = NULL;
}

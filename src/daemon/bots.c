/* SPDX-License-Identifier: MIT */
/*
 * Bots: the registry of the daemon's bots (find, make, remove) and the
 * requests that make and end them: create, fork, delete and ttl expiry.
 * The other requests and the jobs are in the files bots-int.h lists.
 * Anything that touches a path a client gave, or a mount, runs on the job
 * thread (jobs.c); the event loop never does.
 */
#include "src/daemon/bots-int.h"
#include "src/daemon/cgroup.h"
#include "fusefs/fusefs.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <event2/event.h>

struct daemon_state bots_state;

struct bot *bot_find(const char *name)
{
	return auth_find(&bots_state.bots, name);
}

struct bot *bots_caller(struct request *r)
{
	return r->peer != NULL ? server_peer_bot(r->peer) : NULL;
}

/* The uid of the operator asking; 0 for root and for the daemon itself (ttl). */
uid_t bots_operator_uid(struct request *r)
{
	return r->peer != NULL ? server_peer_uid(r->peer) : 0;
}

/* May the asker see b? (auth_visible) */
bool bot_visible(struct request *r, const struct bot *b)
{
	return auth_visible(&bots_state.bots, bots_caller(r), bots_operator_uid(r), b);
}

/* The bot NAME if the asker may see it; else NULL, answered not_found. */
struct bot *bot_find_visible(struct request *r, const char *name)
{
	struct bot *b = bot_find(name);

	if (b == NULL || b->deleting || !bot_visible(r, b)) {
		bots_fail(r, "not_found", "no bot named %s", name);
		return NULL;
	}
	return b;
}

void bots_fail(struct request *r, const char *code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	request_fail(r, proto_error_line(code, msg));
}

/* The ceiling check for a bot about to exist or change: its creator, if a bot. */
bool bots_ceiling_ok(struct request *r, const struct bot *b)
{
	struct bot *c = b->creator != NULL ? bot_find(b->creator) : NULL;
	char why[512];

	if (c != NULL && (!auth_within_ceiling(b, c, why, sizeof why) ||
			  !sandbox_limits_within(b, c, why, sizeof why))) {
		bots_fail(r, "forbidden", "%s: %s", b->name, why);
		return false;
	}
	return true;
}

/*
 * A read-only root inside one of b's writable roots (or equal to one) would
 * be served by the writable root's mount (bot_plan_roots: a root inside
 * another needs no mount of its own), so it would be writable: refused
 * rather than quietly granted. A read-only sandbox writes nowhere.
 */
bool bots_readable_ok(struct request *r, const struct bot *b)
{
	const struct paths *lists[] = {&b->writable, &bots_state.cfg->extra_writable,
				       &b->git_roots};
	const char *outer;
	size_t i, l, k;

	if (b->sandbox == SANDBOX_READ_ONLY)
		return true;
	for (i = 0; i < b->readable.n; i++) {
		const char *p = b->readable.v[i];

		outer = path_within(p, b->folder) ? b->folder : NULL;
		for (l = 0; outer == NULL && l < sizeof lists / sizeof *lists; l++)
			for (k = 0; outer == NULL && k < lists[l]->n; k++)
				if (path_within(p, lists[l]->v[k]))
					outer = lists[l]->v[k];
		if (outer != NULL) {
			bots_fail(r, "bad_path",
				  "%s: a read-only root inside the writable root %s would be "
				  "writable (that root's mount serves it): drop it, or make the "
				  "sandbox read-only",
				  p, outer);
			return false;
		}
	}
	return true;
}

static char *bot_socket_path(const char *name)
{
	char *p;

	if (asprintf(&p, "%s.d/%s.sock", bots_state.cfg->socket_path, name) < 0)
		return NULL;
	return p;
}

static void fs_log_cb(void *arg, enum fs_log_level level, const char *msg)
{
	static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};

	log_text(prio[level], msg); /* fusefs escaped it */
}

/* A mount's refusal or change (any worker): the mount's tag is its bot. */
static void fs_event_cb(void *arg, struct fs_mount *m, const struct fs_event *ev)
{
	struct bot *b = fs_mount_tag(m);

	if (b == NULL)
		return;
	if (ev->kind == FS_EV_REFUSED)
		events_refused(b, m, ev);
	else
		changes_record(b->changes, m, ev);
}

void bots_save_state(void)
{
	int r = state_save(bots_state.cfg, &bots_state.bots);

	if (r != 0)
		log_msg(LOG_ERR, "cannot save the state in %s: %s", bots_state.cfg->state_dir,
			strerror(-r));
}

static void ttl_expired(evutil_socket_t fd, short what, void *arg);

void bot_arm_ttl(struct bot *b)
{
	struct timeval tv = {0, 0};
	time_t now = time(NULL);

	if (b->expires == 0)
		return;
	if (b->ttl_ev == NULL)
		b->ttl_ev = evtimer_new(bots_state.base, ttl_expired, b);
	if (b->ttl_ev == NULL)
		return;
	tv.tv_sec = b->expires > now ? b->expires - now : 0;
	evtimer_add(b->ttl_ev, &tv);
}

/*
 * A bot being restored gets its socket before its roots are back, taking no
 * client yet: one that connects meanwhile waits (as across a handover)
 * instead of finding no socket after a crash. False if it failed (then
 * bot_activate tries again).
 */
bool bot_socket_hold(struct bot *b, char *err, size_t errlen)
{
	cleanup_free char *sock = bot_socket_path(b->name);

	if (sock == NULL) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	return server_listen_hold(bots_state.srv, sock, b, err, errlen) == 0;
}

/* Give a bot that now exists its socket (or start the one held) and timer; false if it failed. */
bool bot_activate(struct bot *b, char *err, size_t errlen)
{
	cleanup_free char *sock = NULL;

	/* stopping or handing over (a restore ended by jobs_stop): the next agentfsd makes it */
	if (server_closed(bots_state.srv))
		return true;
	if (b->sock != NULL) {
		if (server_accept_start(b->sock) != 0) {
			snprintf(err, errlen, "cannot accept on %s: out of memory",
				 server_listener_path(b->sock));
			return false;
		}
	} else if ((sock = bot_socket_path(b->name)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return false;
	} else if (server_listen(bots_state.srv, sock, b, err, errlen) != 0) {
		return false;
	}
	bot_arm_ttl(b);
	return true;
}

void bot_remove(struct bot *b)
{
	sandboxes_free(b);
	server_unlisten(bots_state.srv, b);
	if (b->ttl_ev != NULL)
		event_free(b->ttl_ev);
	b->ttl_ev = NULL;
	TAILQ_REMOVE(&bots_state.bots, b, entry);
	bots_state.nbots--;
	bot_free(b);
}

static void done_create(struct job *j)
{
	struct bot *b = j->bot;
	char err[512];
	cJSON *body;
	size_t size;

	b->busy = false;
	if (j->error != 0) {
		log_msg(LOG_INFO, "bot %s not made: %s", b->name, j->msg);
		bots_fail(&j->req, j->code, "%s", j->msg);
		TAILQ_REMOVE(&bots_state.bots, b, entry);
		bots_state.nbots--;
		bot_free(b);
		job_finish(j);
		return;
	}
	/* what was kept for the git folders it did not need goes back */
	size = state_entry_size(b);
	if (size != 0 && size < b->state_bytes) {
		acct_give(b->fam, b->op, AR_STATE, b->state_bytes - size);
		b->state_bytes = size;
	}
	/* Saved before its socket exists: a crash between leaves no orphan socket. */
	bots_save_state();
	if (!bot_activate(b, err, sizeof err)) {
		bots_fail(&j->req, "internal", "%s", err);
		bot_unmount_all(b); /* quick: nothing can be using a mount no one was told of */
		TAILQ_REMOVE(&bots_state.bots, b, entry);
		bots_state.nbots--;
		bot_free(b);
		bots_save_state();
		job_finish(j);
		return;
	}
	log_msg(LOG_INFO, "bot %s made by %s", b->name, b->creator ? b->creator : "the operator");
	events_bot(b, "bot_made", b->folder, "made by %s, sandbox %s",
		   b->creator ? b->creator : "the operator", sandbox_name(b->sandbox));
	body = cJSON_CreateObject();
	cJSON_AddItemToObject(body, "bot", bot_to_json(b, true));
	request_reply(&j->req, body);
	job_finish(j);
}

/* Answer a resent create or fork from what the first one made. */
static bool answer_resend(struct request *r)
{
	struct bot *caller = bots_caller(r), *b;
	cJSON *body;

	if (r->id == NULL || !cJSON_IsString(r->id))
		return false;
	TAILQ_FOREACH(b, &bots_state.bots, entry) {
		if (b->request_id == NULL || strcmp(b->request_id, r->id->valuestring) != 0)
			continue;
		if ((caller == NULL) != (b->creator == NULL) ||
		    (caller != NULL && strcmp(caller->name, b->creator) != 0) || !bot_visible(r, b))
			continue;
		if (b->busy) {
			bots_fail(r, "busy", "bot %s is still being made; ask again", b->name);
			return true;
		}
		body = cJSON_CreateObject();
		cJSON_AddItemToObject(body, "bot", bot_to_json(b, true));
		request_reply(r, body);
		return true;
	}
	return false;
}

static bool spec_paths_dup(struct paths *dst, const struct paths *src)
{
	size_t i;

	for (i = 0; i < src->n; i++)
		if (paths_add(dst, src->v[i]) != 0)
			return false;
	return true;
}

/*
 * The user a new bot's commands run as: a bot's bots run as its own user
 * (it may name no other); a fork keeps its source's; the operator may name
 * any user if root, else only itself. Unnamed, it is the folder's owner,
 * found on the job thread (root_user).
 */
static bool bot_user(struct request *r, struct bot *b, const struct bot_spec *s,
		     const struct bot *caller, const struct bot *from)
{
	const struct bot *inherit = from != NULL ? from : caller;
	uid_t op = r->peer != NULL ? server_peer_uid(r->peer) : 0;

	if (inherit != NULL) {
		b->uid = inherit->uid;
		b->uid_set = inherit->uid_set;
	} else if (caller == NULL && op != 0) {
		/* An operator other than root: its bots run as itself. */
		b->uid = op;
		b->uid_set = true;
	}
	if (!s->has_user)
		return true;
	if (caller != NULL && (!caller->uid_set || s->user != caller->uid)) {
		bots_fail(r, "forbidden",
			  "%s: a bot's bots run as its own user (uid %u); it may not name another",
			  b->name, (unsigned)caller->uid);
		return false;
	}
	if (caller == NULL && op != 0 && s->user != op) {
		bots_fail(r, "forbidden", "%s: only root may name another user than its own",
			  b->name);
		return false;
	}
	b->uid = s->user;
	b->uid_set = true;
	return true;
}

/*
 * Only the operator names the pods that may have a bot's roots. A pod is
 * outside everything agentfs confines (its network, its user, its
 * neighbours): a bot that could grant one its view, or a narrower view
 * through a bot it makes, would hand its roots to a workload the operator
 * never chose. False after failing the request.
 */
bool bots_pods_by_operator(struct request *r, const char *name, const struct bot_spec *s)
{
	if (!s->has_pods || bots_caller(r) == NULL)
		return true;
	bots_fail(r, "forbidden", "%s: only the operator names a bot's pods", name);
	return false;
}

/* May the asker make a bot named name now? False after failing the request. */
static bool may_make(struct request *r, const char *name, const struct bot *caller)
{
	uid_t op = caller != NULL ? caller->owner_uid : bots_operator_uid(r);
	char why[512];

	if (bots_state.shutdown_requested) {
		bots_fail(r, "shutting_down", "agentfsd is shutting down");
		return false;
	}
	if (bot_find(name) != NULL) {
		bots_fail(r, "exists", "a bot named %s exists", name);
		return false;
	}
	if (bots_state.nbots >= bots_state.cfg->max_bots) {
		bots_fail(r, "limit", "at most %u bots", bots_state.cfg->max_bots);
		return false;
	}
	if ((caller != NULL &&
	     !auth_family_room(&bots_state.bots, bots_state.nbots, bots_state.cfg->max_bots, caller,
			       why, sizeof why)) ||
	    !auth_operator_room(&bots_state.bots, bots_state.cfg->max_bots, op, why, sizeof why)) {
		bots_fail(r, "limit", "%s", why);
		return false;
	}
	return true;
}

/*
 * Charge b's entry in the state file to its family and operator (before
 * anything is made), so no bot can grow the file past what start reads;
 * false after failing the request. bot_free gives it back.
 */
static bool state_room(struct request *r, struct bot *b)
{
	size_t size = state_entry_size(b);
	char why[512];

	if (size == 0) {
		bots_fail(r, "internal", "out of memory");
		return false;
	}
	if (!acct_take(b->fam, b->op, AR_STATE, size, why, sizeof why)) {
		bots_fail(r, "limit", "%s: its entry in the state file (%zu bytes) is refused: %s",
			  b->name, size, why);
		return false;
	}
	b->state_bytes = size;
	return true;
}

/*
 * A new bot's settings: a fork's source's (from), else its maker's sandbox
 * and network (the defaults for the operator's), then what s gives. False
 * when out of memory.
 */
static bool bot_settings(struct bot *b, const struct bot_spec *s, const struct bot *caller,
			 const struct bot *from)
{
	if (from != NULL) {
		b->sandbox = from->sandbox;
		b->folder = strdup(from->folder);
		if (b->folder == NULL || !spec_paths_dup(&b->writable, &from->writable) ||
		    !spec_paths_dup(&b->readable, &from->readable))
			return false;
		b->network = from->network;
		b->allow_new_repos = from->allow_new_repos;
		b->ttl = from->ttl;
		b->memory_max = from->memory_max;
		b->pids_max = from->pids_max;
	} else {
		b->sandbox = caller != NULL ? caller->sandbox : bots_state.cfg->default_sandbox;
		b->network = caller != NULL ? caller->network : bots_state.cfg->default_network;
		/* a bot's bot: its maker's limits, which are its ceiling */
		b->memory_max = caller != NULL ? bot_memory_max(caller) : 0;
		b->pids_max = caller != NULL ? bot_pids_max(caller) : 0;
		b->folder = strdup(s->folder);
		if (b->folder == NULL)
			return false;
	}
	if (s->has_sandbox)
		b->sandbox = s->sandbox;
	if (s->has_writable) {
		paths_free(&b->writable);
		if (!spec_paths_dup(&b->writable, &s->writable))
			return false;
	}
	if (s->has_readable) {
		paths_free(&b->readable);
		if (!spec_paths_dup(&b->readable, &s->readable))
			return false;
	}
	if (s->has_network)
		b->network = s->network;
	if (s->has_allow_new_repos)
		b->allow_new_repos = s->allow_new_repos;
	if (s->has_ttl)
		b->ttl = s->ttl;
	if (s->has_memory_max)
		b->memory_max = s->memory_max;
	if (s->has_pids_max)
		b->pids_max = s->pids_max;
	/* pods are never copied from a fork's source: each grant is the operator's */
	if (s->has_pods && !spec_paths_dup(&b->pods, &s->pods))
		return false;
	return true;
}

/* Start a new bot from a spec, created by the caller; NULL after replying an error. */
static struct bot *bot_new(struct request *r, const char *name, const struct bot_spec *s,
			   const struct bot *from)
{
	struct bot *caller = bots_caller(r), *b, *c;

	if (!may_make(r, name, caller) || !bots_pods_by_operator(r, name, s))
		return NULL;
	b = calloc(1, sizeof *b);
	if (b == NULL)
		goto nomem;
	b->name = strdup(name);
	b->creator = caller != NULL ? strdup(caller->name) : NULL;
	if (b->name == NULL || (caller != NULL && b->creator == NULL) ||
	    !bot_settings(b, s, caller, from))
		goto nomem;
	b->created = time(NULL);
	b->expires = b->ttl > 0 ? b->created + b->ttl : 0;
	b->owner_uid = caller != NULL ? caller->owner_uid : server_peer_uid(r->peer);
	if (!bot_user(r, b, s, caller, from)) {
		bot_free(b);
		return NULL;
	}
	/* Its folder's owner, when no user is named or inherited: roots_mount_bot checks it. */
	if (b->uid_set && b->uid == 0 && b->sandbox != SANDBOX_DANGER_FULL_ACCESS) {
		bots_fail(r, "forbidden", ROOT_BOT_REFUSED, b->name,
			  s->has_user ? "--user names root" : "the user of the bot it comes from");
		bot_free(b);
		return NULL;
	}
	if (r->id != NULL && cJSON_IsString(r->id) &&
	    (b->request_id = strdup(r->id->valuestring)) == NULL)
		goto nomem;
	if (!bots_ceiling_ok(r, b) || !bots_readable_ok(r, b)) {
		bot_free(b);
		return NULL;
	}
	c = b->creator != NULL ? bot_find(b->creator) : NULL;
	b->fam = c != NULL ? acct_hold(c->fam) : acct_family(b->name);
	b->op = acct_operator(b->owner_uid);
	if (b->fam == NULL || b->op == NULL)
		goto nomem;
	if (!state_room(r, b)) {
		bot_free(b);
		return NULL;
	}
	if (bot_plan_roots(b) != 0)
		goto nomem;
	return b;
nomem:
	bot_free(b);
	bots_fail(r, "internal", "out of memory");
	return NULL;
}

/* Submit the mount job for a new bot; the name is reserved meanwhile. */
static bool bot_start(struct request *r, struct bot *b)
{
	struct job *j = job_new(r);
	struct bot *c;
	size_t i;

	if (j == NULL) {
		bot_free(b);
		bots_fail(r, "internal", "out of memory");
		return false;
	}
	b->busy = true;
	b->ring = events_ring_new(b->name);
	b->changes = changes_new(b->name, false, b->fam, b->op, b->owner_uid);
	TAILQ_INSERT_TAIL(&bots_state.bots, b, entry);
	bots_state.nbots++;
	j->bot = b;
	j->uid = bots_caller(r) == NULL && r->peer != NULL ? server_peer_uid(r->peer) : 0;
	if (b->creator != NULL && (c = bot_find(b->creator)) != NULL) {
		j->ceiling_set = true;
		for (i = 0; i < c->nroots; i++)
			if (c->roots[i].writable || b->sandbox == SANDBOX_READ_ONLY)
				paths_add(&j->ceiling, c->roots[i].path);
	}
	j->lane = b->fam;
	j->run = roots_mount_bot;
	j->done = done_create;
	job_submit(j);
	return true;
}

bool bots_create(struct request *r, struct bot_spec *s)
{
	struct bot *b;

	if (answer_resend(r))
		return false;
	b = bot_new(r, s->name, s, NULL);
	return b != NULL && bot_start(r, b);
}

bool bots_fork(struct request *r, struct bot_spec *s)
{
	struct bot *src, *b;

	if (answer_resend(r))
		return false;
	src = bot_find(s->name);
	if (src == NULL || !bot_visible(r, src)) {
		bots_fail(r, "not_found", "no bot named %s", s->name);
		return false;
	}
	b = bot_new(r, s->as, s, src);
	return b != NULL && bot_start(r, b);
}

/*
 * Collect b and everything it made, children before their parents. False
 * when out of memory: *v then holds only part, which the caller must not
 * act on (a delete of part of a family would leave orphans).
 */
bool bots_collect(struct bot *b, struct bot ***v, size_t *n)
{
	struct bot *c, **nv;

	TAILQ_FOREACH(c, &bots_state.bots, entry)
		if (c->creator != NULL && strcmp(c->creator, b->name) == 0 &&
		    !bots_collect(c, v, n))
			return false;
	nv = realloc(*v, (*n + 1) * sizeof *nv);
	if (nv == NULL)
		return false;
	*v = nv;
	(*v)[(*n)++] = b;
	return true;
}

/*
 * Collect b's family for a delete, none of it busy; false after failing
 * the request (*v may hold part, for the caller to free).
 */
bool bots_collect_idle(struct request *r, struct bot *b, struct bot ***v, size_t *n)
{
	size_t i;

	if (!bots_collect(b, v, n)) {
		bots_fail(r, "internal", "out of memory");
		return false;
	}
	for (i = 0; i < *n; i++) {
		if ((*v)[i]->busy) {
			bots_fail(r, "busy", "bot %s is being changed; ask again", (*v)[i]->name);
			return false;
		}
	}
	return true;
}

static void run_delete(struct job *j)
{
	size_t i;

	for (i = 0; i < j->nvictims; i++)
		bot_unmount_all(j->victims[i]);
}

static void done_delete(struct job *j)
{
	cJSON *body = cJSON_CreateObject(), *names = cJSON_AddArrayToObject(body, "deleted");
	size_t i;

	for (i = 0; i < j->nvictims; i++) {
		struct bot *c =
			j->victims[i]->creator != NULL ? bot_find(j->victims[i]->creator) : NULL;

		log_msg(LOG_INFO, "bot %s deleted", j->victims[i]->name);
		events_bot(j->victims[i], "bot_deleted", NULL, "deleted%s",
			   j->req.peer == NULL ? ": its ttl ran out" : "");
		if (c != NULL && !c->deleting)
			events_bot(c, "bot_deleted", NULL, "%s, which it made, was deleted",
				   j->victims[i]->name);
		changes_forget(j->victims[i]->changes);
		cJSON_AddItemToArray(names, cJSON_CreateString(j->victims[i]->name));
		bot_remove(j->victims[i]);
	}
	bots_save_state();
	request_reply(&j->req, body);
	job_finish(j);
}

/*
 * Delete b and its descendants: their sockets close at once, so their
 * clients are cut off before the mounts go.
 */
bool bot_delete(struct request *r, struct bot *b)
{
	struct job *j;
	size_t i;

	j = job_new(r);
	if (j == NULL) {
		bots_fail(r, "internal", "out of memory");
		return false;
	}
	if (!bots_collect_idle(r, b, &j->victims, &j->nvictims)) {
		job_abort(j);
		return false;
	}
	for (i = 0; i < j->nvictims; i++) {
		j->victims[i]->busy = true;
		j->victims[i]->deleting = true;
		server_unlisten(bots_state.srv, j->victims[i]);
	}
	j->lane = b->fam;
	j->run = run_delete;
	j->done = done_delete;
	job_submit(j);
	return true;
}

bool bots_delete(struct request *r, const char *name, bool force)
{
	struct bot *caller = bots_caller(r), *b, **v = NULL;
	char pids[256];
	size_t n = 0;
	unsigned running;

	if ((b = bot_find_visible(r, name)) == NULL)
		return false;
	if (caller != NULL && b == caller) {
		bots_fail(r, "forbidden", "a bot cannot delete itself; ask whoever made it");
		return false;
	}
	if (!bots_collect(b, &v, &n)) {
		free(v);
		bots_fail(r, "internal", "out of memory");
		return false;
	}
	if (!sandboxes_known() && !force) {
		free(v);
		bots_fail(r, "running",
			  "cannot tell whether bot %s (or a bot it made) has a running sandbox: "
			  "%s/sandboxes.json could not be read (the daemon's log says why): nothing "
			  "was deleted; `agentfs rm --force %s` deletes it anyway, without ending "
			  "sandboxes the daemon does not know",
			  b->name, bots_state.cfg->state_dir, b->name);
		return false;
	}
	running = sandboxes_running(v, n);
	sandbox_running_msg(v, n, pids, sizeof pids);
	free(v);
	if (running > 0 && !force) {
		bots_fail(r, "running",
			  "bot %s (or a bot it made) has %u running sandbox%s (agentfs exec, %s): "
			  "nothing was deleted; end %s, or `agentfs rm --force %s` ends %s first "
			  "(SIGTERM, then SIGKILL after %d s)",
			  b->name, running, running == 1 ? "" : "es", pids,
			  running == 1 ? "it" : "them", b->name, running == 1 ? "it" : "them",
			  FORCE_GRACE_S);
		return false;
	}
	if (running > 0)
		return sandbox_force_delete(r, b);
	return bot_delete(r, b);
}

static void ttl_expired(evutil_socket_t fd, short what, void *arg)
{
	struct bot *b = arg;
	struct request r = {0};
	struct timeval tv = {1, 0};

	if (b->busy) {
		evtimer_add(b->ttl_ev, &tv);
		return;
	}
	log_msg(LOG_INFO, "bot %s: ttl ran out", b->name);
	if (!bot_delete(&r, b)) /* busy, or out of memory: again in a second */
		evtimer_add(b->ttl_ev, &tv);
}

static int keep_cb(void *arg, const char *name, int fd, int how)
{
	(void)arg;
	if (how & FS_KEEP_BACK) {
		fdstore_back(name, fd, (how & FS_KEEP_GIVE) != 0);
		return 0;
	}
	/* the keeper replaces what it holds under a name; systemd adds one more */
	if ((how & FS_KEEP_REPLACE) && fdstore_kind() == FDSTORE_SYSTEMD)
		fdstore_drop(name);
	return (how & FS_KEEP_GIVE) ? fdstore_give(name, fd) : fdstore_put(name, fd);
}

static void unkeep_cb(void *arg, const char *name)
{
	(void)arg;
	fdstore_drop(name);
}

int bots_init(struct event_base *base, struct config *cfg, struct server *srv, char *err,
	      size_t errlen)
{
	struct fs_params fp = {.workers = cfg->workers,
			       .timeout = -1,
			       .log = fs_log_cb,
			       .lost = restart_lost_cb,
			       .event = fs_event_cb};

	/* a store keeps what must outlive us (fdstore.c): a restart is then invisible */
	if (fdstore_kind() != FDSTORE_NONE) {
		fp.keep = keep_cb;
		fp.unkeep = unkeep_cb;
	}
	struct fs_error ferr = {0};
	int r;

	if (cfg->poll_set)
		fp.poll_us = cfg->poll_us == 0 ? -1 : (int)cfg->poll_us;
	bots_state.base = base;
	bots_state.cfg = cfg;
	bots_state.srv = srv;
	bots_state.restarts_fd = -1;
	bots_state.fs = fs_new(&fp, &ferr);
	if (bots_state.fs == NULL) {
		snprintf(err, errlen, "%s", ferr.msg);
		return -ferr.code;
	}
	bots_state.started = time(NULL);
	TAILQ_INIT(&bots_state.bots);
	if ((r = roots_init(err, errlen)) != 0)
		return r;
	accounts_init(cfg);
	if (events_init(base, &bots_state.bots) != 0 || changes_init(cfg) != 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if ((r = jobs_start(err, errlen)) != 0)
		return r;
	cgroup_init(cfg->cgroup);
	if (cgroup_mode() == CG_BROKEN)
		log_msg(LOG_WARNING, "no cgroups for the sandboxes: %s; agentfs exec refuses every "
				     "bot until that is fixed, or the config's \"cgroup\" is \"\"",
			cgroup_why());
	if ((r = restart_start(err, errlen)) != 0)
		return r;
	sandboxes_restore();
	return 0;
}

/*
 * SIGTERM or SIGINT: a restart when a store keeps the mounts (the grace is
 * not 0 or systemd keeps them), else a stop; agentfs shutdown always stops.
 */
void bots_stop_requested(int sig)
{
	bots_state.restarting =
		!bots_state.shutdown_requested && fdstore_kind() != FDSTORE_NONE &&
		(fdstore_kind() == FDSTORE_SYSTEMD || bots_state.cfg->restart_grace > 0);
	log_msg(LOG_INFO, "signal %d: %s", sig,
		bots_state.restarting ? "handing the mounts over for a restart" : "shutting down");
}

bool bots_restarting(void)
{
	return bots_state.restarting && !bots_state.shutdown_requested;
}

/*
 * A restart: what runs finishes (the job threads), the state and every
 * bot's changes are saved, and the mounts are handed over as they are,
 * their open files kept (fs_handover); nothing is unmounted. What a
 * restart loses: the events ring of each bot (agentfs log), in memory only.
 */
void bots_handover(void)
{
	int n;

	jobs_stop();
	bots_save_state();
	restart_crash_point("handover");
	n = fs_handover(bots_state.fs);
	restart_crash_point("handed");
	changes_stop();
	events_stop();
	restart_stop();
	sandboxes_handover();
	log_msg(LOG_INFO, "handed %d mount%s over to the next agentfsd", n, n == 1 ? "" : "s");
}

/* Stop the job threads, then unmount everything and close every socket. */
void bots_stop(void)
{
	struct bot *b;

	jobs_stop();
	bots_save_state();
	sandboxes_stop();
	while ((b = TAILQ_FIRST(&bots_state.bots)) != NULL) {
		bot_unmount_all(b);
		bot_remove(b);
	}
	bots_state.nbots = 0;
	events_stop();
	changes_stop();
	jobs_free();
	roots_stop();
	restart_stop();
	cgroup_stop();
	fs_free(bots_state.fs);
	bots_state.fs = NULL;
}

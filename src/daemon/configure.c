/* SPDX-License-Identifier: MIT */
/*
 * configure: a bot's new limits, checked whole against its maker and the
 * bots it made before anything changes. Roots that stay keep their mount
 * (its access changes in place); roots that go are unmounted, new ones
 * mounted, on the job thread.
 */
#include "src/daemon/bots-int.h"
#include "fusefs/fusefs.h"

#include <errno.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <event2/event.h>

static void run_configure(struct job *j)
{
	size_t i;

	for (i = 0; i < j->nunmount; i++) {
		fs_unmount(j->unmount[i]);
		fs_mount_free(j->unmount[i]);
	}
	for (i = 0; i < j->bot->nroots; i++) {
		struct root *rt = &j->bot->roots[i];

		if (rt->m == NULL && rt->error == NULL) {
			j->error = 0;
			root_mount(j, j->bot, rt);
			if (j->error != 0)
				log_msg(LOG_WARNING, "bot %s: %s", j->bot->name, j->msg);
		}
	}
	j->error = 0;
}

static void done_configure(struct job *j)
{
	cJSON *body = cJSON_CreateObject();
	size_t i;

	j->bot->busy = false;
	events_bot(j->bot, "bot_configured", NULL, "configured: sandbox %s, %zu roots",
		   sandbox_name(j->bot->sandbox), j->bot->nroots);
	for (i = 0; i < j->bot->nroots; i++) {
		struct root *rt = &j->bot->roots[i];

		if (rt->was_lost && rt->m != NULL)
			events_bot(j->bot, "mount_restored", rt->path, "%s mounted again at %s",
				   rt->path, rt->mountpoint);
		rt->was_lost = false;
	}
	bots_save_state();
	cJSON_AddItemToObject(body, "bot", bot_to_json(j->bot, true));
	request_reply(&j->req, body);
	job_finish(j);
}

/*
 * Configure names only folders that exist and may be roots, as create
 * does (it fails at the mount), before anything changes.
 */
static bool folders_exist(struct request *r, const struct paths *p)
{
	char why[PATH_MAX + 256];
	size_t i;
	int fd, e;

	for (i = 0; i < p->n; i++) {
		fd = roots_open_folder(p->v[i]);
		if (fd < 0) {
			e = errno;
			bots_fail(r, "bad_path", "%s: %s", p->v[i], roots_folder_error(e));
			return false;
		}
		e = roots_allowed(fd, p->v[i], why, sizeof why);
		close(fd);
		if (e != 0) {
			bots_fail(r, "bad_path", "%s", why);
			return false;
		}
	}
	return true;
}

/*
 * b takes next's roots. Keep the mounts whose root stays: their access
 * changes in place at once. Roots that go reach j's unmount list (sized
 * before anything changed), new ones are mounted for the next exec.
 */
static void keep_roots(struct bot *b, struct bot *next, struct job *j)
{
	struct root *old = b->roots;
	size_t nold = b->nroots, i, k;

	b->roots = next->roots;
	b->nroots = next->nroots;
	b->mount_seq = next->mount_seq;
	for (k = 0; k < nold; k++) {
		for (i = 0; i < b->nroots; i++) {
			if (!b->roots[i].kept && strcmp(b->roots[i].path, old[k].path) == 0 &&
			    old[k].lost) {
				/* Mounted again at its place once the old mount has ended. */
				b->roots[i].kept = true;
				b->roots[i].was_lost = true;
				free(b->roots[i].mountpoint);
				b->roots[i].mountpoint = old[k].mountpoint;
				old[k].mountpoint = NULL;
				break;
			}
			if (!b->roots[i].kept && strcmp(b->roots[i].path, old[k].path) == 0) {
				b->roots[i].kept = true;
				b->roots[i].m = old[k].m;
				free(b->roots[i].mountpoint);
				b->roots[i].mountpoint = old[k].mountpoint;
				old[k].mountpoint = NULL;
				old[k].m = NULL;
				if (b->roots[i].m != NULL) {
					fs_mount_set_readonly(b->roots[i].m, !b->roots[i].writable);
					fs_mount_set_allow_new_repos(b->roots[i].m,
								     b->allow_new_repos);
				}
				break;
			}
		}
		if (old[k].m != NULL)
			j->unmount[j->nunmount++] = old[k].m;
		if (old[k].mountpoint != NULL && old[k].m == NULL)
			rmdir(old[k].mountpoint);
		free(old[k].path);
		free(old[k].mountpoint);
		free(old[k].error);
	}
	free(old);
}

/*
 * What b would be with s, checked whole before anything changes: against
 * its maker's ceiling first (a bot learns nothing of folders beyond it),
 * then its new folders, then the bots it made against it. Fills next.
 */
/*
 * b's entry in the state file as next would have it: what it grows by is
 * charged to its family and operator (a bot's bots are charged when they
 * are made) before anything changes; next->state_bytes is its new size.
 * False after failing the request.
 */
static bool state_grows(struct request *r, struct bot *b, const struct bot_spec *s,
			struct bot *next)
{
	struct bot tmp = *next;
	char why[512];
	size_t size;

	if (s->has_pods)
		tmp.pods = s->pods;
	size = state_entry_size(&tmp);
	if (size == 0) {
		bots_fail(r, "internal", "out of memory");
		return false;
	}
	if (size > b->state_bytes &&
	    !acct_take(b->fam, b->op, AR_STATE, size - b->state_bytes, why, sizeof why)) {
		bots_fail(r, "limit", "%s: its entry in the state file would grow to %zu bytes: %s",
			  b->name, size, why);
		return false;
	}
	next->state_bytes = size;
	return true;
}

/* Undo state_grows: the configure did not happen. */
static void state_ungrow(struct bot *b, const struct bot *next)
{
	if (next->state_bytes > b->state_bytes)
		acct_give(b->fam, b->op, AR_STATE, next->state_bytes - b->state_bytes);
}

static bool configure_check(struct request *r, struct bot *b, const struct bot_spec *s,
			    struct bot *next)
{
	struct bot *c;
	char why[512];

	*next = *b;
	next->writable = s->has_writable ? s->writable : b->writable;
	next->readable = s->has_readable ? s->readable : b->readable;
	if (s->has_sandbox)
		next->sandbox = s->sandbox;
	if (s->has_network)
		next->network = s->network;
	if (s->has_allow_new_repos)
		next->allow_new_repos = s->allow_new_repos;
	if (s->has_memory_max)
		next->memory_max = s->memory_max;
	if (s->has_pids_max)
		next->pids_max = s->pids_max;
	if (next->sandbox != SANDBOX_DANGER_FULL_ACCESS && b->uid_set && b->uid == 0) {
		bots_fail(r, "forbidden", ROOT_BOT_REFUSED, b->name, "its user");
		return false;
	}
	if (!bots_ceiling_ok(r, next) || !bots_readable_ok(r, next) || (s->has_writable && !folders_exist(r, &s->writable)) ||
	    (s->has_readable && !folders_exist(r, &s->readable)))
		return false;
	TAILQ_FOREACH(c, &bots_state.bots, entry) {
		if (c->creator != NULL && strcmp(c->creator, b->name) == 0 && !c->deleting &&
		    (!auth_within_ceiling(c, next, why, sizeof why) ||
		     !sandbox_limits_within(c, next, why, sizeof why))) {
			bots_fail(r, "forbidden",
				  "%s would be above its maker's new limits (%s): "
				  "configure or delete it first",
				  c->name, why);
			return false;
		}
	}
	return state_grows(r, b, s, next);
}

/* b takes s's settings (its paths move out of s) and next's; cannot fail. */
static void configure_apply(struct bot *b, struct bot_spec *s, const struct bot *next)
{
	if (s->has_writable) {
		paths_free(&b->writable);
		b->writable = s->writable;
		memset(&s->writable, 0, sizeof s->writable);
	}
	if (s->has_readable) {
		paths_free(&b->readable);
		b->readable = s->readable;
		memset(&s->readable, 0, sizeof s->readable);
	}
	if (s->has_pods) {
		paths_free(&b->pods);
		b->pods = s->pods;
		memset(&s->pods, 0, sizeof s->pods);
	}
	b->sandbox = next->sandbox;
	b->network = next->network;
	b->allow_new_repos = next->allow_new_repos;
	b->memory_max = next->memory_max;
	b->pids_max = next->pids_max;
	if (s->has_ttl) {
		b->ttl = s->ttl;
		b->expires = s->ttl > 0 ? time(NULL) + s->ttl : 0;
		if (b->ttl_ev != NULL)
			evtimer_del(b->ttl_ev);
		bot_arm_ttl(b);
	}
}

bool bots_configure(struct request *r, struct bot_spec *s)
{
	struct bot *caller = bots_caller(r), *b, next = {0};
	struct job *j;

	if ((b = bot_find_visible(r, s->name)) == NULL)
		return false;
	if (caller == b) {
		bots_fail(r, "forbidden", "a bot cannot configure itself");
		return false;
	}
	if (b->busy) {
		bots_fail(r, "busy", "bot %s is being changed; ask again", b->name);
		return false;
	}
	if (!bots_pods_by_operator(r, b->name, s) || !configure_check(r, b, s, &next))
		return false;
	/*
	 * Everything that can fail comes first, before the bot changes: a
	 * removed root's mount must reach the unmount list, never be dropped.
	 */
	j = job_new(r);
	if (j == NULL) {
		state_ungrow(b, &next);
		bots_fail(r, "internal", "out of memory");
		return false;
	}
	j->unmount = calloc(b->nroots + 1, sizeof *j->unmount);
	next.roots = NULL;
	next.nroots = 0;
	if (j->unmount == NULL || bot_plan_roots(&next) != 0) {
		state_ungrow(b, &next);
		bots_fail(r, "internal", "out of memory");
		job_abort(j);
		return false;
	}
	if (next.state_bytes < b->state_bytes)
		acct_give(b->fam, b->op, AR_STATE, b->state_bytes - next.state_bytes);
	b->state_bytes = next.state_bytes;
	configure_apply(b, s, &next);
	keep_roots(b, &next, j);
	b->busy = true;
	j->bot = b;
	j->uid = caller == NULL && r->peer != NULL ? server_peer_uid(r->peer) : 0;
	j->lane = b->fam;
	j->run = run_configure;
	j->done = done_configure;
	job_submit(j);
	return true;
}

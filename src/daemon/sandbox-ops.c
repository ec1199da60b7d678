/* SPDX-License-Identifier: MIT */
/*
 * What agentfsd does to the running sandboxes and tells of them: their
 * limits (a bot's, or the defaults) and the end of their cgroups, the
 * signals it sends (by pidfd, to processes still of the user that
 * registered them), rm --force, which ends them before a bot is deleted,
 * and what show and ps list. The records themselves: sandbox.c.
 */
#include "src/daemon/sandbox-int.h"
#include "src/daemon/cgroup.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <event2/event.h>

/* A sandbox's limits for bot b: its own, else the config's defaults. */
uint64_t bot_memory_max(const struct bot *b)
{
	if (b->memory_max > 0)
		return b->memory_max;
	return bots_state.cfg->default_memory_max > 0 ? bots_state.cfg->default_memory_max
						      : cgroup_default_memory();
}

uint64_t bot_pids_max(const struct bot *b)
{
	if (b->pids_max > 0)
		return b->pids_max;
	return bots_state.cfg->default_pids_max > 0 ? bots_state.cfg->default_pids_max : 4096;
}

/* A bot's bot b may take no more than its maker c: its limits are under c's. */
bool sandbox_limits_within(const struct bot *b, const struct bot *c, char *why, size_t len)
{
	if (bot_memory_max(b) > bot_memory_max(c)) {
		snprintf(why, len, "memory_max %llu is above %s's %llu",
			 (unsigned long long)bot_memory_max(b), c->name,
			 (unsigned long long)bot_memory_max(c));
		return false;
	}
	if (bot_pids_max(b) > bot_pids_max(c)) {
		snprintf(why, len, "pids_max %llu is above %s's %llu",
			 (unsigned long long)bot_pids_max(b), c->name,
			 (unsigned long long)bot_pids_max(c));
		return false;
	}
	return true;
}

/*
 * Cgroups of ended sandboxes still holding a process (one still exiting):
 * removed again every 100 ms for 10 s, then every 5 s. Loop only. What is
 * left of them at a stop gets a last pass (sandbox_cgroups_stop); what
 * still is there then, or would not fit here, the next agentfsd's start
 * removes (sandbox_cgroups_sweep).
 */
#define CG_PENDING 64
#define CG_FAST_TRIES 100 /* 10 s at 100 ms */
static struct {
	char name[CG_NAME_MAX];
	int tries;
} cg_pending[CG_PENDING];
static struct event *cg_timer;

/*
 * For tests/exec-cgsweep.sh only: AGENTFSD_TEST_CGROUP_BUSY=1 makes every
 * removal of an ended sandbox's cgroup on the loop report EBUSY without
 * trying, as when a process of it is still exiting, so the cgroup waits on
 * the list above; the stop's last pass is not fooled.
 */
static int cg_remove(const char *name)
{
	static int busy = -1;

	if (busy < 0) {
		const char *v = getenv("AGENTFSD_TEST_CGROUP_BUSY");

		busy = v != NULL && strcmp(v, "1") == 0;
	}
	return busy ? -EBUSY : cgroup_sandbox_remove(name);
}

static void cg_retry(evutil_socket_t fd, short what, void *arg)
{
	struct timeval tv = {5, 0};
	bool more = false;
	size_t i;

	for (i = 0; i < CG_PENDING; i++) {
		if (cg_pending[i].name[0] == '\0')
			continue;
		cgroup_sandbox_kill(cg_pending[i].name);
		if (cg_remove(cg_pending[i].name) == 0) {
			cg_pending[i].name[0] = '\0';
			continue;
		}
		if (++cg_pending[i].tries == CG_FAST_TRIES)
			log_msg(LOG_WARNING,
				"the cgroup %s/%s of an ended sandbox is still busy after 10 s: "
				"tried again every 5 s, and at the stop",
				cgroup_where(), cg_pending[i].name);
		if (cg_pending[i].tries < CG_FAST_TRIES) {
			tv.tv_sec = 0;
			tv.tv_usec = 100 * 1000;
		}
		more = true;
	}
	if (more && cg_timer != NULL)
		evtimer_add(cg_timer, &tv);
}

/* The sandbox ended: nothing of it may run on, and its cgroup goes. */
void sandbox_cgroup_end(const char *name)
{
	struct timeval tv = {0, 100 * 1000};
	size_t i, free_slot = CG_PENDING;

	if (name[0] == '\0')
		return;
	cgroup_sandbox_kill(name);
	if (cg_remove(name) == 0)
		return;
	for (i = 0; i < CG_PENDING; i++) {
		if (strcmp(cg_pending[i].name, name) == 0)
			return; /* already waited for */
		if (cg_pending[i].name[0] == '\0' && free_slot == CG_PENDING)
			free_slot = i;
	}
	if (free_slot == CG_PENDING) {
		log_msg(LOG_WARNING,
			"the cgroup %s/%s of an ended sandbox is still busy, and %d others are: "
			"left in place until the next start of agentfsd",
			cgroup_where(), name, CG_PENDING);
		return;
	}
	snprintf(cg_pending[free_slot].name, sizeof cg_pending[free_slot].name, "%s", name);
	cg_pending[free_slot].tries = 0;
	if (cg_timer == NULL)
		cg_timer = evtimer_new(bots_state.base, cg_retry, NULL);
	if (cg_timer != NULL)
		evtimer_add(cg_timer, &tv);
}

/*
 * The daemon stops: the cgroups still waited for are killed and removed
 * again, every 20 ms for up to wait_ms (a second), so a stop never hangs
 * on them; 0 tries each once (a handover: the next agentfsd sweeps the
 * rest). What is still busy after is left for the next start, and said.
 */
void sandbox_cgroups_stop(int wait_ms)
{
	long long end = mono_ms() + wait_ms;
	size_t i, left;

	if (cg_timer != NULL)
		event_free(cg_timer);
	cg_timer = NULL;
	for (;;) {
		left = 0;
		for (i = 0; i < CG_PENDING; i++) {
			if (cg_pending[i].name[0] == '\0')
				continue;
			cgroup_sandbox_kill(cg_pending[i].name);
			if (cgroup_sandbox_remove(cg_pending[i].name) == 0)
				cg_pending[i].name[0] = '\0';
			else
				left++;
		}
		if (left == 0 || mono_ms() >= end)
			break;
		usleep(20 * 1000);
	}
	for (i = 0; i < CG_PENDING; i++) {
		if (cg_pending[i].name[0] != '\0' && wait_ms > 0)
			log_msg(LOG_WARNING,
				"the cgroup %s/%s of an ended sandbox is still busy at the stop: "
				"left in place until the next start of agentfsd",
				cgroup_where(), cg_pending[i].name);
		cg_pending[i].name[0] = '\0';
	}
}

/* Has a sandbox this daemon follows the cgroup name? */
static bool cg_owned(const char *name)
{
	const cJSON *u, *cg;
	struct sandbox_run *sb;
	struct bot *b;

	TAILQ_FOREACH(b, &bots_state.bots, entry)
		LIST_FOREACH(sb, &b->sandboxes, entry)
			if (strcmp(sb->cg, name) == 0)
				return true;
	/* a sandbox the start could not take back may still run there (sandbox.c) */
	cJSON_ArrayForEach(u, sandboxes_unsure()) {
		cg = cJSON_GetObjectItemCaseSensitive(u, "cgroup");
		if (cJSON_IsString(cg) && strcmp(cg->valuestring, name) == 0)
			return true;
	}
	return false;
}

/* A sandbox cgroup no sandbox owns: what runs in it is killed, and it goes. */
static void cg_leftover(const char *name)
{
	long long mem, pids;

	cgroup_sandbox_usage(name, &mem, &pids);
	if (pids > 0)
		log_msg(LOG_INFO,
			"the cgroup %s/%s is of a sandbox no agentfsd follows (its daemon ended "
			"before removing it): its %lld process%s killed, and it removed",
			cgroup_where(), name, pids, pids == 1 ? "" : "es");
	else
		log_msg(LOG_INFO,
			"the cgroup %s/%s is of a sandbox no agentfsd follows (its daemon ended "
			"before removing it): removed",
			cgroup_where(), name);
	sandbox_cgroup_end(name);
}

/*
 * At start, once the sandboxes still running are taken back: the cgroups
 * of sandboxes that ended while no daemon could remove them (a stop with
 * one still busy, a daemon killed or crashed) go. Only names of the
 * sandboxes' pattern in this daemon's own base, and never while another
 * agentfsd uses that base (cgroup_sweep).
 */
void sandbox_cgroups_sweep(void)
{
	int n = cgroup_sweep(cg_owned, cg_leftover);

	if (n == -EWOULDBLOCK)
		log_msg(LOG_WARNING,
			"another agentfsd uses the cgroup %s too: cgroups of ended sandboxes "
			"left there are not removed (each agentfsd needs a \"cgroup\" of its own)",
			cgroup_where());
	else if (n < 0)
		log_msg(LOG_WARNING, "cannot look for cgroups of ended sandboxes in %s: %s",
			cgroup_where(), strerror(-n));
}

/*
 * May the daemon signal the process for whoever registered it? Root's are
 * fine; a user's only while the process still runs as that user (its real
 * or saved uid, as kill(2) asks), so a process that became privileged is
 * left alone. The pidfd, checked after reading, makes sure /proc spoke of it.
 */
static bool may_signal(int pidfd, pid_t pid, uid_t uid)
{
	char path[64], line[256];
	unsigned r = 0, e = 0, sv = 0;
	bool ok = false;
	FILE *f;

	if (uid == 0)
		return true;
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return false;
	while (fgets(line, sizeof line, f) != NULL)
		if (sscanf(line, "Uid: %u %u %u", &r, &e, &sv) == 3) {
			ok = r == uid || sv == uid;
			break;
		}
	fclose(f);
	return ok && pidfd_signal(pidfd, 0) == 0;
}

/* SIGKILL ends the whole sandbox: bwrap's death takes its init, and the pid namespace, along. */
void sandbox_signal(struct sandbox_run *sb, int sig)
{
	if (sig == SIGKILL && sb->childfd >= 0 && may_signal(sb->childfd, sb->child, sb->uid))
		pidfd_signal(sb->childfd, SIGKILL);
	if (sig == SIGKILL && sb->initfd >= 0 && may_signal(sb->initfd, sb->init, sb->uid))
		pidfd_signal(sb->initfd, SIGKILL);
	if (sig == SIGKILL && sb->cg[0] != '\0')
		cgroup_sandbox_kill(sb->cg);
	if (may_signal(sb->pidfd, sb->pid, sb->uid))
		pidfd_signal(sb->pidfd, sig);
}

/* ---- rm --force ---------------------------------------------------------------- */

/* rm --force waiting for a bot's sandboxes to end before it deletes the bot. */
struct force {
	struct request req;
	struct bot *bot;
	struct bot **victims;
	size_t nvictims;
	struct event *tick;
	long long start; /* mono_ms() */
	bool killed;
};

/*
 * Does the daemon know every sandbox that may still run? Not while the
 * files the start could not read are unread (sandbox-disk.c): they are read
 * again here.
 */
bool sandboxes_known(void)
{
	return !sandboxes_unread() || sandboxes_take_back();
}

unsigned sandboxes_running(struct bot **v, size_t n)
{
	unsigned count = 0;
	size_t i;

	sandboxes_settle(v, n);
	for (i = 0; i < n; i++)
		count += v[i]->nsandboxes;
	return count;
}

static void force_signal(struct force *f, int sig)
{
	struct sandbox_run *sb;
	size_t i;

	for (i = 0; i < f->nvictims; i++)
		LIST_FOREACH(sb, &f->victims[i]->sandboxes, entry)
			sandbox_signal(sb, sig);
}

static void force_tick(evutil_socket_t fd, short what, void *arg)
{
	struct force *f = arg;
	struct timeval tv = {0, 100 * 1000};
	long long waited = mono_ms() - f->start;
	struct peer *p = f->req.peer;
	size_t i;

	if (sandboxes_running(f->victims, f->nvictims) > 0) {
		if (waited < (FORCE_GRACE_S + FORCE_GIVE_UP_S) * 1000) {
			if (waited >= FORCE_GRACE_S * 1000 && !f->killed) {
				log_msg(LOG_INFO,
					"bot %s: sandboxes still running after %d s: SIGKILL",
					f->bot->name, FORCE_GRACE_S);
				force_signal(f, SIGKILL);
				f->killed = true;
			}
			evtimer_add(f->tick, &tv);
			return;
		}
		log_msg(LOG_WARNING, "bot %s: %u sandboxes outlived SIGKILL; deleting anyway",
			f->bot->name, sandboxes_running(f->victims, f->nvictims));
	}
	for (i = 0; i < f->nvictims; i++)
		f->victims[i]->busy = false;
	event_free(f->tick);
	/* bot_delete answers, and resumes the client, or fails at once and answers. */
	if (!bot_delete(&f->req, f->bot)) {
		cJSON_Delete(f->req.id);
		if (p != NULL)
			server_peer_resume(p);
	}
	if (p != NULL)
		server_peer_unref(p);
	free(f->victims);
	free(f);
}

/* End the sandboxes of b and its bots (SIGTERM, then SIGKILL), then delete them. */
bool sandbox_force_delete(struct request *r, struct bot *b)
{
	struct timeval now = {0, 0};
	struct force *f = calloc(1, sizeof *f);
	size_t i;

	if (f == NULL || (f->tick = evtimer_new(bots_state.base, force_tick, f)) == NULL) {
		free(f);
		bots_fail(r, "internal", "out of memory");
		return false;
	}
	if (!bots_collect_idle(r, b, &f->victims, &f->nvictims)) {
		event_free(f->tick);
		free(f->victims);
		free(f);
		return false;
	}
	/* Busy: no exec, change or other delete starts meanwhile. */
	for (i = 0; i < f->nvictims; i++)
		f->victims[i]->busy = true;
	f->req = *r;
	f->bot = b;
	f->start = mono_ms();
	if (r->peer != NULL)
		server_peer_ref(r->peer);
	log_msg(LOG_INFO, "bot %s: rm --force: ending %u sandboxes (SIGTERM)", b->name,
		sandboxes_running(f->victims, f->nvictims));
	force_signal(f, SIGTERM);
	evtimer_add(f->tick, &now);
	return true;
}

/* ---- what runs --------------------------------------------------------------------- */

/* "pids 123 456" for b and its bots. */
void sandbox_running_msg(struct bot **v, size_t n, char *out, size_t len)
{
	struct sandbox_run *sb;
	size_t i, off;

	off = (size_t)snprintf(out, len, "pid%s", sandboxes_running(v, n) == 1 ? "" : "s");
	for (i = 0; i < n; i++)
		LIST_FOREACH(sb, &v[i]->sandboxes, entry)
			if (off < len)
				off += (size_t)snprintf(out + off, len - off, " %d", (int)sb->pid);
}

/* What a sandbox's cgroup says it uses now: "memory" and "pids", where known. */
static bool sandbox_usage(cJSON *o, const char *cg)
{
	long long mem, pids;

	cgroup_sandbox_usage(cg, &mem, &pids);
	return (mem < 0 || cJSON_AddNumberToObject(o, "memory", (double)mem) != NULL) &&
	       (pids < 0 || cJSON_AddNumberToObject(o, "pids", (double)pids) != NULL);
}

/* One sandbox as show and ps give it. */
static cJSON *sandbox_json(const struct sandbox_run *sb, bool with_bot)
{
	cJSON *o = cJSON_CreateObject();
	char *u = user_name(sb->run_uid);
	bool ok;

	ok = o != NULL && (!with_bot || cJSON_AddStringToObject(o, "bot", sb->bot->name) != NULL) &&
	     cJSON_AddNumberToObject(o, "pid", sb->pid) != NULL &&
	     (sb->child <= 0 || cJSON_AddNumberToObject(o, "bwrap", sb->child) != NULL) &&
	     (sb->init <= 0 || cJSON_AddNumberToObject(o, "init", sb->init) != NULL) &&
	     cJSON_AddNumberToObject(o, "started", (double)sb->started) != NULL &&
	     cJSON_AddNumberToObject(o, "uid", sb->run_uid) != NULL &&
	     cJSON_AddStringToObject(o, "user", u != NULL ? u : "") != NULL &&
	     cJSON_AddNumberToObject(o, "memory_max", (double)sb->memory_max) != NULL &&
	     cJSON_AddNumberToObject(o, "pids_max", (double)sb->pids_max) != NULL &&
	     (sb->cg[0] == '\0' || sandbox_usage(o, sb->cg)) &&
	     cJSON_AddItemToObject(o, "command",
				   sb->argv != NULL ? cJSON_Duplicate(sb->argv, true)
						    : cJSON_CreateArray());
	free(u);
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* The running `agentfs exec`s of b, in show: [{"pid": N, ...}]. */
void sandboxes_json(const struct bot *b, cJSON *bot)
{
	cJSON *arr = cJSON_AddArrayToObject(bot, "sandboxes");
	struct sandbox_run *sb;

	LIST_FOREACH(sb, &b->sandboxes, entry)
		cJSON_AddItemToArray(arr, sandbox_json(sb, false));
}

/* In show: what each of b's sandboxes gets, its own limits or the defaults. */
void sandbox_limits_json(const struct bot *b, cJSON *bot)
{
	cJSON *o = cJSON_AddObjectToObject(bot, "limits");

	cJSON_AddNumberToObject(o, "memory_max", (double)bot_memory_max(b));
	cJSON_AddNumberToObject(o, "pids_max", (double)bot_pids_max(b));
	cJSON_AddBoolToObject(o, "applied", cgroup_mode() == CG_V1 || cgroup_mode() == CG_V2);
}

/* In status: which cgroups hold the sandboxes, and where; why none, where none can. */
void sandbox_cgroups_json(cJSON *body)
{
	static const char *const names[] = {"off", "v1", "v2", "unusable"};

	cJSON_AddStringToObject(body, "cgroups", names[cgroup_mode()]);
	if (cgroup_mode() == CG_V1 || cgroup_mode() == CG_V2)
		cJSON_AddStringToObject(body, "cgroup", cgroup_where());
	else if (cgroup_mode() == CG_BROKEN)
		cJSON_AddStringToObject(body, "cgroup", cgroup_why());
}

/* ps: every running sandbox of the bots the caller may see. */
void bots_ps(struct request *r)
{
	cJSON *body = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(body, "sandboxes"), *o;
	struct sandbox_run *sb;
	struct bot *b;

	if (arr == NULL) {
		cJSON_Delete(body);
		bots_fail(r, "internal", "out of memory");
		return;
	}
	TAILQ_FOREACH(b, &bots_state.bots, entry) {
		if (b->deleting || !bot_visible(r, b))
			continue;
		LIST_FOREACH(sb, &b->sandboxes, entry) {
			if ((o = sandbox_json(sb, true)) == NULL) {
				cJSON_Delete(body);
				bots_fail(r, "internal", "out of memory");
				return;
			}
			cJSON_AddItemToArray(arr, o);
		}
	}
	request_reply(r, body);
}

/* SPDX-License-Identifier: MIT */
/*
 * The requests that change no bot: list, show, status, the exec plan,
 * log and changes; and shutdown, which ends the loop.
 */
#include "src/bots-int.h"
#include "fusefs/fusefs.h"

#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <event2/event.h>

void bots_list(struct request *r)
{
	struct bot *b;
	cJSON *body = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(body, "bots");

	TAILQ_FOREACH(b, &ds.bots, entry)
		if (!b->deleting && bot_visible(r, b))
			cJSON_AddItemToArray(arr, bot_to_json(b, false));
	request_reply(r, body);
}

void bots_show(struct request *r, const char *name)
{
	struct bot *b;
	cJSON *body, *bot;

	if ((b = visible_bot(r, name)) == NULL)
		return;
	check_lost(b);
	body = cJSON_CreateObject();
	bot = bot_to_json(b, true);
	cJSON_AddItemToObject(body, "bot", bot);
	sandboxes_json(b, bot);
	request_reply(r, body);
}

/* How many bots the asker sees (all of them, for root). */
static unsigned bots_seen(struct request *r)
{
	struct bot *b;
	unsigned n = 0;

	if (operator_uid(r) == 0)
		return ds.nbots;
	TAILQ_FOREACH(b, &ds.bots, entry)
		if (!b->deleting && bot_visible(r, b))
			n++;
	return n;
}

void bots_status(struct request *r)
{
	cJSON *body = cJSON_CreateObject();
	struct bot *caller = caller_of(r);

	cJSON_AddStringToObject(body, "version", PACKAGE_VERSION);
	cJSON_AddNumberToObject(body, "protocol", PROTOCOL_VERSION);
	if (caller != NULL) {
		cJSON_AddStringToObject(body, "bot", caller->name);
	} else {
		cJSON_AddNumberToObject(body, "pid", getpid());
		cJSON_AddNumberToObject(body, "uptime", (double)(time(NULL) - ds.started));
		cJSON_AddNumberToObject(body, "bots", bots_seen(r));
		cJSON_AddNumberToObject(body, "mounts", fs_mount_count(ds.fs));
		cJSON_AddNumberToObject(body, "clients", server_clients(ds.srv));
		cJSON_AddNumberToObject(body, "workers", ds.cfg->workers);
		cJSON_AddNumberToObject(body, "poll_us",
					ds.cfg->poll_set ? ds.cfg->poll_us : FS_POLL_US_DEFAULT);
		cJSON_AddStringToObject(body, "socket", ds.cfg->socket_path);
		cJSON_AddStringToObject(body, "state", ds.cfg->state_dir);
	}
	request_reply(r, body);
}

/* One string more in the array arr; false when out of memory. */
static bool add_string(cJSON *arr, const char *s)
{
	cJSON *v = cJSON_CreateString(s);

	if (v == NULL || !cJSON_AddItemToArray(arr, v)) {
		cJSON_Delete(v);
		return false;
	}
	return true;
}

/* One bind of the plan: where b's root rt is mounted and where it goes. */
static bool add_bind(cJSON *binds, const struct root *rt)
{
	cJSON *o = cJSON_CreateObject();

	if (o == NULL || !cJSON_AddItemToArray(binds, o)) {
		cJSON_Delete(o);
		return false;
	}
	return cJSON_AddStringToObject(o, "source", rt->mountpoint) != NULL &&
	       cJSON_AddStringToObject(o, "path", rt->path) != NULL &&
	       cJSON_AddBoolToObject(o, "writable", rt->writable) != NULL;
}

/*
 * The exec plan of b, whole or not at all (NULL: out of memory): a plan
 * missing a bind or a folder to hide would confine the bot less.
 */
static cJSON *plan_json(const struct bot *b)
{
	cJSON *body = cJSON_CreateObject(), *binds, *hide;
	const char *sock = b->sock != NULL ? server_listener_path(b->sock) : "";
	char *sd = NULL;
	bool ok;
	size_t i;

	ok = body != NULL && cJSON_AddStringToObject(body, "name", b->name) != NULL &&
	     cJSON_AddStringToObject(body, "sandbox", sandbox_name(b->sandbox)) != NULL &&
	     cJSON_AddBoolToObject(body, "network", b->network) != NULL &&
	     cJSON_AddNumberToObject(body, "uid", b->uid) != NULL &&
	     cJSON_AddStringToObject(body, "folder", b->folder) != NULL &&
	     cJSON_AddStringToObject(body, "socket", sock) != NULL &&
	     cJSON_AddStringToObject(body, "control_socket", ds.cfg->socket_path) != NULL;
	binds = ok ? cJSON_AddArrayToObject(body, "binds") : NULL;
	for (i = 0, ok = binds != NULL; ok && i < b->nroots; i++)
		ok = add_bind(binds, &b->roots[i]);
	hide = ok ? cJSON_AddArrayToObject(body, "hide") : NULL;
	if (asprintf(&sd, "%s.d", ds.cfg->socket_path) < 0)
		sd = NULL;
	ok = hide != NULL && sd != NULL && add_string(hide, ds.cfg->state_dir) &&
	     add_string(hide, sd);
	free(sd);
	if (!ok) {
		cJSON_Delete(body);
		return NULL;
	}
	return body;
}

/*
 * What `agentfs exec` needs to confine a bot with bwrap: each root's mount
 * and the path to bind it at, the bot's socket, and the daemon's own paths
 * to hide. The client runs bwrap; the daemon never starts processes.
 */
/*
 * pod (agentfs-csi, publishing the bot's roots into a pod): the pod as
 * kubelet named it, which must be one the operator listed in the bot's
 * pods. Decided here, from the bot's record, never from what the pod's
 * author wrote in its volume's attributes.
 */
void bots_exec_plan(struct request *r, const char *name, const char *pod)
{
	struct bot *b;
	cJSON *body;
	size_t i;

	if ((b = visible_bot(r, name)) == NULL)
		return;
	if (pod != NULL && !auth_pod_allowed(b, pod)) {
		if (b->pods.n == 0)
			fail(r, "forbidden",
			     "bot %s names no pods: `agentfs configure %s --pod NAMESPACE/SERVICEACCOUNT`",
			     b->name, b->name);
		else
			fail(r, "forbidden", "pod %s is not one of bot %s's pods", pod, b->name);
		return;
	}
	if (b->busy) {
		fail(r, "busy", "bot %s is being changed; ask again", b->name);
		return;
	}
	check_lost(b);
	for (i = 0; i < b->nroots; i++) {
		if (b->roots[i].lost) {
			fail(r, "mount_lost",
			     "%s was unmounted from outside (its mount %s): nothing was run; "
			     "`agentfs configure %s` (or restarting agentfsd) mounts it again",
			     b->roots[i].path, b->roots[i].mountpoint, b->name);
			return;
		}
		if (b->roots[i].m == NULL) {
			fail(r, "mount_failed", "%s is not mounted: %s", b->roots[i].path,
			     b->roots[i].error != NULL ? b->roots[i].error : "unknown reason");
			return;
		}
	}
	body = plan_json(b);
	if (body == NULL) {
		fail(r, "internal", "out of memory: no plan was made, nothing was run");
		return;
	}
	request_reply(r, body);
}

void bots_shutdown(struct request *r)
{
	if (caller_of(r) != NULL) {
		fail(r, "forbidden", "a bot cannot shut the daemon down");
		return;
	}
	if (operator_uid(r) != 0) {
		fail(r, "forbidden", "only root may shut agentfsd down");
		return;
	}
	ds.shutdown_requested = true;
	request_reply(r, NULL);
	log_msg(LOG_INFO, "shutdown requested");
	event_base_loopexit(ds.base, NULL);
}

/* log: a bot's events (its own and its descendants' only), or the daemon's for the operator. */
bool bots_log(struct request *r, const char *name, uint64_t since, bool follow)
{
	struct bot *caller = caller_of(r), *b = name != NULL ? bot_find(name) : caller;

	if (name != NULL && (b == NULL || b->deleting || !bot_visible(r, b))) {
		fail(r, "not_found", "no bot named %s", name);
		return false;
	}
	/* the daemon's log names every bot: root's alone */
	if (b == NULL && operator_uid(r) != 0) {
		fail(r, "forbidden", "only root reads every bot's log: name one of your bots");
		return false;
	}
	return events_log(r, b, since, follow);
}

/* changes and mark: of a bot the caller may see (itself included). */
void bots_changes(struct request *r, const char *name, uint64_t since, bool mark)
{
	struct bot *b;

	if ((b = visible_bot(r, name)) == NULL)
		return;
	if (mark)
		changes_mark(r, b->changes);
	else
		changes_list(r, b->changes, since);
}

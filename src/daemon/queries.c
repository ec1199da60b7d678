/* SPDX-License-Identifier: MIT */
/*
 * The requests that change no bot: list, show, status, log and changes;
 * and shutdown, which ends the loop. (The exec plan: plan.c.)
 */
#include "src/daemon/bots-int.h"
#include "src/daemon/cgroup.h"
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

	TAILQ_FOREACH(b, &bots_state.bots, entry)
		if (!b->deleting && bot_visible(r, b))
			cJSON_AddItemToArray(arr, bot_to_json(b, false));
	request_reply(r, body);
}

void bots_show(struct request *r, const char *name)
{
	struct bot *b;
	cJSON *body, *bot;

	if ((b = bot_find_visible(r, name)) == NULL)
		return;
	restart_check_lost(b);
	body = cJSON_CreateObject();
	bot = bot_to_json(b, true);
	cJSON_AddItemToObject(body, "bot", bot);
	sandboxes_json(b, bot);
	sandbox_limits_json(b, bot);
	request_reply(r, body);
}

/* How many bots the asker sees (all of them, for root). */
static unsigned bots_seen(struct request *r)
{
	struct bot *b;
	unsigned n = 0;

	if (bots_operator_uid(r) == 0)
		return bots_state.nbots;
	TAILQ_FOREACH(b, &bots_state.bots, entry)
		if (!b->deleting && bot_visible(r, b))
			n++;
	return n;
}

void bots_status(struct request *r)
{
	cJSON *body = cJSON_CreateObject();
	struct bot *caller = bots_caller(r);

	cJSON_AddStringToObject(body, "version", PACKAGE_VERSION);
	cJSON_AddNumberToObject(body, "protocol", PROTOCOL_VERSION);
	if (caller != NULL) {
		cJSON_AddStringToObject(body, "bot", caller->name);
	} else {
		cJSON_AddNumberToObject(body, "pid", getpid());
		cJSON_AddNumberToObject(body, "uptime", (double)(time(NULL) - bots_state.started));
		cJSON_AddNumberToObject(body, "started", (double)bots_state.started);
		/* restarts its mounts lived through, and what keeps them across one */
		cJSON_AddNumberToObject(body, "restarts", bots_state.restarts);
		cJSON_AddStringToObject(body, "restart",
					fdstore_kind() == FDSTORE_SYSTEMD  ? "systemd"
					: fdstore_kind() == FDSTORE_KEEPER ? "keeper"
									   : "off");
		cJSON_AddNumberToObject(body, "bots", bots_seen(r));
		cJSON_AddNumberToObject(body, "mounts", fs_mount_count(bots_state.fs));
		cJSON_AddNumberToObject(body, "clients", server_clients(bots_state.srv));
		cJSON_AddNumberToObject(body, "reply_memory", (double)acct_used(NULL, AR_OUTPUT));
		cJSON_AddNumberToObject(body, "workers", bots_state.cfg->workers);
		cJSON_AddNumberToObject(body, "poll_us",
					bots_state.cfg->poll_set ? bots_state.cfg->poll_us
								 : FS_POLL_US_DEFAULT);
		cJSON_AddStringToObject(body, "socket", bots_state.cfg->socket_path);
		cJSON_AddStringToObject(body, "state", bots_state.cfg->state_dir);
		sandbox_cgroups_json(body);
	}
	request_reply(r, body);
}

void bots_shutdown(struct request *r)
{
	if (bots_caller(r) != NULL) {
		bots_fail(r, "forbidden", "a bot cannot shut the daemon down");
		return;
	}
	if (bots_operator_uid(r) != 0) {
		bots_fail(r, "forbidden", "only root may shut agentfsd down");
		return;
	}
	bots_state.shutdown_requested = true;
	request_reply(r, NULL);
	log_msg(LOG_INFO, "shutdown requested");
	event_base_loopexit(bots_state.base, NULL);
}

/* log: a bot's events (its own and its descendants' only), or the daemon's for the operator. */
bool bots_log(struct request *r, const char *name, uint64_t since, bool follow)
{
	struct bot *caller = bots_caller(r), *b = name != NULL ? bot_find(name) : caller;

	if (name != NULL && (b == NULL || b->deleting || !bot_visible(r, b))) {
		bots_fail(r, "not_found", "no bot named %s", name);
		return false;
	}
	/* the daemon's log names every bot: root's alone */
	if (b == NULL && bots_operator_uid(r) != 0) {
		bots_fail(r, "forbidden", "only root reads every bot's log: name one of your bots");
		return false;
	}
	return events_log(r, b, since, follow);
}

/*
 * changes and mark: of a bot the caller may see (itself included). Each
 * asker has its own mark, so a bot that moves its mark moves only its own:
 * a bot asks as its name, an operator as its uid.
 */
void bots_changes(struct request *r, const char *name, uint64_t since, const char *after,
		  bool mark)
{
	struct bot *b, *caller = bots_caller(r);
	char asker[32];

	if ((b = bot_find_visible(r, name)) == NULL)
		return;
	if (caller == NULL)
		snprintf(asker, sizeof asker, "uid %u", (unsigned)bots_operator_uid(r));
	if (mark)
		changes_mark(r, b->changes, caller != NULL ? caller->name : asker);
	else
		changes_list(r, b->changes, caller != NULL ? caller->name : asker, since, after);
}

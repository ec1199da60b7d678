/* SPDX-License-Identifier: MIT */
/* agentfs log and agentfs changes: what happened to a bot, and what it changed. */
#include "src/common/agentfs.h"

#include <limits.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

static const char log_usage[] =
	"usage: agentfs log [BOT] [--follow] [--since SEQ] [--json]\n"
	"\n"
	"Show the events kept for BOT (the daemon's, for every bot, without BOT;\n"
	"a bot's own on its socket): writes refused and why, mounts lost and\n"
	"restored, bots made, configured and deleted.\n"
	"\n"
	"  -f, --follow     then print each new event until interrupted\n"
	"      --since SEQ  only events numbered SEQ and later\n"
	"      --json       one JSON object a line (with --follow, the reply, then\n"
	"                   {\"event\": ...} lines)\n";

static const char changes_usage[] =
	"usage: agentfs changes BOT [--since MARK] [--mark] [--json]\n"
	"\n"
	"List what BOT created, modified, deleted and renamed through its mounts\n"
	"since it was made (or since MARK), merged per path.\n"
	"\n"
	"  --since MARK   only since the mark MARK (the bot's latest)\n"
	"  --mark         set a mark now and print its number\n"
	"  --json         print the daemon's JSON reply\n";

static unsigned long long seq_arg(const char *cmd, const char *s)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || *s == '\0' || *s == '-')
		die_usage(cmd, "--since takes a whole number, not %s", s);
	return v;
}

/* Read one line from fd into *buf (grown); false at the end of the stream. */
static bool read_line(int fd, char **buf, size_t *cap, size_t *len, char **line)
{
	char *nl, *nb;
	ssize_t r;

	for (;;) {
		if (*line != NULL) {
			/* drop the line handed out last time */
			size_t used = strlen(*line) + 1;

			memmove(*buf, *buf + used, *len - used);
			*len -= used;
			*line = NULL;
		}
		if (*len > 0 && (nl = memchr(*buf, '\n', *len)) != NULL) {
			*nl = '\0';
			*line = *buf;
			return true;
		}
		if (*len + 4096 > *cap) {
			nb = realloc(*buf, *cap = *len + 65536);
			if (nb == NULL)
				die("out of memory");
			*buf = nb;
		}
		r = read(fd, *buf + *len, *cap - *len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		*len += (size_t)r;
	}
}

static void print_event(const cJSON *o)
{
	char line[8192];

	event_format(o, line, sizeof line);
	printf("%s\n", cli_json(line));
}

/*
 * A --follow stream ended, which it never does while the daemon and the bot
 * are there: say why. The bot deleted (its last event says so) ends it
 * normally; a daemon that stopped or restarted, or that cut the stream
 * (a reader too slow), is agentfs failing: EXIT_AGENTFS.
 */
static int follow_ended(const char *socket_path, const char *bot, bool own, const char *last_type)
{
	const char *fate;

	if ((bot != NULL || own) && strcmp(last_type, "bot_deleted") == 0) {
		if (bot != NULL)
			fprintf(stderr, "agentfs: bot %s was deleted: its log ends here\n",
				cli_escape(bot));
		else
			fprintf(stderr, "agentfs: this bot was deleted: its log ends here\n");
		return 0;
	}
	fate = client_daemon_fate(socket_path);
	if (fate != NULL)
		fprintf(stderr, "agentfs: agentfsd %s: the log ends here%s\n", fate,
			strcmp(fate, "restarted") == 0 ? " (agentfs log --follow again follows "
							 "the new one)"
						       : "");
	else
		fprintf(stderr, "agentfs: agentfsd ended the stream (a reader that falls too "
				"far behind is cut): the log ends here\n");
	return EXIT_AGENTFS;
}

static int cmd_log(const char *socket_path, bool json, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"follow", no_argument, NULL, 'f'},
		{"since", required_argument, NULL, 's'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	cleanup_cjson cJSON *req = cJSON_CreateObject();
	cleanup_free char *text = NULL, *buf = NULL;
	const char *bot = NULL, *as = getenv("AGENT_SOCKET");
	char last_type[32] = "";
	size_t cap = 0, len = 0;
	char *line = NULL;
	bool follow = false, first = true, own;
	int c, fd;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":fh", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			follow = true;
			break;
		case 's':
			cJSON_AddNumberToObject(req, "since", (double)seq_arg("log", optarg));
			break;
		case 'h':
			fputs(log_usage, stdout);
			return 0;
		case ':':
			die_usage("log", "option %s needs an argument", argv[optind - 1]);
		default:
			usage_error("log", argv[optind - 1], optopt);
		}
	}
	if (argc - optind > 1)
		die_usage("log", "log takes at most one bot name");
	cJSON_AddStringToObject(req, "op", "log");
	if (argc - optind == 1)
		cJSON_AddStringToObject(req, "name", bot = argv[optind]);
	own = as != NULL && strcmp(as, socket_path) == 0; /* a bot's own log, on its socket */
	if (follow)
		cJSON_AddBoolToObject(req, "follow", true);
	text = cJSON_PrintUnformatted(req);
	if (text == NULL)
		die("out of memory");
	fd = client_connect(socket_path);
	if (dprintf(fd, "%s\n", text) < 0)
		die("cannot send the request: %s", strerror(errno));
	if (!follow)
		shutdown(fd, SHUT_WR);
	while (read_line(fd, &buf, &cap, &len, &line)) {
		cleanup_cjson cJSON *o = cJSON_Parse(line);
		const cJSON *v;

		if (o == NULL)
			die("agentfsd sent a line that is not JSON");
		if (first && !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "ok"))) {
			close(fd);
			return client_error(o, json ? line : NULL);
		}
		if (json) {
			printf("%s\n", cli_json(line));
		} else if (first) {
			v = cJSON_GetObjectItemCaseSensitive(o, "dropped");
			if (cJSON_GetNumberValue(v) > 0)
				printf("(%.0f older events were dropped: %.0f in all)\n",
				       cJSON_GetNumberValue(v),
				       cJSON_GetNumberValue(
					       cJSON_GetObjectItemCaseSensitive(o, "total")));
			cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(o, "events"))
				print_event(v);
		} else if ((v = cJSON_GetObjectItemCaseSensitive(o, "event")) != NULL) {
			print_event(v);
		}
		v = cJSON_GetObjectItemCaseSensitive(o, "event");
		if (v == NULL)
			v = cJSON_GetArrayItem(
				cJSON_GetObjectItemCaseSensitive(o, "events"),
				cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o, "events")) -
					1);
		if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(v, "type")))
			snprintf(last_type, sizeof last_type, "%s",
				 cJSON_GetObjectItemCaseSensitive(v, "type")->valuestring);
		fflush(stdout);
		first = false;
		if (!follow)
			break;
	}
	close(fd);
	if (first)
		client_lost(socket_path);
	if (follow)
		return follow_ended(socket_path, bot, own, last_type);
	return 0;
}

/* A string field of O for a person (cli_escape: a bot chose it), or "" */
static const char *shown(const cJSON *o, const char *k)
{
	return cli_escape(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k)));
}

static void print_changes(const cJSON *rep)
{
	const cJSON *v, *nk = cJSON_GetObjectItemCaseSensitive(rep, "not_kept");

	cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(rep, "changes")) {
		const char *type = shown(v, "type"), *path = shown(v, "path");
		bool dir = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "dir"));

		if (strcmp(type, "renamed") == 0)
			printf("renamed  %s%s -> %s%s%s\n", shown(v, "from"), dir ? "/" : "", path,
			       dir ? "/" : "",
			       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "modified"))
				       ? " (and modified)"
				       : "");
		else
			printf("%-8s %s%s\n", type, path, dir ? "/" : "");
	}
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "too_many")))
		printf("too many changes: %.0f more were counted but not kept\n",
		       cJSON_GetNumberValue(nk));
}

/*
 * The changes op, every page: the daemon answers about 256 KiB at a
 * time, with "more" and the path to ask after next. One reply, its pages'
 * changes together; a failed page is the answer.
 */
static cJSON *changes_pages(const char *socket_path, cJSON *req)
{
	static const char *const last[] = {"more", "next", "too_many", "not_kept", "mark"};
	cJSON *rep = client_request(socket_path, req), *page, *v;
	const char *next;
	size_t k;

	while (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "ok")) &&
	       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "more")) &&
	       (next = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rep, "next"))) !=
		       NULL) {
		cJSON_DeleteItemFromObjectCaseSensitive(req, "after");
		if (cJSON_AddStringToObject(req, "after", next) == NULL)
			die("out of memory");
		page = client_request(socket_path, req);
		if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(page, "ok"))) {
			cJSON_Delete(rep);
			return page;
		}
		/* the page's entries join the first reply's; its counts and cursor replace them */
		while ((v = cJSON_DetachItemFromArray(
				cJSON_GetObjectItemCaseSensitive(page, "changes"), 0)) != NULL)
			cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(rep, "changes"), v);
		for (k = 0; k < sizeof last / sizeof last[0]; k++) {
			cJSON_DeleteItemFromObjectCaseSensitive(rep, last[k]);
			if ((v = cJSON_DetachItemFromObjectCaseSensitive(page, last[k])) != NULL)
				cJSON_AddItemToObject(rep, last[k], v);
		}
		cJSON_Delete(page);
	}
	cJSON_DeleteItemFromObjectCaseSensitive(rep, "next");
	return rep;
}

static int cmd_changes(const char *socket_path, bool json, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"since", required_argument, NULL, 's'},
		{"mark", no_argument, NULL, 'm'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	cleanup_cjson cJSON *req = cJSON_CreateObject(), *rep = NULL;
	cleanup_free char *text = NULL;
	bool mark = false;
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			cJSON_AddNumberToObject(req, "since", (double)seq_arg("changes", optarg));
			break;
		case 'm':
			mark = true;
			break;
		case 'h':
			fputs(changes_usage, stdout);
			return 0;
		case ':':
			die_usage("changes", "option %s needs an argument", argv[optind - 1]);
		default:
			usage_error("changes", argv[optind - 1], optopt);
		}
	}
	if (argc - optind != 1)
		die_usage("changes", "changes takes one bot name");
	if (mark && cJSON_GetObjectItemCaseSensitive(req, "since") != NULL)
		die_usage("changes", "--mark and --since do not go together");
	cJSON_AddStringToObject(req, "op", mark ? "mark" : "changes");
	cJSON_AddStringToObject(req, "name", argv[optind]);
	rep = mark ? client_request(socket_path, req) : changes_pages(socket_path, req);
	if (json || !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "ok"))) {
		text = cJSON_PrintUnformatted(rep);
		if (text == NULL)
			die("out of memory");
		if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "ok")))
			return client_error(rep, json ? text : NULL);
		printf("%s\n", cli_json(text));
		return 0;
	}
	if (mark)
		printf("mark %.0f\n",
		       cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(rep, "mark")));
	else
		print_changes(rep);
	return 0;
}

/* log or changes */
int cmd_events(const char *socket_path, bool json, int argc, char **argv)
{
	if (strcmp(argv[0], "log") == 0)
		return cmd_log(socket_path, json, argc, argv);
	return cmd_changes(socket_path, json, argc, argv);
}

/* SPDX-License-Identifier: MIT */
/* agentfs audit PATH...: what in a tree would make a person's git run a bot's code. */
#include "src/common/agentfs.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "fusefs/fusefs.h"
#include "gitguard/gitguard.h"
#include "gitguard/ggutil.h"

static const char audit_usage[] =
	"usage: agentfs audit [--json] [--socket PATH] [--bot BOT]... [PATH...]\n"
	"\n"
	"Walk each PATH (never following a symlink) and list, one line each, what\n"
	"would make git run something or write where a bot wants: hooks and\n"
	"core.hooksPath files, exec lines of a rebase in progress, strategies git\n"
	"would run as programs, indexes gitguard refuses, and planted repository\n"
	"shapes. Run it before continuing a bot's work with git on the host.\n"
	"Exit status: 0 nothing found, 1 something found, 125 an error.\n"
	"\n"
	"  --json         one JSON array of {path, kind, why}\n"
	"  --bot BOT      also every writable root of the bot BOT, read on the host\n"
	"                 (asks agentfsd at --socket, AGENT_SOCKET or the default)\n"
	"  --socket PATH  agentfsd's socket, for --bot\n"
	"  -h, --help     show this help\n";

struct out {
	bool json;
	cJSON *arr;
};

static void print_finding(void *arg, const char *path, const char *kind, const char *why)
{
	struct out *o = arg;
	cJSON *f;

	if (!o->json) {
		/* names are the tree's, chosen by whoever wrote it: escaped */
		printf("%s: %s: %s\n", cli_escape(path), kind, cli_escape(why));
		return;
	}
	f = cJSON_CreateObject();
	if (f == NULL || cJSON_AddStringToObject(f, "path", path) == NULL ||
	    cJSON_AddStringToObject(f, "kind", kind) == NULL ||
	    cJSON_AddStringToObject(f, "why", why) == NULL || !cJSON_AddItemToArray(o->arr, f))
		die("out of memory");
}

/*
 * Audit the tree at path: returns findings, or -1 (reported). A bot's root
 * is opened following no symlink on the way: a folder above it may be in
 * another bot's root, and a link put in its place would send the audit to
 * another tree and call it clean.
 */
static long audit_one(struct out *o, const char *path, bool nofollow)
{
	struct guard_err err;
	long n;
	int fd;

	fd = nofollow ? gg_open_nofollow(AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, false)
		      : open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "agentfs audit: %s: %s\n", cli_escape(path), strerror(errno));
		return -1;
	}
	n = guard_audit(fd, path, print_finding, o, &err);
	close(fd);
	if (n < 0)
		fprintf(stderr, "agentfs audit: %s (part of the tree was not read)\n",
			cli_escape(err.msg));
	return n;
}

/* Every writable root of BOT, as agentfsd reports them: findings, or -1 */
static long audit_bot(struct out *o, const char *socket_path, const char *bot)
{
	cJSON *req = cJSON_CreateObject(), *rep, *mounts, *m, *path, *access;
	long found = 0, n;
	bool bad = false;

	if (req == NULL || cJSON_AddStringToObject(req, "op", "show") == NULL ||
	    cJSON_AddStringToObject(req, "name", bot) == NULL)
		die("out of memory");
	rep = client_request(socket_path, req);
	cJSON_Delete(req);
	mounts = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(rep, "bot"),
						  "mounts");
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "ok")) || !cJSON_IsArray(mounts)) {
		cJSON *e = cJSON_GetObjectItemCaseSensitive(rep, "error");
		cJSON *msg = cJSON_GetObjectItemCaseSensitive(e, "message");

		fprintf(stderr, "agentfs audit: bot %s: %s\n", cli_escape(bot),
			cli_escape(cJSON_IsString(msg) ? msg->valuestring : "agentfsd sent no roots"));
		cJSON_Delete(rep);
		return -1;
	}
	cJSON_ArrayForEach(m, mounts) {
		path = cJSON_GetObjectItemCaseSensitive(m, "path");
		access = cJSON_GetObjectItemCaseSensitive(m, "access");
		if (!cJSON_IsString(path) || !cJSON_IsString(access) ||
		    strcmp(access->valuestring, "rw") != 0)
			continue;
		n = audit_one(o, path->valuestring, true);
		if (n < 0)
			bad = true;
		else
			found += n;
	}
	cJSON_Delete(rep);
	return bad ? -1 : found;
}

int cmd_audit(int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"bot", required_argument, NULL, 'b'},
		{"socket", required_argument, NULL, 's'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *socket_path = NULL, **bots = NULL;
	struct out o = {0};
	long found = 0, n;
	int c, i, nbots = 0, rc = 0;
	char *text;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		if (c == 'j') {
			o.json = true;
		} else if (c == 'b') {
			bots = realloc(bots, (size_t)(nbots + 1) * sizeof *bots);
			if (bots == NULL)
				die("out of memory");
			bots[nbots++] = optarg;
		} else if (c == 's') {
			socket_path = optarg;
		} else if (c == 'h') {
			fputs(audit_usage, stdout);
			return 0;
		} else {
			usage_error("audit", argv[optind - 1], optopt);
		}
	}
	if (optind >= argc && nbots == 0)
		die_usage("audit", "audit needs a PATH or --bot BOT");
	if (nbots > 0 && socket_path == NULL)
		socket_path = getenv("AGENT_SOCKET");
	if (nbots > 0 && (socket_path == NULL || *socket_path == '\0'))
		socket_path = default_socket_path();
	if (o.json && (o.arr = cJSON_CreateArray()) == NULL)
		die("out of memory");
	for (i = 0; i < nbots + (argc - optind); i++) {
		n = i < nbots ? audit_bot(&o, socket_path, bots[i])
			      : audit_one(&o, argv[optind + i - nbots], false);
		if (n < 0)
			rc = EXIT_AGENTFS;
		else
			found += n;
	}
	free(bots);
	if (o.json) {
		text = cJSON_Print(o.arr);
		if (text == NULL)
			die("out of memory");
		puts(cli_json(text));
		free(text);
		cJSON_Delete(o.arr);
	}
	if (rc == 0 && found > 0)
		rc = 1;
	return rc;
}

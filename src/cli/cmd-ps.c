/* SPDX-License-Identifier: MIT */
/*
 * agentfs ps: every running sandbox (agentfs exec) of the bots the caller
 * may see, as `docker ps` lists containers: bot, pid, user, when it
 * started, what it uses and its command.
 */
#include "src/common/agentfs.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static const char ps_usage[] =
	"usage: agentfs ps [-q] [--json]\n"
	"\n"
	"List the running sandboxes (agentfs exec) of the bots you may see.\n"
	"\n"
	"  -q, --quiet   print the pids of their agentfs exec only\n"
	"  --json        print agentfsd's reply as it is\n"
	"  -h, --help    show this help\n";

static double num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* The command as one line, each argument escaped (cli_escape) and quoted where it has spaces. */
static void print_command(const cJSON *argv)
{
	const cJSON *v;

	cJSON_ArrayForEach(v, argv) {
		const char *s = cli_escape(cJSON_GetStringValue(v));

		printf(v == argv->child ? "%s%s%s" : " %s%s%s",
		       strpbrk(s, " \t") != NULL || *s == '\0' ? "'" : "", s,
		       strpbrk(s, " \t") != NULL || *s == '\0' ? "'" : "");
	}
	printf("\n");
}

static void print_usage_of(double bytes)
{
	if (bytes < 0)
		printf(" %-9s", "-");
	else if (bytes < 10 * 1024 * 1024)
		printf(" %-9s", "<10M");
	else
		printf(" %-9.0fM", bytes / (1024 * 1024) - 0.5);
}

int cmd_ps(const char *socket_path, bool json, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	cleanup_cjson cJSON *req = cJSON_CreateObject(), *rep = NULL;
	const cJSON *v;
	bool quiet = false;
	char when[32];
	time_t t;
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":qh", longopts, NULL)) != -1) {
		if (c == 'q') {
			quiet = true;
		} else if (c == 'h') {
			fputs(ps_usage, stdout);
			return 0;
		} else {
			usage_error("ps", argv[optind - 1], optopt);
		}
	}
	if (optind != argc)
		die_usage("ps", "ps takes no arguments");
	cJSON_AddStringToObject(req, "op", "ps");
	rep = client_request(socket_path, req);
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "ok")))
		return client_error(rep, NULL);
	if (json) {
		char *text = cJSON_PrintUnformatted(rep);

		if (text == NULL)
			die("out of memory");
		printf("%s\n", cli_json(text));
		free(text);
		return 0;
	}
	if (!quiet)
		printf("%-20s %-8s %-12s %-19s %-10s %-6s %s\n", "BOT", "PID", "USER", "STARTED",
		       "MEMORY", "PIDS", "COMMAND");
	cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(rep, "sandboxes")) {
		if (quiet) {
			printf("%.0f\n", num(v, "pid"));
			continue;
		}
		t = (time_t)num(v, "started");
		strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime(&t));
		printf("%-20s %-8.0f %-12s %-19s",
		       cli_escape(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "bot"))),
		       num(v, "pid"),
		       cli_escape(
			       cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "user"))),
		       when);
		print_usage_of(num(v, "memory"));
		if (num(v, "pids") < 0)
			printf(" %-6s ", "-");
		else
			printf(" %-6.0f ", num(v, "pids"));
		print_command(cJSON_GetObjectItemCaseSensitive(v, "command"));
	}
	return 0;
}

/* agentfs audit PATH...: what in a tree would make a person's git run a bot's code. */
#include "src/agentfs.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "gitguard/gitguard.h"

static const char audit_usage[] =
	"usage: agentfs audit [--json] PATH...\n"
	"\n"
	"Walk each PATH (never following a symlink) and list, one line each, what\n"
	"would make git run something or write where a bot wants: hooks and\n"
	"core.hooksPath files, exec lines of a rebase in progress, strategies git\n"
	"would run as programs, indexes gitguard refuses, and planted repository\n"
	"shapes. Run it before continuing a bot's work with git on the host.\n"
	"Exit status: 0 nothing found, 1 something found, 2 an error.\n"
	"\n"
	"  --json      one JSON array of {path, kind, why}\n"
	"  -h, --help  show this help\n";

struct out {
	bool json;
	cJSON *arr;
};

static void print_finding(void *arg, const char *path, const char *kind, const char *why)
{
	struct out *o = arg;
	cJSON *f;

	if (!o->json) {
		printf("%s: %s: %s\n", path, kind, why);
		return;
	}
	f = cJSON_CreateObject();
	if (f == NULL || cJSON_AddStringToObject(f, "path", path) == NULL ||
	    cJSON_AddStringToObject(f, "kind", kind) == NULL ||
	    cJSON_AddStringToObject(f, "why", why) == NULL || !cJSON_AddItemToArray(o->arr, f))
		die("out of memory");
}

int cmd_audit(int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct out o = {0};
	struct guard_err err;
	long found = 0, n;
	int c, fd, i, rc = 0;
	char *text;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		if (c == 'j') {
			o.json = true;
		} else if (c == 'h') {
			fputs(audit_usage, stdout);
			return 0;
		} else {
			usage_error("audit", argv[optind - 1], optopt);
		}
	}
	if (optind >= argc)
		die_usage("audit", "audit needs at least one PATH");
	if (o.json && (o.arr = cJSON_CreateArray()) == NULL)
		die("out of memory");
	for (i = optind; i < argc; i++) {
		fd = open(argv[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			fprintf(stderr, "agentfs audit: %s: %s\n", argv[i], strerror(errno));
			rc = 2;
			continue;
		}
		n = guard_audit(fd, argv[i], print_finding, &o, &err);
		close(fd);
		if (n < 0) {
			fprintf(stderr, "agentfs audit: %s (part of the tree was not read)\n",
				err.msg);
			rc = 2;
		} else {
			found += n;
		}
	}
	if (o.json) {
		text = cJSON_Print(o.arr);
		if (text == NULL)
			die("out of memory");
		puts(text);
		free(text);
		cJSON_Delete(o.arr);
	}
	if (rc == 0 && found > 0)
		rc = 1;
	return rc;
}

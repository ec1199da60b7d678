/* SPDX-License-Identifier: MIT */
/* agentfs: mount a folder through agentfs, or talk to agentfsd. */
#include "src/common/agentfs.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gitguard/ggutil.h"

static const char usage[] =
	"usage: agentfs [--socket PATH] [--json] COMMAND [ARGS...]\n"
	"       agentfs --version | --help\n"
	"\n"
	"Mounting one folder:\n"
	"  mount [-f] [--ro] [--ro-path SUB]... [--allow-new-repos] [-o OPTS] SOURCE MOUNTPOINT\n"
	"  umount [-z] MOUNTPOINT\n"
	"  audit [--json] PATH...   list what in a tree would make git run a bot's code\n"
	"\n"
	"Talking to agentfsd (socket: --socket, else $AGENT_SOCKET, else $AGENTFS_SOCKET,\n"
	"else /run/agentfs/agentfsd.sock):\n"
	"  create NAME FOLDER [OPTIONS]   make a bot\n"
	"  fork NAME NEWNAME [OPTIONS]    make a bot like NAME\n"
	"  configure NAME [OPTIONS]       change a bot\n"
	"  rm [--force] NAME...           delete bots and the bots they made\n"
	"  ls [-q]                        list bots (also: list)\n"
	"  show NAME...                   show bots: settings, mounts, sandboxes\n"
	"  status                         the daemon's status\n"
	"  shutdown                       stop the daemon\n"
	"  version                        the client's and the daemon's versions\n"
	"  log [BOT] [--follow]           why writes were refused, mounts, bots made\n"
	"  changes BOT [--since MARK | --mark]  what the bot changed\n"
	"  exec [OPTIONS] BOT [--] CMD...  run CMD confined to the bot's mounts (bubblewrap)\n"
	"  ps [-q]                        the running sandboxes (agentfs exec)\n"
	"\n"
	"  --json   print the daemon's raw JSON reply\n"
	"  (--json and --socket may also follow the command)\n"
	"\n"
	"agentfs COMMAND --help shows a command's options; see agentfs(1).\n";

/*
 * S made safe to print for a person (gg_escape: control characters, C1
 * controls, backslashes and bytes that are not UTF-8 as \n, \t, \\ or \xHH),
 * whole: a path, name, command or message a bot chose cannot forge a line or
 * drive the operator's terminal. Every string the CLI prints in text goes
 * through it; --json output stays exact. The result lives in one of eight
 * buffers used in turn, so one printf may take up to eight; the CLI has one
 * thread. NULL gives "".
 */
const char *cli_escape(const char *s)
{
	static char *ring[8];
	static unsigned next;
	size_t need;
	char **slot;

	if (s == NULL)
		return "";
	need = 4 * strlen(s) + 1; /* \xHH, the longest escape, for each byte */
	slot = &ring[next++ % 8];
	free(*slot);
	*slot = malloc(need);
	if (*slot == NULL) {
		fputs("agentfs: out of memory\n", stderr);
		exit(EXIT_AGENTFS);
	}
	gg_escape(s, *slot, need);
	return *slot;
}

static void vsay(const char *prefix, const char *suffix, const char *fmt, va_list ap)
{
	char *msg = NULL;

	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	fprintf(stderr, "%s%s%s\n", prefix, msg != NULL ? cli_escape(msg) : "out of memory",
		suffix);
	free(msg);
}

void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay("agentfs: ", "", fmt, ap);
	va_end(ap);
	exit(EXIT_AGENTFS);
}

void die_usage(const char *cmd, const char *fmt, ...)
{
	char prefix[64], suffix[64];
	va_list ap;

	snprintf(prefix, sizeof prefix, "agentfs %s: ", cmd);
	snprintf(suffix, sizeof suffix, " (see agentfs %s --help)", cmd);
	va_start(ap, fmt);
	vsay(prefix, suffix, fmt, ap);
	va_end(ap);
	exit(EXIT_AGENTFS);
}

void usage_error(const char *cmd, const char *arg, int opt)
{
	if (opt != 0)
		die_usage(cmd, "unknown option -%c", opt);
	die_usage(cmd, "unknown option %s", arg != NULL ? arg : "?");
}

static const struct {
	const char *name;
	int (*fn)(int, char **);
} commands[] = {
	{"mount", cmd_mount},
	{"umount", cmd_umount},
	{"audit", cmd_audit},
};

static const char *client_commands[] = {
	"create", "configure", "fork",	   "rm",      "ls",   "list",
	"show",	  "status",    "shutdown", "version", "exec", "log", "changes", "ps",
};

/* Options of the client commands that take a value: it is never a global option. */
static bool takes_value(const char *arg)
{
	static const char *const opts[] = {"--sandbox", "--writable", "--readable", "--ttl",
					   "--id",	"--cwd",      "-e",	    "--env",
					   "--env-file", "--memory",  "--pids"};
	size_t i;

	for (i = 0; i < sizeof opts / sizeof opts[0]; i++)
		if (strcmp(arg, opts[i]) == 0)
			return true;
	return false;
}

/*
 * Global options may follow the command too (agentfs ls --json): take them
 * out of its arguments, up to "--". For exec only those before the bot's
 * name: what follows is the command's.
 */
static int global_options(int argc, char **argv, bool exec, bool *json, const char **socket_path)
{
	int i, n = 1, pos = 0;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0 || (exec && pos > 0)) {
			while (i < argc)
				argv[n++] = argv[i++];
			break;
		}
		if (strcmp(argv[i], "--json") == 0) {
			*json = true;
		} else if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc) {
			*socket_path = argv[++i];
		} else if (strncmp(argv[i], "--socket=", 9) == 0) {
			*socket_path = argv[i] + 9;
		} else {
			if (argv[i][0] != '-')
				pos++;
			argv[n++] = argv[i];
			if (takes_value(argv[i]) && i + 1 < argc)
				argv[n++] = argv[++i];
		}
	}
	argv[n] = NULL;
	return n;
}

int main(int argc, char **argv)
{
	const char *socket_path = NULL;
	bool json = false;
	int a = 1;
	size_t i;

	while (a < argc && argv[a][0] == '-') {
		if (strcmp(argv[a], "--help") == 0 || strcmp(argv[a], "-h") == 0) {
			fputs(usage, stdout);
			return 0;
		} else if (strcmp(argv[a], "--version") == 0 || strcmp(argv[a], "-V") == 0) {
			printf("agentfs %s\n", PACKAGE_VERSION);
			return 0;
		} else if (strcmp(argv[a], "--json") == 0) {
			json = true;
			a++;
		} else if (strcmp(argv[a], "--socket") == 0 && a + 1 < argc) {
			socket_path = argv[a + 1];
			a += 2;
		} else if (strncmp(argv[a], "--socket=", 9) == 0) {
			socket_path = argv[a] + 9;
			a++;
		} else {
			fprintf(stderr, "agentfs: unknown option %s (see agentfs --help)\n",
				cli_escape(argv[a]));
			return EXIT_AGENTFS;
		}
	}
	if (a >= argc) {
		fputs(usage, stderr);
		return EXIT_AGENTFS;
	}
	if (strcmp(argv[a], "help") == 0) {
		fputs(usage, stdout);
		return 0;
	}
	for (i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (strcmp(argv[a], commands[i].name) == 0)
			return commands[i].fn(argc - a, argv + a);
	for (i = 0; i < sizeof client_commands / sizeof client_commands[0]; i++) {
		if (strcmp(argv[a], client_commands[i]) != 0)
			continue;
		argc = a + global_options(argc - a, argv + a, strcmp(argv[a], "exec") == 0, &json,
					  &socket_path);
		if (socket_path == NULL)
			socket_path = getenv("AGENT_SOCKET");
		if (socket_path == NULL || *socket_path == '\0')
			socket_path = default_socket_path();
		if (socket_path == NULL)
			die("out of memory");
		if (strcmp(argv[a], "exec") == 0)
			return cmd_exec(socket_path, argc - a, argv + a);
		if (strcmp(argv[a], "ps") == 0)
			return cmd_ps(socket_path, json, argc - a, argv + a);
		return cmd_client(socket_path, json, argc - a, argv + a);
	}
	fprintf(stderr, "agentfs: unknown command '%s' (see agentfs --help)\n",
		cli_escape(argv[a]));
	return EXIT_AGENTFS;
}

/* SPDX-License-Identifier: MIT */
/* agentfs: mount a folder through agentfs, or talk to agentfsd. */
#include "src/common/agentfs.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
 * mount, umount and audit run in agentfs-local (src/local/): they serve
 * the FUSE mount and read repositories, so they link libfuse3 and libgit2,
 * and through libgit2 a TLS stack, SSH, Kerberos and pcre2, about twenty
 * libraries. Loading them took most of this program's start, which every
 * `agentfs exec` and every call to agentfsd pays; here they are not linked.
 */
static const char *const local_commands[] = {"mount", "umount", "audit"};

/*
 * Run agentfs-local with ARGV0 and the command line from CMD on: the one
 * beside this program if there is one (a build tree, or both installed in
 * one folder), else the one installed with it (AGENTFS_LOCAL), found as
 * agentfsd finds agentfs-enter (prog_beside_self). The process stays this one, its argv[0]
 * what the caller typed.
 */
static int __attribute__((noreturn)) local_run(char *argv0, int argc, char **cmd)
{
	char self[PATH_MAX], **v;
	const char *path = prog_beside_self("agentfs-local", self) ? self : AGENTFS_LOCAL;

	v = calloc((size_t)argc + 2, sizeof *v);
	if (v == NULL)
		die("out of memory");
	v[0] = argv0;
	memcpy(v + 1, cmd, (size_t)argc * sizeof *v);
	execv(path, v);
	die("cannot run %s, which agentfs %s needs (make install puts it there): %s", path,
	    cmd[0], strerror(errno));
}

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
	for (i = 0; i < sizeof local_commands / sizeof local_commands[0]; i++)
		if (strcmp(argv[a], local_commands[i]) == 0)
			local_run(argv[0], argc - a, argv + a);
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

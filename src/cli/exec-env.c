/* SPDX-License-Identifier: MIT */
/*
 * agentfs exec: the environment: git's rerere off, the loader variables
 * kept from bwrap and agentfs-enter and given back to the command, and
 * whether a command is in PATH at all (for 127 against 126). Which bwrap runs is agentfsd's
 * decision (src/daemon/plan.c, prog_trusted).
 */
#include "src/common/agentfs.h"
#include "src/cli/exec.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

/*
 * The loader's and glibc's variables may name libraries, modules or files
 * inside a bot's roots (LD_PRELOAD, GCONV_PATH, LD_PROFILE's output...):
 * bwrap runs as root and agentfs-enter with CAP_SETUID, so both start without
 * them, and agentfs-enter gives them back to the command once it is the bot's
 * user.
 */
static const char *const loader_vars[] = {
	"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT",	   "LD_PROFILE",   "LD_DEBUG_OUTPUT",
	"GCONV_PATH", "LOCPATH",	 "GLIBC_TUNABLES", "MALLOC_TRACE",
};
#define SAVED_PREFIX "AGENTFS_SAVED_"

void exec_loader_vars_hold(struct argv_buf *a)
{
	char name[64];
	const char *v;
	size_t i;

	for (i = 0; i < sizeof loader_vars / sizeof loader_vars[0]; i++) {
		snprintf(name, sizeof name, SAVED_PREFIX "%s", loader_vars[i]);
		if ((v = getenv(loader_vars[i])) != NULL) {
			exec_arg(a, "--setenv");
			exec_arg(a, name);
			exec_arg(a, v);
		}
		exec_arg(a, "--unsetenv");
		exec_arg(a, loader_vars[i]);
	}
}

/*
 * git's rerere is off for the command: its rr-cache is read-only to a bot
 * and its MERGE_RR may only be empty (rule D10), so with rerere on in the
 * repository's configuration (the person's) a conflicted merge, cherry-pick
 * or rebase would stop with "unable to write rerere record". Given as git's
 * own GIT_CONFIG_COUNT variables, after any the caller set, which stay.
 */
void exec_git_env(struct argv_buf *a)
{
	const char *v = getenv("GIT_CONFIG_COUNT");
	char name[48], num[16];
	unsigned long n = 0;
	char *end;

	if (v != NULL && *v != '\0') {
		errno = 0;
		n = strtoul(v, &end, 10);
		if (*end != '\0' || errno != 0 || n > 10000)
			return; /* git refuses such a count itself: leave it to say so */
	}
	snprintf(name, sizeof name, "GIT_CONFIG_KEY_%lu", n);
	exec_arg(a, "--setenv");
	exec_arg(a, name);
	exec_arg(a, "rerere.enabled");
	snprintf(name, sizeof name, "GIT_CONFIG_VALUE_%lu", n);
	exec_arg(a, "--setenv");
	exec_arg(a, name);
	exec_arg(a, "false");
	snprintf(num, sizeof num, "%lu", n + 1);
	exec_arg(a, "--setenv");
	exec_arg(a, "GIT_CONFIG_COUNT");
	exec_arg(a, num);
}

void exec_loader_vars_restore(void)
{
	char name[64];
	const char *v;
	size_t i;

	for (i = 0; i < sizeof loader_vars / sizeof loader_vars[0]; i++) {
		snprintf(name, sizeof name, SAVED_PREFIX "%s", loader_vars[i]);
		if ((v = getenv(name)) != NULL && setenv(loader_vars[i], v, 1) != 0)
			die("out of memory");
		unsetenv(name);
	}
}

/* Is there a file named prog in a PATH folder? */
bool exec_in_path(const char *prog)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL, *full;
	struct stat st;
	bool found = false;

	copy = strdup(path != NULL && *path != '\0' ? path : "/usr/local/bin:/usr/bin:/bin");
	if (copy == NULL)
		die("out of memory");
	for (dir = strtok_r(copy, ":", &save); dir != NULL && !found;
	     dir = strtok_r(NULL, ":", &save)) {
		if (asprintf(&full, "%s/%s", dir, prog) < 0)
			die("out of memory");
		found = stat(full, &st) == 0 && !S_ISDIR(st.st_mode);
		free(full);
	}
	free(copy);
	return found;
}

/* For bwrap itself, which runs as root: none of the loader variables */
void exec_loader_vars_clear(void)
{
	size_t i;

	for (i = 0; i < sizeof loader_vars / sizeof loader_vars[0]; i++)
		unsetenv(loader_vars[i]);
}

/*
 * exec -e NAME=VALUE (or NAME: its value here, if set): set in our own
 * environment, so it reaches the command as the caller's own variables do
 * (a loader variable through exec_loader_vars_hold, never bwrap's or exec
 * --as's). Refused, with why: a name that is not one (letters, digits, _,
 * not starting with a digit); the sandbox's own variables (AGENT_SOCKET,
 * which exec sets, and AGENTFS_*, agentfs's own); and those exec removes for
 * every bot, which name the caller's agents and sessions (SSH_AUTH_SOCK...).
 */
void exec_env_set(const char *assignment)
{
	const char *eq = strchr(assignment, '='), *p;
	size_t n = eq != NULL ? (size_t)(eq - assignment) : strlen(assignment);
	char name[256];

	for (p = assignment; p < assignment + n; p++)
		if (!(*p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		      (p > assignment && *p >= '0' && *p <= '9')))
			break;
	if (n == 0 || n >= sizeof name || p != assignment + n)
		die_usage("exec",
			  "-e %s: not NAME=VALUE (a name is letters, digits and _, not "
			  "starting with a digit)",
			  assignment);
	memcpy(name, assignment, n);
	name[n] = '\0';
	if (strcmp(name, "AGENT_SOCKET") == 0 || strncmp(name, "AGENTFS_", 8) == 0)
		die_usage("exec", "-e %s: the sandbox sets %s itself", name, name);
	if (exec_socket_var(name))
		die_usage("exec",
			  "-e %s: exec keeps the caller's agents and sessions (%s) out of "
			  "every sandbox",
			  name, name);
	if (eq != NULL && setenv(name, eq + 1, 1) != 0)
		die("out of memory");
}

#define ENV_FILE_MAX (1024 * 1024)

/*
 * exec --env-file FILE: one NAME=VALUE (or NAME) a line, as -e takes it;
 * blank lines and lines starting with # are skipped; the value is the rest
 * of the line as it is (no quotes, no escapes, as docker reads it).
 */
void exec_env_file(const char *path)
{
	char *text = malloc(ENV_FILE_MAX + 2), *line, *next, *p;
	size_t n = 0;
	ssize_t r;
	int fd;

	if (text == NULL)
		die("out of memory");
	/* a pipe too (--env-file <(...)): read to the end */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("--env-file %s: %s", path, strerror(errno));
	while (n <= ENV_FILE_MAX && (r = read(fd, text + n, ENV_FILE_MAX + 1 - n)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die("--env-file %s: %s", path, strerror(errno));
		n += (size_t)r;
	}
	close(fd);
	if (n > ENV_FILE_MAX)
		die("--env-file %s: larger than %d bytes", path, ENV_FILE_MAX);
	text[n] = '\0';
	if (memchr(text, '\0', n) != NULL)
		die("--env-file %s: holds a NUL byte", path);
	for (line = text; line != NULL && *line != '\0'; line = next) {
		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		if ((p = strchr(line, '\r')) != NULL && p[1] == '\0')
			*p = '\0';
		while (*line == ' ' || *line == '\t')
			line++;
		if (*line == '\0' || *line == '#')
			continue;
		exec_env_set(line);
	}
	free(text);
}

/* SPDX-License-Identifier: MIT */
/*
 * agentfs exec: the environment: -e and --env-file (whose path follows
 * only root's or the caller's symbolic links), git's rerere off, the loader variables
 * kept from bwrap and agentfs-enter and given back to the command, and
 * whether a command is in PATH at all (for 127 against 126). Which bwrap runs is agentfsd's
 * decision (src/daemon/plan.c, prog_trusted).
 */
#include "src/common/agentfs.h"
#include "src/cli/exec.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>

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
 * Open path for reading as open(2) would, but follow a symbolic link on
 * the way only when it is root's or the caller's own (a caller that is not
 * root runs bots as itself: it reads nothing more for them). An env file
 * may lie in a bot's folder, which is the bot's to fill: a link it made
 * there, to a file of root's, would have root's exec read that file into
 * the command's environment. A link on procfs that ends the path
 * (/dev/fd/N, /dev/stdin: the kernel's own, to an open file) is opened as
 * the kernel follows it. -1 with errno; *bad is the link's owner for
 * EPERM (a link not followed).
 */
static int open_owned_links(const char *path, uid_t *bad)
{
	char work[2 * PATH_MAX], tmp[2 * PATH_MAX], link[PATH_MAX], *name, *rest;
	int dir, fd, links = 0;
	struct statfs sf;
	struct stat st;
	ssize_t n;
	bool last;

	if (snprintf(work, sizeof work, "%s", path) >= (int)sizeof work) {
		errno = ENAMETOOLONG;
		return -1;
	}
	dir = open(work[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	for (rest = work; dir >= 0;) {
		while (*rest == '/')
			rest++;
		if (*rest == '\0') /* the path names a folder: reading it fails as it should */
			break;
		name = rest;
		rest += strcspn(rest, "/");
		if (*rest != '\0')
			*rest++ = '\0';
		while (*rest == '/')
			rest++;
		last = *rest == '\0';
		fd = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) != 0)
			break;
		if (!S_ISLNK(st.st_mode)) {
			close(fd);
			if (last) {
				fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
				close(dir);
				return fd;
			}
			fd = openat(dir, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			close(dir);
			dir = fd;
			continue;
		}
		if (st.st_uid != 0 && st.st_uid != geteuid()) {
			close(fd);
			close(dir);
			*bad = st.st_uid;
			errno = EPERM;
			return -1;
		}
		if (last && fstatfs(fd, &sf) == 0 && sf.f_type == PROC_SUPER_MAGIC) {
			close(fd);
			fd = openat(dir, name, O_RDONLY | O_CLOEXEC);
			close(dir);
			return fd;
		}
		n = readlinkat(fd, "", link, sizeof link - 1);
		close(fd);
		if (n <= 0 || ++links > 40) {
			errno = n <= 0 ? EINVAL : ELOOP;
			break;
		}
		link[n] = '\0';
		if (snprintf(tmp, sizeof tmp, "%s/%s", link, rest) >= (int)sizeof tmp) {
			errno = ENAMETOOLONG;
			break;
		}
		memcpy(work, tmp, strlen(tmp) + 1);
		rest = work;
		if (link[0] == '/') {
			close(dir);
			dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		}
	}
	if (dir >= 0) {
		int e = errno;

		close(dir);
		errno = e;
	}
	return -1;
}

/*
 * exec --env-file FILE: one NAME=VALUE (or NAME) a line, as -e takes it;
 * blank lines and lines starting with # are skipped; the value is the rest
 * of the line as it is (no quotes, no escapes, as docker reads it).
 */
void exec_env_file(const char *path)
{
	char *text = malloc(ENV_FILE_MAX + 2), *line, *next, *p;
	size_t n = 0;
	uid_t owner = 0;
	ssize_t r;
	int fd;

	if (text == NULL)
		die("out of memory");
	/* a pipe too (--env-file <(...)): read to the end */
	fd = open_owned_links(path, &owner);
	if (fd < 0 && errno == EPERM)
		die("--env-file %s: a symbolic link of uid %u on the way, not root's nor yours, is "
		    "not followed (in a bot's folder it is the bot's, and would have exec read "
		    "what it names); give the file's own path",
		    path, (unsigned)owner);
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

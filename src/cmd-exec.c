/*
 * agentfs exec: run a command as a bot, confined with bubblewrap over the
 * bot's mounts. The host is visible read-only; each root is bound from its
 * agentfs mount at its own path; /tmp, /dev and /proc are private; the
 * bot's socket replaces the daemon's. It never falls back to running
 * unconfined: only a danger-full-access bot runs without bwrap.
 */
#include "src/agentfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/wait.h>

static const char exec_usage[] =
	"usage: agentfs exec BOT [--cwd DIR] [--] CMD [ARGS...]\n"
	"\n"
	"Run CMD as the bot BOT, confined with bubblewrap over the bot's mounts.\n"
	"\n"
	"  --cwd DIR    start in DIR (default: the current folder if it is inside one\n"
	"               of the bot's roots, else the bot's folder)\n"
	"  -h, --help   show this help\n";

struct argv_buf {
	char **v;
	size_t n, cap;
};

static void arg(struct argv_buf *a, const char *s)
{
	if (a->n + 2 > a->cap) {
		a->cap = a->cap * 2 + 32;
		a->v = realloc(a->v, a->cap * sizeof *a->v);
		if (a->v == NULL)
			die("out of memory");
	}
	a->v[a->n] = strdup(s);
	if (a->v[a->n] == NULL)
		die("out of memory");
	a->v[++a->n] = NULL;
}

static const char *jstr(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int by_depth(const void *a, const void *b)
{
	const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;

	return (int)strlen(jstr(x, "path")) - (int)strlen(jstr(y, "path"));
}

static char *find_in_path(const char *prog)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL, *full;

	if (path == NULL || *path == '\0')
		path = "/usr/local/bin:/usr/bin:/bin";
	copy = strdup(path);
	if (copy == NULL)
		die("out of memory");
	for (dir = strtok_r(copy, ":", &save); dir != NULL; dir = strtok_r(NULL, ":", &save)) {
		if (asprintf(&full, "%s/%s", dir, prog) < 0)
			die("out of memory");
		if (access(full, X_OK) == 0) {
			free(copy);
			return full;
		}
		free(full);
	}
	free(copy);
	return NULL;
}

/* The bwrap command line for a plan: order matters, parents before nested roots. */
static void build_bwrap(struct argv_buf *a, const char *bwrap, const cJSON *plan, const char *cwd,
			bool new_session, int status_fd, char **cmd)
{
	const cJSON *binds = cJSON_GetObjectItemCaseSensitive(plan, "binds"), *v;
	const char *sock = jstr(plan, "socket"), *ctl = jstr(plan, "control_socket");
	const cJSON **sorted;
	char num[16];
	size_t n = 0, i;

	arg(a, bwrap);
	arg(a, "--ro-bind");
	arg(a, "/");
	arg(a, "/");
	arg(a, "--dev");
	arg(a, "/dev");
	arg(a, "--tmpfs");
	arg(a, "/dev/shm");
	arg(a, "--proc");
	arg(a, "/proc");
	arg(a, "--tmpfs");
	arg(a, "/tmp");
	/* The daemon's state (every bot's mounts) and every bot's socket stay out of sight. */
	cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(plan, "hide"))
	{
		if (cJSON_IsString(v) && access(v->valuestring, F_OK) == 0) {
			arg(a, "--tmpfs");
			arg(a, v->valuestring);
		}
	}
	sorted = calloc((size_t)cJSON_GetArraySize(binds) + 1, sizeof *sorted);
	if (sorted == NULL)
		die("out of memory");
	cJSON_ArrayForEach(v, binds)
	{
		if (jstr(v, "path") == NULL || jstr(v, "source") == NULL)
			die("agentfsd sent a bad exec plan");
		sorted[n++] = v;
	}
	qsort(sorted, n, sizeof *sorted, by_depth);
	for (i = 0; i < n; i++) {
		arg(a, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sorted[i], "writable"))
			       ? "--bind"
			       : "--ro-bind");
		arg(a, jstr(sorted[i], "source"));
		arg(a, jstr(sorted[i], "path"));
	}
	free(sorted);
	if (sock != NULL && *sock != '\0') {
		arg(a, "--ro-bind");
		arg(a, sock);
		arg(a, sock);
		if (ctl != NULL && access(ctl, F_OK) == 0) {
			arg(a, "--ro-bind");
			arg(a, sock);
			arg(a, ctl);
		}
		arg(a, "--setenv");
		arg(a, "AGENT_SOCKET");
		arg(a, sock);
	}
	arg(a, "--unshare-ipc");
	arg(a, "--unshare-pid");
	arg(a, "--unshare-uts");
	arg(a, "--unshare-cgroup-try");
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(plan, "network")))
		arg(a, "--unshare-net");
	arg(a, "--die-with-parent");
	if (new_session)
		arg(a, "--new-session");
	arg(a, "--chdir");
	arg(a, cwd);
	snprintf(num, sizeof num, "%d", status_fd);
	arg(a, "--json-status-fd");
	arg(a, num);
	arg(a, "--");
	for (; *cmd != NULL; cmd++)
		arg(a, *cmd);
}

static bool cwd_in_roots(const cJSON *plan, const char *cwd)
{
	const cJSON *v;

	cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(plan, "binds"))
		if (jstr(v, "path") != NULL && path_within(cwd, jstr(v, "path")))
			return true;
	return false;
}

static volatile sig_atomic_t child_pid;
static volatile sig_atomic_t winch;

static void forward(int sig)
{
	if (child_pid > 0)
		kill(child_pid, sig);
}

static void on_winch(int sig)
{
	winch = 1;
}

/* Copy between our terminal and the pty until the child's side closes. */
static void relay(int master)
{
	struct pollfd pf[2] = {{STDIN_FILENO, POLLIN, 0}, {master, POLLIN, 0}};
	struct winsize ws;
	char buf[8192];
	ssize_t n;

	for (;;) {
		if (winch) {
			winch = 0;
			if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0)
				ioctl(master, TIOCSWINSZ, &ws);
		}
		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pf[1].revents & (POLLIN | POLLHUP | POLLERR)) {
			n = read(master, buf, sizeof buf);
			if (n <= 0)
				break;
			if (write(STDOUT_FILENO, buf, (size_t)n) < 0)
				break;
		}
		if (pf[0].revents & POLLIN) {
			n = read(STDIN_FILENO, buf, sizeof buf);
			if (n <= 0)
				pf[0].fd = -1; /* our input ended; the command's may go on */
			else if (write(master, buf, (size_t)n) < 0)
				break;
		} else if (pf[0].revents & (POLLHUP | POLLERR)) {
			pf[0].fd = -1;
		}
	}
}

/* Did bwrap get as far as starting the command? It says so on the status fd. */
static bool started(int fd)
{
	char buf[4096];
	size_t n = 0;
	ssize_t r;

	while (n < sizeof buf - 1 && (r = read(fd, buf + n, sizeof buf - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = '\0';
	return strstr(buf, "child-pid") != NULL;
}

static int run_bwrap(struct argv_buf *a, int status_pipe[2], bool tty)
{
	struct termios saved, raw;
	struct sigaction sa = {0};
	int master = -1, slave = -1, status, code;
	pid_t pid;

	if (tty) {
		struct winsize ws;

		if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) != 0)
			memset(&ws, 0, sizeof ws);
		if (openpty(&master, &slave, NULL, NULL, &ws) != 0)
			die("cannot make a pty: %s", strerror(errno));
	}
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		close(status_pipe[0]);
		if (tty) {
			/* A new session whose terminal is our pty: job control works,
			 * and TIOCSTI can only reach the pty, never the user's terminal. */
			close(master);
			setsid();
			ioctl(slave, TIOCSCTTY, 0);
			dup2(slave, STDIN_FILENO);
			dup2(slave, STDOUT_FILENO);
			dup2(slave, STDERR_FILENO);
			if (slave > 2)
				close(slave);
		}
		execv(a->v[0], a->v);
		fprintf(stderr, "agentfs: cannot run %s: %s\n", a->v[0], strerror(errno));
		_exit(127);
	}
	child_pid = pid;
	close(status_pipe[1]);
	sa.sa_handler = forward;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (!tty) {
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGQUIT, &sa, NULL);
	}
	if (tty) {
		close(slave);
		sa.sa_handler = on_winch;
		sigaction(SIGWINCH, &sa, NULL);
		if (tcgetattr(STDIN_FILENO, &saved) == 0) {
			raw = saved;
			cfmakeraw(&raw);
			tcsetattr(STDIN_FILENO, TCSANOW, &raw);
		}
		relay(master);
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
		close(master);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!started(status_pipe[0])) {
		fprintf(stderr, "agentfs: bwrap could not set up the sandbox (its message is above); "
				"it needs mount, pid, ipc and network namespaces. Nothing was run.\n");
		return 126;
	}
	if (WIFSIGNALED(status))
		code = 128 + WTERMSIG(status);
	else
		code = WEXITSTATUS(status);
	/* bwrap reports a command killed by signal N as 128+N: die the same way. */
	if (code > 128 && code < 128 + NSIG) {
		signal(code - 128, SIG_DFL);
		kill(getpid(), code - 128);
	}
	return code;
}

int cmd_exec(const char *socket_path, int argc, char **argv)
{
	cleanup_cjson cJSON *req = cJSON_CreateObject(), *rep = NULL;
	struct argv_buf a = {0};
	const char *cwd_opt = NULL, *sandbox, *sock, *folder, *bot = NULL;
	char cwd[PATH_MAX], *bwrap, *norm = NULL;
	const cJSON *err;
	int i, status_pipe[2];

	/*
	 * Options may come before or after BOT, but never after the command
	 * starts: `agentfs exec bot ls -la` runs ls -la.
	 */
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			fputs(exec_usage, stdout);
			return 0;
		} else if (strcmp(argv[i], "--cwd") == 0) {
			if (++i >= argc)
				die_usage("exec", "option --cwd needs an argument");
			cwd_opt = argv[i];
		} else if (strncmp(argv[i], "--cwd=", 6) == 0) {
			cwd_opt = argv[i] + 6;
		} else if (argv[i][0] == '-' && bot == NULL) {
			die_usage("exec", "unknown option %s", argv[i]);
		} else if (bot == NULL) {
			bot = argv[i];
		} else {
			break;
		}
	}
	if (bot == NULL)
		die_usage("exec", "exec needs a bot name and a command");
	if (i >= argc)
		die_usage("exec", "exec needs a command to run");
	optind = i;
	cJSON_AddStringToObject(req, "op", "exec_plan");
	cJSON_AddStringToObject(req, "name", bot);
	rep = client_request(socket_path, req);
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "ok"))) {
		err = cJSON_GetObjectItemCaseSensitive(rep, "error");
		die("%s: %s", jstr(err, "code") ? jstr(err, "code") : "error",
		    jstr(err, "message") ? jstr(err, "message") : "");
	}
	sandbox = jstr(rep, "sandbox");
	sock = jstr(rep, "socket");
	folder = jstr(rep, "folder");
	if (sandbox == NULL || folder == NULL)
		die("agentfsd sent a bad exec plan");

	if (cwd_opt != NULL) {
		if (cwd_opt[0] != '/') {
			if (getcwd(cwd, sizeof cwd) == NULL)
				die("getcwd: %s", strerror(errno));
			strncat(cwd, "/", sizeof cwd - strlen(cwd) - 1);
			strncat(cwd, cwd_opt, sizeof cwd - strlen(cwd) - 1);
		} else {
			snprintf(cwd, sizeof cwd, "%s", cwd_opt);
		}
	} else if (getcwd(cwd, sizeof cwd) == NULL || !cwd_in_roots(rep, cwd)) {
		snprintf(cwd, sizeof cwd, "%s", folder);
	}
	if (path_normalise(cwd, &norm) != 0)
		die("bad folder %s", cwd);

	if (strcmp(sandbox, "danger-full-access") == 0) {
		if (sock != NULL && *sock != '\0')
			setenv("AGENT_SOCKET", sock, 1);
		if (chdir(norm) != 0)
			die("cannot enter %s: %s", norm, strerror(errno));
		execvp(argv[optind], argv + optind);
		die("cannot run %s: %s", argv[optind], strerror(errno));
	}
	bwrap = find_in_path("bwrap");
	if (bwrap == NULL)
		die("bwrap (bubblewrap) not found in PATH: install it (apt-get install bubblewrap); "
		    "agentfs never runs a bot unconfined");
	if (pipe2(status_pipe, 0) != 0)
		die("pipe: %s", strerror(errno));
	fcntl(status_pipe[0], F_SETFD, FD_CLOEXEC);
	build_bwrap(&a, bwrap, rep, norm, !isatty(STDIN_FILENO), status_pipe[1], argv + optind);
	free(bwrap);
	free(norm);
	return run_bwrap(&a, status_pipe, isatty(STDIN_FILENO));
}

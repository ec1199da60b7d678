/* SPDX-License-Identifier: MIT */
/*
 * The client's transport: connect to agentfsd, one request line, one reply
 * line back; and, when that fails, what became of the daemon, in words a
 * person can act on (not running, stopped, restarted, or a sandbox's socket
 * left from a daemon that is gone).
 */
#include "src/common/agentfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <poll.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

/*
 * The socket the last connection reached, by device and inode, and the
 * daemon that listened there (SO_PEERCRED): a daemon that starts afresh
 * makes a new socket at the same path, and one that takes over from the
 * last (agentfsd(8), RESTART AND UPGRADE) keeps the socket but is another
 * process, so a client can tell "it restarted" from "it stopped" when the
 * connection ends.
 */
static struct {
	dev_t dev;
	ino_t ino;
	bool set;
	pid_t pid; /* 0: not known (another pid namespace) */
} reached;

/* Whether pid runs (a process killed but not reaped yet, a zombie, does not) */
static bool alive(pid_t pid)
{
	pid_t ppid;
	char st;

	return proc_stat(pid, &st, &ppid, NULL) == 0 && st != 'Z' && st != 'X';
}

/* The process listening at fd's peer, as this pid namespace sees it; 0: not known */
static pid_t peer_pid(int fd)
{
	struct ucred cr;
	socklen_t len = sizeof cr;

	return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 ? cr.pid : 0;
}

/*
 * Inside `agentfs exec`, where agentfs itself is bound at EXEC_SELF and the
 * bot's socket is the one the sandbox started with: a daemon that stopped or
 * restarted since leaves that socket dead for good.
 */
static bool in_sandbox(const char *path)
{
	const char *as = getenv("AGENT_SOCKET");

	return as != NULL && strcmp(as, path) == 0 && access(EXEC_SELF, F_OK) == 0;
}

static bool is_bot_socket(const char *path)
{
	const char *as = getenv("AGENT_SOCKET");

	return as != NULL && strcmp(as, path) == 0;
}

/*
 * connect() with a full listen backlog fails with EAGAIN (at once for a
 * non-blocking socket, or when the wait is cut short): the daemon's loop is
 * busy with a burst of clients, so try again for about 2 s, backing off.
 */
static int connect_retry(int fd, const struct sockaddr_un *sa)
{
	struct timespec ts = {0, 1000 * 1000};
	long waited_ms = 0;

	for (;;) {
		if (connect(fd, (const struct sockaddr *)sa, sizeof *sa) == 0)
			return 0;
		if ((errno != EAGAIN && errno != EINTR) || waited_ms >= 2000)
			return -1;
		nanosleep(&ts, NULL);
		waited_ms += ts.tv_nsec / 1000000;
		if (ts.tv_nsec < 256 * 1000 * 1000)
			ts.tv_nsec *= 2;
	}
}

/* A connected socket to path, or -1 with errno; dies only when it cannot try. */
static int connect_once(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, e;

	if (strlen(path) >= sizeof sa.sun_path)
		die("socket path too long: %s", path);
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket: %s", strerror(errno));
	if (connect_retry(fd, &sa) != 0) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

static void connect_failed(const char *path, int e) __attribute__((noreturn));

/* Why path cannot be reached, and what to do: dies. */
static void connect_failed(const char *path, int e)
{
	if (in_sandbox(path) && (e == ECONNREFUSED || e == ENOENT || e == EACCES || e == EPERM))
		die("cannot reach agentfsd at %s, this sandbox's socket (%s): agentfsd stopped or "
		    "restarted, or the bot was deleted, since the sandbox began. A sandbox keeps "
		    "the socket it started with: after a restart, run agentfs exec again",
		    path, strerror(e));
	if (e == ENOENT)
		die("cannot connect to agentfsd at %s: no such socket: agentfsd is not running%s "
		    "(start it: systemctl start agentfsd, or agentfsd)",
		    path, is_bot_socket(path) ? ", or the bot was deleted" : "");
	if (e == ECONNREFUSED)
		die("cannot connect to agentfsd at %s: nothing listens there: the agentfsd that "
		    "made it stopped (start it again: systemctl start agentfsd, or agentfsd)",
		    path);
	if ((e == EACCES || e == EPERM) && is_bot_socket(path))
		die("cannot connect to agentfsd at %s: permission denied: a bot's socket is for "
		    "root and the bot's user only",
		    path);
	if (e == EACCES || e == EPERM)
		die("cannot connect to agentfsd at %s: permission denied: the control "
		    "socket is " CONTROL_SOCKET_DENIED
		    ", and members of agentfsd's group, agentfs by default (a bot uses "
		    "its own, $AGENT_SOCKET)",
		    path);
	die("cannot connect to agentfsd at %s: %s", path, strerror(e));
}

int client_connect(const char *path)
{
	struct stat st;
	int fd = connect_once(path);

	if (fd < 0)
		connect_failed(path, errno);
	reached.set = stat(path, &st) == 0;
	if (reached.set) {
		reached.dev = st.st_dev;
		reached.ino = st.st_ino;
	}
	reached.pid = peer_pid(fd);
	return fd;
}

/*
 * What became of the daemon the last connection reached, now that it
 * ended: "stopped" (its socket is gone, or nothing listens on it),
 * "restarted" (another daemon's socket is at the path), or NULL (it still
 * answers there: it ended this connection itself).
 */
const char *client_daemon_fate(const char *path)
{
	struct stat st;
	bool answers;
	char c = 0;
	pid_t pid;
	int fd;

	if (stat(path, &st) != 0)
		return "stopped";
	if (reached.set && (st.st_dev != reached.dev || st.st_ino != reached.ino))
		return "restarted";
	/*
	 * A daemon killed a moment ago may still hold its listening socket:
	 * a connect succeeds, but no one answers. Only an answer counts.
	 */
	fd = connect_once(path);
	if (fd < 0)
		return "stopped";
	pid = peer_pid(fd);
	/*
	 * The daemon it reached is gone but its socket was kept for the next
	 * one: another listens there now (restarted), or none yet (its last
	 * listener is still the dead one: stopped, and a request made now waits
	 * for the next agentfsd).
	 */
	if (reached.pid > 0 && !alive(reached.pid)) {
		close(fd);
		return pid > 0 && pid != reached.pid ? "restarted" : "stopped";
	}
	answers = send(fd, "{\"op\":\"status\"}\n", 16, MSG_NOSIGNAL) == 16 &&
		  poll(&(struct pollfd){.fd = fd, .events = POLLIN}, 1, 3000) == 1 &&
		  read(fd, &c, 1) == 1 && c == '{';
	close(fd);
	return answers ? NULL : "stopped";
}

/* The connection to path ended with no reply to a request: say why, and die. */
void client_lost(const char *path)
{
	const char *fate = client_daemon_fate(path);

	if (fate != NULL && in_sandbox(path))
		die("agentfsd stopped or restarted before it answered; a sandbox keeps the socket "
		    "it started with: after a restart, run agentfs exec again");
	if (fate != NULL)
		die("agentfsd %s before it answered (at %s); the request may or may not have been "
		    "done: look before asking again",
		    fate, path);
	die("agentfsd closed the connection without a reply");
}

/*
 * A reply that is not ok: its code and message on stderr, escaped, or with
 * --json the reply as it came (RAW, one line) on stdout. Answers the status
 * agentfs exits with when it refuses or fails, EXIT_AGENTFS.
 */
int client_error(const cJSON *rep, const char *raw)
{
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(rep, "error");
	const char *code = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(err, "code"));
	const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(err, "message"));

	if (raw != NULL)
		printf("%s\n", cli_json(raw));
	else
		fprintf(stderr, "agentfs: %s: %s\n", code != NULL ? cli_escape(code) : "error",
			msg != NULL ? cli_escape(msg) : "agentfsd gave no reason");
	return EXIT_AGENTFS;
}

/*
 * The same, then exit: REP is freed first, so a refusal leaves nothing
 * allocated behind it (LeakSanitizer builds count an exit with memory
 * still held as a failure, and the refusal's own status would be lost).
 */
void client_fail(cJSON *rep)
{
	int rc = client_error(rep, NULL);

	cJSON_Delete(rep);
	exit(rc);
}

/*
 * A progress line sent before a reply (the request asked, "progress": true):
 * shown on a terminal's one line, overwritten by the next.
 */
static void show_progress(const char *line, bool *shown)
{
	cleanup_cjson cJSON *o = cJSON_Parse(line);
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "progress");

	if (!cJSON_IsObject(p) || !isatty(STDERR_FILENO))
		return;
	fprintf(stderr, "\ragentfs: scanning %s: %.0f entries, %.0f repositories\033[K",
		cli_escape(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "root"))),
		cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(p, "entries")),
		cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(p, "repos")));
	*shown = true;
}

/*
 * A reply slower than SLOW_NOTE_MS gets a line on stderr saying what the
 * daemon is doing, as far as /proc tells: a daemon that is stopped (SIGSTOP,
 * a debugger) or stuck would otherwise leave its client waiting with no
 * word. AGENTFS_TIMEOUT=SECONDS makes the client give up after that long.
 * The clock restarts with every byte (a scan's progress lines).
 */
#define SLOW_NOTE_MS 15000
#define TIMEOUT_MAX_S 86400

static int64_t reply_timeout_ms(void)
{
	const char *s = getenv("AGENTFS_TIMEOUT");
	char *end;
	long v;

	if (s == NULL || *s == '\0')
		return 0;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end != '\0' || v < 0 || v > TIMEOUT_MAX_S)
		die("AGENTFS_TIMEOUT is %s: it must be a number of seconds from 1 to %d (0 or unset: "
		    "wait as long as agentfsd takes)",
		    cli_escape(s), TIMEOUT_MAX_S);
	return (int64_t)v * 1000;
}

/* "agentfsd (pid N)", or with the socket's path when the pid is not known; in BUF */
static const char *daemon_name(const char *path, char *buf, size_t size)
{
	if (reached.pid > 0)
		snprintf(buf, size, "agentfsd (pid %d)", (int)reached.pid);
	else
		snprintf(buf, size, "agentfsd at %s", cli_escape(path));
	return buf;
}

/* What the daemon that has not answered is doing, as /proc tells */
static const char *daemon_doing(void)
{
	pid_t ppid;
	char st;

	if (reached.pid <= 0 || proc_stat(reached.pid, &st, &ppid, NULL) != 0)
		return "it may be stopped, busy or stuck (its pid is not known here)";
	if (st == 'T' || st == 't')
		return "it is stopped (SIGSTOP, or a debugger holds it): kill -CONT it";
	if (st == 'D')
		return "it waits in the kernel (a file system or disk that does not answer?)";
	return "it runs, busy or stuck: its log may say why";
}

/* Waits until FD has something to read; says so when it takes long, dies at AGENTFS_TIMEOUT. */
static void wait_reply(int fd, const char *path, int64_t timeout, int64_t *since, bool *noted)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int64_t now, left;
	char name[PATH_MAX + 32];
	int r;

	for (;;) {
		now = mono_ms();
		if (!*noted && now - *since >= SLOW_NOTE_MS) {
			fprintf(stderr,
				"agentfs: %s has not answered in %d s: %s; still waiting (Ctrl-C gives "
				"up, as AGENTFS_TIMEOUT=SECONDS does by itself)\n",
				daemon_name(path, name, sizeof name), SLOW_NOTE_MS / 1000,
				daemon_doing());
			*noted = true;
		}
		if (timeout > 0 && now - *since >= timeout)
			die("%s did not answer in %lld s (AGENTFS_TIMEOUT): %s. The request may or "
			    "may not have been done: look before asking again",
			    daemon_name(path, name, sizeof name), (long long)(timeout / 1000),
			    daemon_doing());
		left = *noted ? INT32_MAX : SLOW_NOTE_MS - (now - *since);
		if (timeout > 0 && timeout - (now - *since) < left)
			left = timeout - (now - *since);
		r = poll(&p, 1, (int)left);
		if (r > 0 || (r < 0 && errno != EINTR))
			return;
	}
}

/* Send one request line and read one reply line; NULL if the connection was lost. */
char *client_exchange(const char *path, const char *text)
{
	size_t len = strlen(text), off = 0, cap = 4096, n = 0;
	char *buf, *nl;
	ssize_t r;
	int fd = client_connect(path);
	int64_t timeout = reply_timeout_ms(), since;
	bool shown = false, noted = false;

	/* A send that fails still reads: a refusing daemon says why, then closes. */
	while (off < len) {
		r = send(fd, text + off, len - off, MSG_NOSIGNAL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		off += (size_t)r;
	}
	buf = malloc(cap);
	if (buf == NULL)
		die("out of memory");
	since = mono_ms();
	for (;;) {
		if (n + 1 >= cap) {
			char *nb = realloc(buf, cap *= 2);

			if (nb == NULL)
				die("out of memory");
			buf = nb;
		}
		wait_reply(fd, path, timeout, &since, &noted);
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		since = mono_ms();
		n += (size_t)r;
		buf[n] = '\0';
		while ((nl = memchr(buf, '\n', n)) != NULL &&
		       strncmp(buf, "{\"progress\":", 12) == 0) {
			*nl = '\0';
			show_progress(buf, &shown);
			n -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, n + 1);
		}
		if (nl != NULL) {
			*nl = '\0';
			close(fd);
			if (shown)
				fputc('\n', stderr);
			return buf;
		}
	}
	close(fd);
	free(buf);
	if (shown)
		fputc('\n', stderr);
	return NULL;
}

/* One request, one parsed reply; dies with a message when the daemon cannot be reached. */
cJSON *client_request(const char *socket_path, cJSON *req)
{
	cleanup_free char *text = cJSON_PrintUnformatted(req), *line = NULL, *reply = NULL;
	cJSON *rep;

	if (text == NULL || asprintf(&line, "%s\n", text) < 0)
		die("out of memory");
	reply = client_exchange(socket_path, line);
	if (reply == NULL)
		client_lost(socket_path);
	rep = cJSON_Parse(reply);
	if (rep == NULL)
		die("agentfsd sent a reply that is not JSON");
	return rep;
}

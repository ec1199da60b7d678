/* SPDX-License-Identifier: MIT */
/*
 * The daemon's log, one line a message, never nowhere: to the journal
 * (its native socket, so it works whether or not systemd started us), to
 * syslog (/dev/log), to a file, or to standard error. Without a target
 * named (--log-target, the configuration's log_target), the foreground
 * logs to standard error, a daemon under systemd to the journal, one with
 * a syslog to it, and one with neither to STATE/agentfsd.log. A target
 * named but absent is an error at start, never a silent loss.
 *
 * Messages name paths and names bots chose: they are escaped (gg_escape)
 * before any target sees them, so none can forge a line in a file or on a
 * terminal. Any thread may log: the file's rotation is under lg.lock,
 * every other target is one call per line.
 */
#include "src/common/agentfs.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "gitguard/ggutil.h"

#define JOURNAL_SOCKET "/run/systemd/journal/socket"
#define SYSLOG_SOCKET "/dev/log"
/* A log file past this is moved to NAME.1 (the one before is dropped): bots cause lines. */
#define LOG_FILE_MAX (8 * 1024 * 1024)

enum log_kind { LOG_TO_STDERR, LOG_TO_SYSLOG, LOG_TO_JOURNAL, LOG_TO_FILE };

static struct {
	enum log_kind kind; /* set by log_open, before any thread */
	int fd;		    /* the journal's socket, or the file (under lock) */
	char *path;	    /* the file's, for its rotation */
	const char *name;   /* the identifier: agentfsd, agentfs-csi */
	pthread_mutex_t lock;
} lg = {LOG_TO_STDERR, -1, NULL, "agentfsd", PTHREAD_MUTEX_INITIALIZER};

/* Another program than agentfsd logging (agentfs-csi): call before log_open. */
void log_set_name(const char *name)
{
	lg.name = name;
}

/* A datagram socket connected to path, or -1: is a journal or syslog listening there? */
static int dgram_to(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Is SPEC a log target: journal, syslog, stderr or file:/ABSOLUTE/PATH? */
bool log_target_ok(const char *spec)
{
	return strcmp(spec, "journal") == 0 || strcmp(spec, "syslog") == 0 ||
	       strcmp(spec, "stderr") == 0 || (strncmp(spec, "file:/", 6) == 0 && spec[6] != '\0');
}

static int file_open(const char *path)
{
	return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
}

/*
 * Open the target SPEC (NULL: chosen as above; STATE_DIR holds the file a
 * daemon with neither journal nor syslog logs to). 0, or -errno with why in
 * err.
 */
int log_open(const char *spec, bool foreground, const char *state_dir, char *err, size_t len)
{
	cleanup_free char *file = NULL;
	int fd;

	if (spec == NULL) {
		if (foreground)
			spec = "stderr";
		else if (getenv("INVOCATION_ID") != NULL && (fd = dgram_to(JOURNAL_SOCKET)) >= 0)
			spec = "journal", close(fd);
		else if ((fd = dgram_to(SYSLOG_SOCKET)) >= 0)
			spec = "syslog", close(fd);
		else if (asprintf(&file, "file:%s/agentfsd.log", state_dir) < 0)
			return -ENOMEM;
		else
			spec = file;
	}
	if (strcmp(spec, "stderr") == 0) {
		lg.kind = LOG_TO_STDERR;
	} else if (strcmp(spec, "syslog") == 0) {
		if ((fd = dgram_to(SYSLOG_SOCKET)) < 0) {
			snprintf(err, len, "log target syslog: no syslog listens on %s (%s)",
				 SYSLOG_SOCKET, strerror(errno));
			return -ENOENT;
		}
		close(fd);
		openlog(lg.name, LOG_PID | LOG_NDELAY, LOG_DAEMON);
		lg.kind = LOG_TO_SYSLOG;
	} else if (strcmp(spec, "journal") == 0) {
		if ((lg.fd = dgram_to(JOURNAL_SOCKET)) < 0) {
			snprintf(err, len, "log target journal: no journal listens on %s (%s)",
				 JOURNAL_SOCKET, strerror(errno));
			return -ENOENT;
		}
		lg.kind = LOG_TO_JOURNAL;
	} else if (log_target_ok(spec)) {
		lg.path = strdup(spec + 5);
		if (lg.path == NULL)
			return -ENOMEM;
		if ((lg.fd = file_open(lg.path)) < 0) {
			snprintf(err, len, "log target %s: cannot open it: %s", spec, strerror(errno));
			return -errno;
		}
		lg.kind = LOG_TO_FILE;
	} else {
		snprintf(err, len,
			 "log target %s: not journal, syslog, stderr or file:/ABSOLUTE/PATH", spec);
		return -EINVAL;
	}
	return 0;
}

/* Where the log goes, for a person: "the journal", "syslog", "standard error" or the file. */
const char *log_where(void)
{
	return lg.kind == LOG_TO_JOURNAL  ? "the journal"
	       : lg.kind == LOG_TO_SYSLOG ? "syslog (facility daemon)"
	       : lg.kind == LOG_TO_FILE   ? lg.path
					  : "standard error";
}

bool log_uses_stderr(void)
{
	return lg.kind == LOG_TO_STDERR;
}

/* One line to the file, moved aside first once it passes LOG_FILE_MAX. */
static void file_write(const char *line, size_t n)
{
	cleanup_free char *old = NULL;
	struct stat st;
	int fd;

	pthread_mutex_lock(&lg.lock);
	if (lg.fd >= 0 && fstat(lg.fd, &st) == 0 && st.st_size > LOG_FILE_MAX &&
	    asprintf(&old, "%s.1", lg.path) >= 0 && rename(lg.path, old) == 0 &&
	    (fd = file_open(lg.path)) >= 0) {
		close(lg.fd);
		lg.fd = fd;
	}
	if (lg.fd >= 0 && write(lg.fd, line, n) < 0)
		fprintf(stderr, "%s: cannot write the log %s: %s\n", lg.name, lg.path,
			strerror(errno));
	pthread_mutex_unlock(&lg.lock);
}

/* A message already escaped (fusefs escapes its own) to the target. */
void log_text(int prio, const char *msg)
{
	char line[9000], when[32];
	struct tm tm;
	time_t now;
	int n;

	switch (lg.kind) {
	case LOG_TO_STDERR:
		fprintf(stderr, "%s: %s\n", lg.name, msg);
		return;
	case LOG_TO_SYSLOG:
		syslog(prio, "%s", msg);
		return;
	case LOG_TO_JOURNAL:
		/* the native protocol: one datagram of FIELD=value lines (no newline in msg) */
		n = snprintf(line, sizeof line,
			     "PRIORITY=%d\nSYSLOG_FACILITY=%d\nSYSLOG_IDENTIFIER=%s\nSYSLOG_PID=%d\n"
			     "MESSAGE=%s\n",
			     prio, LOG_DAEMON >> 3, lg.name, (int)getpid(), msg);
		if (n > 0 && send(lg.fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1,
				  MSG_NOSIGNAL) < 0)
			fprintf(stderr, "%s: %s\n", lg.name, msg);
		return;
	case LOG_TO_FILE:
		now = time(NULL);
		localtime_r(&now, &tm);
		strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
		n = snprintf(line, sizeof line, "%s %s[%d]: %s\n", when, lg.name, (int)getpid(), msg);
		if (n > 0)
			file_write(line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
		return;
	}
}

void log_msg(int prio, const char *fmt, ...)
{
	char msg[8192];
	va_list ap;

	va_start(ap, fmt);
	gg_vescapef(msg, sizeof msg, fmt, ap);
	va_end(ap);
	log_text(prio, msg);
}

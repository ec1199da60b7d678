/* SPDX-License-Identifier: MIT */
/* agentfsd: keeps bots, serves the JSON API and every bot's mounts. */
#include "src/common/agentfs.h"
#include "src/daemon/conffile.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <linux/close_range.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <event2/event.h>
#include <event2/thread.h>

static const char usage[] =
	"usage: agentfsd [-f] [--socket PATH] [--state DIR] [--config FILE]\n"
	"                [--log-target TARGET] [--cgroup PATH]\n"
	"       agentfsd --check [--config FILE]\n"
	"\n"
	"  -f, --foreground  stay in the foreground and log to standard error\n"
	"  --socket PATH     the control socket (default: $AGENTFS_SOCKET, else\n"
	"                    /run/agentfs/agentfsd.sock)\n"
	"  --state DIR       where bots are kept (default: /var/lib/agentfs)\n"
	"  --config FILE     JSON defaults: default_sandbox, default_network,\n"
	"                    writable, workers, poll_us, max_bots, max_clients,\n"
	"                    max_changes, changes_memory, restart_grace, uring,\n"
	"                    passthrough, group, log_target; default:\n"
	"                    " AGENTFSD_CONFIG ",\n"
	"                    if it exists (read again on SIGHUP)\n"
	"  --log-target T    journal, syslog, stderr or file:PATH (default: stderr\n"
	"                    with -f, else the journal under systemd, else syslog,\n"
	"                    else the file agentfsd.log in the state folder)\n"
	"  --check           check the configuration (and the options), say so, exit\n"
	"  --cgroup PATH     where the sandboxes' cgroups go (as the config's\n"
	"                    \"cgroup\", which it overrides; \"\": none)\n"
	"  -h, --help        show this help\n"
	"  -V, --version     show the version\n";

static int ready_fd = -1;
static int state_lock_fd = -1; /* held for the process's life (take_state), but a restart's end */

static void startup_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Fail before serving: tell the waiting parent (or stderr) and exit. */
static void startup_fail(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (ready_fd >= 0) {
		dprintf(ready_fd, "E%s", msg);
		close(ready_fd);
	} else {
		fprintf(stderr, "agentfsd: %s\n", msg);
	}
	exit(1);
}

/* The signals the loop handles: TERM and INT end it (a restart when a store keeps the mounts), HUP reloads. */
static struct event *sigs[3];
static struct event *watchdog;

/* systemd's WatchdogSec=: the loop says it turns, twice a period */
static void on_watchdog(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	fdstore_notify("WATCHDOG=1");
}

static void watchdog_start(struct event_base *base)
{
	const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
	unsigned long long us;
	struct timeval tv;

	if (usec == NULL || (pid != NULL && strtol(pid, NULL, 10) != (long)getpid()))
		return;
	us = strtoull(usec, NULL, 10) / 2;
	if (us == 0 || (watchdog = event_new(base, -1, EV_PERSIST, on_watchdog, NULL)) == NULL)
		return;
	tv.tv_sec = (time_t)(us / 1000000);
	tv.tv_usec = (suseconds_t)(us % 1000000);
	if (event_add(watchdog, &tv) != 0)
		log_msg(LOG_WARNING, "cannot keep systemd's watchdog fed");
}

static void on_stop_signal(evutil_socket_t sig, short what, void *arg)
{
	(void)what;
	bots_stop_requested((int)sig);
	event_base_loopexit(arg, NULL);
}

static void on_reload_signal(evutil_socket_t sig, short what, void *arg)
{
	struct config *cfg = arg;
	char err[1024];

	(void)sig;
	(void)what;
	fdstore_notify("RELOADING=1");
	if (config_reload(cfg, err, sizeof err) != 0)
		log_msg(LOG_ERR, "SIGHUP: %s: the settings stay as they were", err);
	else
		log_msg(LOG_INFO, "SIGHUP: %s read again",
			cfg->config_file != NULL ? cfg->config_file : "no configuration file");
	fdstore_notify("READY=1");
}

/*
 * Fork; the parent exits once the child says it serves ('K') or why it
 * could not ('E' and the message, printed by the parent).
 */
static void daemonise(void)
{
	char buf[1100];
	int pfd[2], status;
	ssize_t n;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) != 0)
		startup_fail("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		startup_fail("fork: %s", strerror(errno));
	if (pid > 0) {
		close(pfd[1]);
		do {
			n = read(pfd[0], buf, sizeof buf - 1);
		} while (n < 0 && errno == EINTR);
		if (n > 0 && buf[0] == 'K') {
			if (n > 1) {
				buf[n] = '\0';
				fprintf(stderr, "agentfsd: %s\n", buf + 1);
			}
			exit(0);
		}
		if (n > 1 && buf[0] == 'E') {
			buf[n] = '\0';
			fprintf(stderr, "agentfsd: %s\n", buf + 1);
		} else {
			fprintf(stderr, "agentfsd: the daemon ended while starting\n");
		}
		waitpid(pid, &status, 0);
		exit(1);
	}
	close(pfd[0]);
	ready_fd = pfd[1];
	if (setsid() < 0)
		startup_fail("setsid: %s", strerror(errno));
}

/* --check: the configuration and options were read whole; say which file, and exit. */
static int check_said(const char *config_file)
{
	if (config_file != NULL)
		printf("agentfsd: %s is valid\n", config_file);
	else
		printf("agentfsd: no configuration file (%s does not exist): the built-in defaults "
		       "apply\n",
		       AGENTFSD_CONFIG);
	return 0;
}

/* Tell the parent we serve (and where a log no one asked for goes), and leave its terminal. */
static void report_ready(const struct config *cfg)
{
	int fd;

	if (ready_fd < 0)
		return;
	/* A log no one asked for, in a file: the starting terminal is told where. */
	if (cfg->log_target == NULL && !log_uses_stderr() && log_where()[0] == '/')
		dprintf(ready_fd, "Kno journal or syslog here: agentfsd logs to %s", log_where());
	else if (write(ready_fd, "K", 1) != 1)
		log_msg(LOG_WARNING, "cannot report readiness");
	close(ready_fd);
	ready_fd = -1;
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd < 0 || dup2(fd, STDIN_FILENO) < 0 || dup2(fd, STDOUT_FILENO) < 0 ||
	    (!log_uses_stderr() && dup2(fd, STDERR_FILENO) < 0)) /* --log-target stderr keeps it */
		log_msg(LOG_WARNING, "cannot detach from the terminal: %s", strerror(errno));
	if (fd > STDERR_FILENO)
		close(fd);
}

static const struct option longopts[] = {
	{"foreground", no_argument, NULL, 'f'},
	{"socket", required_argument, NULL, 's'},
	{"state", required_argument, NULL, 'S'},
	{"config", required_argument, NULL, 'c'},
	{"log-target", required_argument, NULL, 'L'},
	{"check", no_argument, NULL, 'C'},
	{"cgroup", required_argument, NULL, 'g'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

/* What the command line asks besides the configuration */
struct opts {
	bool foreground;
	bool check;		/* --check */
	const char *log_target; /* --log-target, over the file's */
	const char *cgroup;	/* --cgroup, over the file's */
};

/* The command line into cfg and o; -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct config *cfg, struct opts *o)
{
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:fhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			o->foreground = true;
			break;
		case 's':
			free(cfg->socket_path);
			cfg->socket_path = strdup(optarg);
			break;
		case 'S':
			free(cfg->state_dir);
			cfg->state_dir = strdup(optarg);
			break;
		case 'c':
			cfg->config_file = optarg;
			break;
		case 'L':
			o->log_target = optarg;
			if (!log_target_ok(optarg)) {
				fprintf(stderr,
					"agentfsd: --log-target takes journal, syslog, stderr or "
					"file:/ABSOLUTE/PATH, not %s\n",
					optarg);
				return 2;
			}
			break;
		case 'C':
			o->check = true;
			break;
		case 'g':
			o->cgroup = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case 'V':
			printf("agentfsd %s\n", PACKAGE_VERSION);
			return 0;
		case ':':
			fprintf(stderr,
				"agentfsd: option %s needs an argument (see agentfsd --help)\n",
				argv[optind - 1]);
			return 2;
		default:
			fprintf(stderr, "agentfsd: unknown option %s (see agentfsd --help)\n",
				argv[optind - 1]);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "agentfsd: unexpected argument %s (see agentfsd --help)\n",
			argv[optind]);
		return 2;
	}
	return -1;
}

/* Paths, the configuration file and the operators' group; -1 to go on, else the exit status. */
static int settle_config(struct config *cfg, const struct opts *o)
{
	char err[1024];

	if (cfg->socket_path == NULL)
		cfg->socket_path = default_socket_path();
	if (cfg->state_dir == NULL)
		cfg->state_dir = strdup("/var/lib/agentfs");
	if (cfg->socket_path == NULL || cfg->state_dir == NULL ||
	    asprintf(&cfg->mount_dir, "%s/mnt", cfg->state_dir) < 0) {
		fprintf(stderr, "agentfsd: out of memory\n");
		return 1;
	}
	if (cfg->socket_path[0] != '/' || cfg->state_dir[0] != '/') {
		fprintf(stderr, "agentfsd: --socket and --state take absolute paths\n");
		return 2;
	}
	/* The default file is optional; one named with --config must exist. */
	if (cfg->config_file == NULL && access(AGENTFSD_CONFIG, F_OK) == 0)
		cfg->config_file = AGENTFSD_CONFIG;
	if ((cfg->config_file != NULL &&
	     config_read(cfg, cfg->config_file, err, sizeof err) != 0) ||
	    operators_group(cfg, err, sizeof err) != 0) {
		fprintf(stderr, "agentfsd: %s\n", err);
		return 1;
	}
	if (o->cgroup != NULL) {
		free(cfg->cgroup);
		cfg->cgroup = strdup(o->cgroup);
		if (cfg->cgroup == NULL || strstr(cfg->cgroup, "..") != NULL) {
			fprintf(stderr, "agentfsd: --cgroup takes a cgroup path without \"..\"\n");
			return 2;
		}
	}
	if (o->check)
		return check_said(cfg->config_file);
	if (geteuid() != 0) {
		fprintf(stderr, "agentfsd: must run as root: it mounts FUSE filesystems and serves "
				"every caller with default_permissions\n");
		return 1;
	}
	if (o->log_target != NULL) {
		free(cfg->log_target);
		if ((cfg->log_target = strdup(o->log_target)) == NULL) {
			fprintf(stderr, "agentfsd: out of memory\n");
			return 1;
		}
	}
	return -1;
}

/*
 * The folders, and the state folder's lock: one daemon per state folder (a
 * second would detach the first one's mounts). A daemon handing its mounts
 * over for a restart says so in the lock file: the next one then waits for
 * it to finish (up to 10 s) rather than refuse; any other holder is waited
 * for 1 s before the next one refuses.
 */
/*
 * The folders root goes on using by path (the sockets' folder, SOCKET.d, the
 * state and its mnt): no one else may be able to change where they lead, or
 * a symbolic link swapped in there would have root bind, chown and chmod a
 * socket, or write the state, wherever the link points (dir_trusted).  Asked
 * before they are made (of the part of each that exists: nothing is made in
 * a folder that fails) and after.
 */
static int dir_checked(const char *path, char *err, size_t len)
{
	char *p = strdup(path), *slash;
	struct stat st;
	int r;

	if (p == NULL) {
		snprintf(err, len, "out of memory");
		return -1;
	}
	while (lstat(p, &st) != 0 && (slash = strrchr(p, '/')) != NULL)
		slash[slash == p] = '\0'; /* "/" stays */
	r = dir_trusted(p, path, "agentfsd keeps its sockets and state there as root", err, len);
	free(p);
	return r;
}

static int daemon_dirs_trusted(const struct config *cfg, char *err, size_t len)
{
	char *sockdir = strdup(cfg->socket_path), *sockd = NULL, *slash;
	int r = -1;

	if (sockdir == NULL || asprintf(&sockd, "%s.d", cfg->socket_path) < 0) {
		snprintf(err, len, "out of memory");
		free(sockdir);
		return -1;
	}
	/* the socket's folder: "/" for "/x.sock" */
	slash = strrchr(sockdir, '/');
	if (slash != NULL)
		slash[slash == sockdir] = '\0';
	if (dir_checked(sockdir, err, len) == 0 && dir_checked(sockd, err, len) == 0 &&
	    dir_checked(cfg->state_dir, err, len) == 0 &&
	    dir_checked(cfg->mount_dir, err, len) == 0)
		r = 0;
	free(sockdir);
	free(sockd);
	return r;
}

/*
 * Is the agentfsd that holds the state folder's lock (its note: "serving
 * PID") on its way out? Killed (kill -9) or ending, a process holds its
 * descriptors, and so the lock, until the kernel has torn it down, which
 * takes a while with many mounts: a start right after it waits, as after a
 * handover, instead of failing. PF_EXITING in its stat's flags is set as
 * it starts to exit; a pid gone or a zombie has no descriptors left, and
 * what still holds the lock lets go of it soon (a fork about to exec).
 */
static bool holder_exiting(const char *note)
{
	char path[64], buf[1024], *p;
	unsigned long flags;
	ssize_t n;
	long pid;
	int fd;

	if (strncmp(note, "serving ", 8) != 0 || (pid = strtol(note + 8, NULL, 10)) <= 0)
		return false;
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	/* "PID (COMM) STATE PPID PGRP SESSION TTY TPGID FLAGS ...": COMM may hold anything */
	if ((p = strrchr(buf, ')')) == NULL || p[1] != ' ' ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %lu", &flags) != 1)
		return n <= 0;
	return p[2] == 'Z' || p[2] == 'X' || (flags & 0x4 /* PF_EXITING */);
}

static void take_state(const struct config *cfg, bool foreground)
{
	char *dir, note[32], err[1024];
	ssize_t n;
	int fd, tries;

	if (daemon_dirs_trusted(cfg, err, sizeof err) != 0)
		startup_fail("%s; nothing was started", err);
	dir = strdup(cfg->socket_path);
	if (dir == NULL || strrchr(dir, '/') == NULL)
		startup_fail("out of memory");
	*strrchr(dir, '/') = '\0';
	if (dir[0] != '\0' && mkdir_p(dir, 0755) != 0)
		startup_fail("cannot make %s: %s", dir, strerror(errno));
	free(dir);
	if (asprintf(&dir, "%s.d", cfg->socket_path) < 0 || mkdir_p(dir, 0711) != 0)
		startup_fail("cannot make %s.d: %s", cfg->socket_path, strerror(errno));
	free(dir);
	if (mkdir_p(cfg->state_dir, 0700) != 0 || mkdir_p(cfg->mount_dir, 0755) != 0)
		startup_fail("cannot make %s: %s", cfg->mount_dir, strerror(errno));
	if (daemon_dirs_trusted(cfg, err, sizeof err) != 0)
		startup_fail("%s; nothing was started", err);
	if (plan_dirs(cfg, err, sizeof err) != 0)
		startup_fail("%s", err);
	if (log_open(cfg->log_target, foreground, cfg->state_dir, err, sizeof err) != 0)
		startup_fail("%s", err);
	if (asprintf(&dir, "%s/lock", cfg->state_dir) < 0)
		startup_fail("out of memory");
	fd = open(dir, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	free(dir);
	if (fd < 0)
		startup_fail("cannot open the lock of the state folder %s: %s", cfg->state_dir,
			     strerror(errno));
	/*
	 * A handover's gap waits on this: looked at every ms, for at most 10 s.
	 * A holder that says neither is waited for 1 s too: one sent SIGTERM
	 * just before this start has not said "handover" until its event loop
	 * ran, which on a busy machine comes after this start gets here.
	 */
	for (tries = 0; flock(fd, LOCK_EX | LOCK_NB) != 0; tries++) {
		n = pread(fd, note, sizeof note - 1, 0);
		note[n > 0 ? n : 0] = '\0';
		if ((strncmp(note, "handover", 8) != 0 && !holder_exiting(note) && tries >= 1000) ||
		    tries >= 10000)
			startup_fail("another agentfsd uses the state folder %s", cfg->state_dir);
		usleep(1000);
	}
	n = snprintf(note, sizeof note, "serving %ld\n", (long)getpid());
	if (ftruncate(fd, 0) != 0 || pwrite(fd, note, (size_t)n, 0) != n)
		log_msg(LOG_WARNING, "cannot write the lock of %s: %s", cfg->state_dir,
			strerror(errno));
	state_lock_fd = fd;
}

/* Say in the state folder's lock that the mounts are being handed over (take_state). */
static void note_handover(void)
{
	if (state_lock_fd >= 0 &&
	    (ftruncate(state_lock_fd, 0) != 0 || pwrite(state_lock_fd, "handover\n", 9, 0) != 9))
		log_msg(LOG_WARNING, "cannot write the state folder's lock: %s", strerror(errno));
}

/* Listen, keep the bots and serve until a signal or shutdown; the exit status. */
static int serve(struct config *cfg)
{
	struct event_base *base;
	struct server *srv;
	char err[1024];
	bool restart;
	int i;

	if (evthread_use_pthreads() != 0)
		startup_fail("libevent has no thread support");
	base = event_base_new();
	srv = base != NULL ? server_create(base, cfg) : NULL;
	if (srv == NULL)
		startup_fail("out of memory");
	/* Listen first: it refuses to start while another daemon answers there. */
	if (server_listen(srv, cfg->socket_path, NULL, err, sizeof err) != 0)
		startup_fail("%s", err);
	if (bots_init(base, cfg, srv, err, sizeof err) != 0) {
		server_free(srv);
		startup_fail("%s", err);
	}
	sigs[0] = evsignal_new(base, SIGTERM, on_stop_signal, base);
	sigs[1] = evsignal_new(base, SIGINT, on_stop_signal, base);
	sigs[2] = evsignal_new(base, SIGHUP, on_reload_signal, cfg);
	for (i = 0; i < 3; i++)
		if (sigs[i] == NULL || event_add(sigs[i], NULL) != 0)
			startup_fail("cannot handle signals: out of memory");
	watchdog_start(base);
	fdstore_watch(base);
	log_msg(LOG_INFO, "agentfsd %s listening on %s", PACKAGE_VERSION, cfg->socket_path);
	report_ready(cfg);
	event_base_dispatch(base);
	if (watchdog != NULL)
		event_free(watchdog);

	fdstore_notify("STOPPING=1");
	restart = bots_restarting();
	if (restart) {
		note_handover();
		server_handover(srv);
		bots_handover();
	} else {
		server_shutdown(srv);
		bots_stop();
	}
	server_drain(srv, base);
	server_free(srv);
	for (i = 0; i < 3; i++)
		event_free(sigs[i]);
	fdstore_unwatch();
	event_base_free(base);
	if (!restart)
		fdstore_release(cfg->state_dir);
	log_msg(LOG_INFO, restart ? "stopped: the next agentfsd takes the mounts over" : "stopped");
	/*
	 * Nothing is left to do here but the kernel's teardown of this process
	 * (thousands of descriptors and mappings with many mounts: 15 ms and
	 * more). Everything a next agentfsd takes is saved or in the store, and
	 * no client is served any more: it need not wait for that teardown.
	 */
	if (restart && state_lock_fd >= 0) {
		close(state_lock_fd);
		state_lock_fd = -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct config cfg = CONFIG_DEFAULTS;
	struct opts o = {0};
	char err[1024];
	int r, top;

	/* The keeper is this binary too, and does nothing else (keeper.c). */
	if (argc > 1 && strcmp(argv[1], "--keeper") == 0)
		return keeper_main(argc, argv);
	/*
	 * Descriptors a caller left open are not ours to keep for a daemon's
	 * life; those systemd hands back from the fd store are.
	 */
	top = fdstore_early();
	if (close_range((unsigned)top + 1, ~0U, 0) != 0) {
		fprintf(stderr, "agentfsd: close_range: %s\n", strerror(errno));
		return 1;
	}
	if ((r = parse_args(argc, argv, &cfg, &o)) >= 0 || (r = settle_config(&cfg, &o)) >= 0) {
		config_free(&cfg);
		return r;
	}
	/* Under systemd (Type=notify) the service's process is this one: no fork. */
	if (!o.foreground && getenv("NOTIFY_SOCKET") == NULL)
		daemonise();
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	raise_nofile();
	take_state(&cfg, o.foreground);
	if (fdstore_open(cfg.state_dir, cfg.restart_grace, err, sizeof err) != 0)
		startup_fail("%s", err);
	r = serve(&cfg);
	config_free(&cfg);
	return r;
}

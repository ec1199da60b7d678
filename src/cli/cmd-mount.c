/* SPDX-License-Identifier: MIT */
/* agentfs mount and agentfs umount: one folder, bindfs-style. */
#include "src/common/agentfs.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <pthread.h>

#include "fusefs/fusefs.h"

static const char mount_usage[] =
	"usage: agentfs mount [-f] [--ro] [--ro-path SUB]... [--allow-new-repos]\n"
	"                     [-o OPT[,OPT...]] SOURCE MOUNTPOINT\n"
	"\n"
	"Mount the folder SOURCE at MOUNTPOINT through agentfs.\n"
	"\n"
	"  -f, --foreground     stay in the foreground until unmounted or signalled\n"
	"      --ro             make the whole mount read-only\n"
	"      --ro-path SUB    make SUB (relative to SOURCE) read-only; repeatable\n"
	"      --allow-new-repos  let new git repositories be made inside\n"
	"      --log FILE       append every refused write to FILE, one line each\n"
	"      --log-json FILE  the same as JSON objects, one a line\n"
	"  -o OPT[,OPT...]      mount options: ro, rw, suid, nosuid, dev, nodev, exec,\n"
	"                       noexec, noatime, relatime, nodiratime, nonempty,\n"
	"                       auto_unmount, noguard, nopassthrough, uring (requests\n"
	"                       over io_uring), debug (with -f),\n"
	"                       fsname=NAME, poll=USEC, timeout=SECONDS (attribute and\n"
	"                       entry cache), allow_other, default_permissions\n"
	"  -h, --help           show this help\n";

static bool log_to_stderr = true;

static void cli_log(void *arg, enum fs_log_level level, const char *msg)
{
	static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};

	if (log_to_stderr)
		fprintf(stderr, "agentfs: %s\n", msg);
	else
		syslog(prio[level], "%s", msg);
}

static int event_fd = -1;
static bool event_json;
static char *event_root; /* the mount point's absolute path, for the --log lines */
static atomic_bool event_failing; /* the last --log write failed: said once, not per refusal */

/*
 * --log: every refusal, one line each, appended with one write (workers
 * race; O_APPEND keeps each line whole). Never rate-limited: the worker that
 * refused pays one write(2) of one line (a refused write already costs a
 * round trip to this server), so a bot that loops on refusals slows only
 * itself, and the file grows by its refusals, which the operator rotates.
 * A file that cannot be written (a full disk) is reported once, and again
 * after a write succeeded, not once a refusal.
 */
static void cli_event(void *arg, struct fs_mount *m, const struct fs_event *ev)
{
	cleanup_cjson cJSON *o = NULL;
	cleanup_free char *text = NULL;
	char line[8192], msg[160];
	size_t n;
	ssize_t w;

	if (ev->kind != FS_EV_REFUSED || event_fd < 0)
		return;
	o = event_from_fs(ev, event_root != NULL ? event_root : fs_mount_point(m));
	if (event_json) {
		text = cJSON_PrintUnformatted(o);
		if (text == NULL)
			return;
		snprintf(line, sizeof line, "%s\n", text);
	} else {
		event_format(o, line, sizeof line - 1);
		strcat(line, "\n");
	}
	n = strlen(line);
	w = write(event_fd, line, n);
	if (w == (ssize_t)n) {
		if (atomic_load(&event_failing))
			atomic_store(&event_failing, false);
	} else if (!atomic_exchange(&event_failing, true)) {
		snprintf(msg, sizeof msg,
			 "cannot append to the --log file: %s (said once until a line is written again)",
			 w < 0 ? strerror(errno) : "short write");
		cli_log(NULL, FS_LOG_WARN, msg);
	}
}

/* The mount ended from outside: wake the main thread's sigwait. */
static void cli_lost(void *arg, struct fs_mount *m)
{
	kill(getpid(), SIGUSR1);
}

static int ready_fd = -1;

static void cli_ready(void *arg, struct fs_mount *m)
{
	if (ready_fd >= 0) {
		if (write(ready_fd, "K", 1) != 1)
			syslog(LOG_WARNING, "cannot report readiness: %s", strerror(errno));
		close(ready_fd);
		ready_fd = -1;
	}
}

/* Report a failure to the waiting parent (or stderr in -f mode). */
static void fail_report(const char *msg)
{
	char line[600];
	int n;

	if (ready_fd >= 0) {
		n = snprintf(line, sizeof line, "E%s", msg);
		if (write(ready_fd, line, (size_t)n) != n)
			syslog(LOG_ERR, "%s", msg);
		close(ready_fd);
		ready_fd = -1;
	} else {
		fprintf(stderr, "agentfs: %s\n", cli_escape(msg));
	}
}

/* Is NAME one of the comma-separated options? */
static bool has_option(const char *opts, const char *name)
{
	size_t n = strlen(name);
	const char *p;

	for (p = opts; p != NULL && *p != '\0'; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return true;
	return false;
}

struct watch_find {
	struct fs_mount_ident ident;
	char path[PATH_MAX];
};

static int watch_match(void *arg, uint64_t id, const char *mp, const char *fstype)
{
	struct watch_find *wf = arg;

	if (id != wf->ident.id || strcmp(fstype, "fuse.agentfs") != 0 ||
	    strlen(mp) >= sizeof wf->path)
		return 0;
	strcpy(wf->path, mp);
	return 1;
}

/*
 * The watcher of -o auto_unmount: reads what names the mount, then waits
 * for the server's end. A server that ends on its own says 'Q' first; one
 * killed or crashed leaves a dead mount (ENOTCONN) that nobody would clear,
 * so the watcher detaches it: found by its id, and checked to be it by its
 * device and never-reused id (the id alone is another mount's once the
 * server's was unmounted), through an fd of its root.
 */
static int watcher(int fd)
{
	struct watch_find wf = {0};
	char c[64], self[64];
	bool quit = false;
	ssize_t n, i;
	int root, r;

	for (;;) {
		n = read(fd, c, sizeof c);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		/* 'M' and the id, then 'Q': one read may bring both */
		for (i = 0; i < n; i++) {
			if (c[i] == 'Q') {
				quit = true;
			} else if (c[i] == 'M' && n - i > (ssize_t)sizeof wf.ident) {
				memcpy(&wf.ident, c + i + 1, sizeof wf.ident);
				i += sizeof wf.ident;
			}
		}
	}
	if (quit || wf.ident.id == 0 || fs_mountinfo_each(watch_match, &wf) != 1)
		return 0;
	root = open(wf.path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (root < 0 || !fs_mount_ident_at(&wf.ident, root)) {
		if (root >= 0)
			close(root);
		return 0; /* the server's mount is gone: its id is another's now */
	}
	snprintf(self, sizeof self, "/proc/self/fd/%d", root);
	r = umount2(self, MNT_DETACH) == 0 ? 0 : errno;
	close(root);
	if (r != 0) {
		syslog(LOG_ERR, "auto_unmount: cannot unmount %s: %s", wf.path, strerror(r));
		return 1;
	}
	syslog(LOG_NOTICE, "auto_unmount: the server of %s ended; unmounted it", wf.path);
	return 0;
}

/* Start the watcher before any thread exists: fork is then safe. */
static int watcher_start(void)
{
	int pfd[2], fd;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) != 0)
		return -1;
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (pid == 0) {
		/*
		 * Its own session, no terminal, no folder held, no descriptor but
		 * the pipe: one it kept could hold the caller's terminal or a
		 * file open for as long as the mount lives.  Any step that fails
		 * ends it: the server then logs that the watcher is gone.
		 */
		fd = fcntl(pfd[0], F_DUPFD_CLOEXEC, 3);
		if (setsid() < 0 || chdir("/") != 0 || fd < 3 ||
		    close_range(0, (unsigned)fd - 1, 0) != 0 ||
		    close_range((unsigned)fd + 1, ~0U, 0) != 0 || open("/dev/null", O_RDWR) != 0 ||
		    dup2(0, 1) != 1 || dup2(0, 2) != 2)
			_exit(1);
		prctl(PR_SET_NAME, "agentfs-unmount");
		openlog("agentfs", LOG_PID, LOG_DAEMON);
		_exit(watcher(fd));
	}
	close(pfd[0]);
	return pfd[1];
}

static void watcher_say(int fd, const char *msg, size_t len)
{
	if (fd >= 0 && write(fd, msg, len) != (ssize_t)len)
		syslog(LOG_WARNING, "auto_unmount: cannot reach the watcher: %s", strerror(errno));
}

/* Background: nothing reaches the caller's terminal once it has returned. */
static void detach_stdio(void)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return;
	dup2(fd, STDIN_FILENO);
	dup2(fd, STDOUT_FILENO);
	dup2(fd, STDERR_FILENO);
	close(fd);
}

static int serve(struct fs_mount_params *mp, bool foreground)
{
	struct fs_params p = {.timeout = -1, .log = cli_log, .lost = cli_lost};
	struct fs_error err = {0};
	struct fs_mount *m = NULL;
	sigset_t set;
	struct fs *fs;
	int sig, watch = -1;
	char msg[1 + sizeof(struct fs_mount_ident)];
	struct fs_mount_ident ident;

	/*
	 * Before the mount: libfuse's -o debug writes to stderr from the
	 * workers, at once, and the caller returns on the kernel's INIT.
	 */
	if (!foreground)
		detach_stdio();
	if (has_option(mp->options, "auto_unmount") && (watch = watcher_start()) < 0) {
		fail_report("auto_unmount: cannot start the watcher process");
		return EXIT_AGENTFS;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR1);
	/* Blocked before the workers start, so only sigwait below sees them. */
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (event_fd >= 0) /* else no path is computed for an event no one reads */
		p.event = cli_event;
	raise_nofile();
	fs = fs_new(&p, &err);
	if (fs == NULL) {
		fail_report(err.msg);
		return EXIT_AGENTFS;
	}
	mp->ready = cli_ready;
	if (fs_mount(fs, mp, &m, &err) != 0) {
		fail_report(err.msg);
		fs_free(fs);
		return EXIT_AGENTFS;
	}
	/* Relative paths were resolved by fs_mount: leave the folder free now. */
	if (!foreground && chdir("/") != 0)
		syslog(LOG_WARNING, "chdir /: %s", strerror(errno));
	fs_mount_ident(m, &ident);
	msg[0] = 'M';
	memcpy(msg + 1, &ident, sizeof ident);
	watcher_say(watch, msg, sizeof msg);
	for (;;) {
		sig = sigwaitinfo(&set, NULL);
		if (sig < 0)
			continue;
		if (sig == SIGUSR1 || sig == SIGINT || sig == SIGTERM || sig == SIGHUP)
			break;
	}
	watcher_say(watch, "Q", 1);
	if (sig != SIGUSR1)
		fs_unmount(m);
	/*
	 * The connection is gone and nothing is left to write back: every
	 * write went to the source as it came. Tearing down the tables one
	 * inode at a time (a close and a free each, 10,000+ on a large tree)
	 * kept the process alive for seconds after its unmount on a busy
	 * machine; the kernel reclaims all of it at once at exit. Its folders'
	 * locks go first: the kernel closes descriptors only after memory.
	 */
	fs_folders_release(fs);
	_exit(0);
}

int cmd_mount(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"foreground", no_argument, NULL, 'f'},
		{"ro", no_argument, NULL, 'r'},
		{"ro-path", required_argument, NULL, 'R'},
		{"allow-new-repos", no_argument, NULL, 'A'},
		{"log", required_argument, NULL, 'l'},
		{"log-json", required_argument, NULL, 'L'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct fs_mount_params mp = {0};
	/* static: still reachable when die() exits, for LeakSanitizer */
	static const char **ro;
	static char *opts;
	bool foreground = false;
	int c, pfd[2], status;
	pid_t pid;
	char buf[600];
	ssize_t n;

	ro = calloc((size_t)argc, sizeof *ro);
	if (ro == NULL)
		die("out of memory");
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":fho:", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			foreground = true;
			break;
		case 'r':
			mp.readonly = true;
			break;
		case 'R':
			ro[mp.n_ro_paths++] = optarg;
			break;
		case 'A':
			mp.allow_new_repos = true;
			break;
		case 'l':
		case 'L':
			/* opened here, before the mount: a file inside it would wait on itself */
			if (event_fd >= 0)
				close(event_fd);
			event_json = c == 'L';
			event_fd = open(optarg,
					O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);
			if (event_fd < 0)
				die("--log %s: %s", optarg, strerror(errno));
			break;
		case 'o':
			if (opts == NULL) {
				opts = strdup(optarg);
			} else {
				char *joined;

				if (asprintf(&joined, "%s,%s", opts, optarg) < 0)
					die("out of memory");
				free(opts);
				opts = joined;
			}
			break;
		case 'h':
			fputs(mount_usage, stdout);
			return 0;
		case ':':
			die_usage("mount", "option %s needs an argument", argv[optind - 1]);
		default:
			usage_error("mount", argv[optind - 1], optopt);
		}
	}
	if (argc - optind != 2)
		die_usage("mount", "mount needs SOURCE and MOUNTPOINT");
	mp.source = argv[optind];
	mp.mountpoint = argv[optind + 1];
	mp.ro_paths = ro;
	mp.options = opts;
	if (event_fd >= 0)
		event_root = realpath(mp.mountpoint, NULL);
	mp.empty_mountpoint = true;
	if (geteuid() != 0)
		die("mount needs root: agentfs serves every caller as root with "
		    "default_permissions");
	if (access("/dev/fuse", R_OK | W_OK) != 0)
		die("cannot use /dev/fuse: %s (install fuse3 or load the fuse module)",
		    strerror(errno));

	if (foreground) {
		log_to_stderr = true;
		return serve(&mp, true);
	}
	if (pipe2(pfd, O_CLOEXEC) != 0)
		die("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		close(pfd[0]);
		/* The server lives on: it keeps none of its caller's descriptors. */
		if (event_fd >= 0) {
			/* kept: moved just above the pipe, the range below is closed */
			if (event_fd != pfd[1] + 1 && dup3(event_fd, pfd[1] + 1, O_CLOEXEC) < 0)
				_exit(1);
			event_fd = pfd[1] + 1;
		}
		if (pfd[1] > 3)
			close_range(3, (unsigned)pfd[1] - 1, 0);
		close_range((unsigned)pfd[1] + (event_fd >= 0 ? 2 : 1), ~0U, 0);
		ready_fd = pfd[1];
		setsid();
		log_to_stderr = false;
		openlog("agentfs", LOG_PID, LOG_DAEMON);
		_exit(serve(&mp, false));
	}
	close(pfd[1]);
	do {
		n = read(pfd[0], buf, sizeof buf - 1);
	} while (n < 0 && errno == EINTR);
	close(pfd[0]);
	if (n > 0 && buf[0] == 'K')
		return 0;
	if (n > 1 && buf[0] == 'E') {
		buf[n] = '\0';
		fprintf(stderr, "agentfs: %s\n", cli_escape(buf + 1));
	} else {
		fprintf(stderr, "agentfs: the server ended before the mount was ready\n");
	}
	waitpid(pid, &status, 0);
	return EXIT_AGENTFS;
}

static const char umount_usage[] = "usage: agentfs umount [-z] MOUNTPOINT\n"
				   "\n"
				   "Unmount an agentfs mount; its server exits.\n"
				   "\n"
				   "  -z, --lazy   detach it now even if busy\n"
				   "  -h, --help   show this help\n";

int cmd_umount(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"lazy", no_argument, NULL, 'z'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct fs_error err = {0};
	pid_t lingering;
	bool lazy = false;
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:zh", longopts, NULL)) != -1) {
		switch (c) {
		case 'z':
			lazy = true;
			break;
		case 'h':
			fputs(umount_usage, stdout);
			return 0;
		default:
			usage_error("umount", argv[optind - 1], optopt);
		}
	}
	if (argc - optind != 1)
		die_usage("umount", "umount needs MOUNTPOINT");
	if (fs_kernel_umount(argv[optind], lazy, &lingering, &err) != 0)
		die("%s", err.msg);
	/*
	 * Unmounted here, but a copy of the mount made by another mount
	 * namespace while it was mounted (a sandbox or container that bound a
	 * folder above it, with no mount propagation from here) keeps the
	 * connection, and the server serves it on.
	 */
	if (lingering != 0) {
		char pid[32] = "", comm[64] = "", path[64];
		FILE *f;

		if (lingering > 0) {
			snprintf(pid, sizeof pid, " (pid %ld)", (long)lingering);
			snprintf(path, sizeof path, "/proc/%ld/comm", (long)lingering);
			if ((f = fopen(path, "re")) != NULL) {
				if (fgets(comm, sizeof comm, f) == NULL)
					comm[0] = '\0';
				comm[strcspn(comm, "\n")] = '\0';
				fclose(f);
			}
		}
		/* a bot's root: its sandbox holds the copy, and a SIGTERM would only restart agentfsd */
		if (strcmp(comm, "agentfsd") == 0) {
			fprintf(stderr,
				"agentfs: %s is unmounted, but agentfsd%s still serves a copy of it in "
				"another mount namespace (a sandbox of the bot: agentfs ps lists them); "
				"it lets the folder go when the copy goes.\n",
				cli_escape(argv[optind]), pid);
			return 0;
		}
		fprintf(stderr,
			"agentfs: %s is unmounted, but its server%s still runs: a copy of the mount "
			"lives on in another mount namespace (a sandbox or container started while it "
			"was mounted). The server ends when the last copy goes (end it now with "
			"SIGTERM); until then its folder cannot be served again.\n",
			cli_escape(argv[optind]), pid);
	}
	return 0;
}

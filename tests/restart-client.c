/* SPDX-License-Identifier: MIT */
/*
 * tests/restart-client: what tests/daemon-handover.sh runs around a
 * restart of agentfsd.
 *
 *   restart-client mntid PATH
 *       the unique id of the mount PATH is on (statx STATX_MNT_ID_UNIQUE,
 *       Linux 6.8; else STATX_MNT_ID)
 *   restart-client work DIR SECONDS
 *       a bot's work in DIR until SECONDS pass or DIR/stop exists: each
 *       round writes a new file, appends a line to a descriptor held open
 *       all along, reads a file mapped once at the start, lists DIR and
 *       checks that its flock on DIR/lock (taken at the start, held all
 *       along) still excludes another open file description; prints
 *       "rounds N errors E" and each error on stderr. Every line it
 *       appended is "N" (the round): the test counts them.
 *   restart-client hold FILE... --  CMD...
 *       open each FILE for appending and hold it; run CMD; then append a
 *       line through each held descriptor, fsync it (a request that names
 *       the open file, which the server must still know) and read the file
 *       back through it: prints "held N errors E"
 *   restart-client systemd DIR -- CMD...
 *       a stand-in for systemd's side of Type=notify and the fd store:
 *       NOTIFY_SOCKET is DIR/notify.sock; every message is appended to
 *       DIR/notify.log ("READY=1", "FDSTORE name", "FDSTOREREMOVE name", ...);
 *       descriptors sent with FDSTORE=1 are kept by name. When CMD exits
 *       and DIR/restart exists (the test made it: systemctl restart), CMD
 *       is started again with the kept descriptors as LISTEN_FDS (from 3,
 *       LISTEN_FDNAMES, LISTEN_PID), as systemd does; else the stand-in
 *       exits and its descriptors close (systemctl stop).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <dirent.h>

#ifndef STATX_MNT_ID_UNIQUE
#define STATX_MNT_ID_UNIQUE 0x4000U
#endif

static int cmd_mntid(const char *path)
{
	struct statx x;

	if (statx(AT_FDCWD, path, AT_STATX_DONT_SYNC, STATX_MNT_ID_UNIQUE | STATX_MNT_ID, &x) !=
	    0) {
		perror(path);
		return 1;
	}
	if (!(x.stx_mask & (STATX_MNT_ID_UNIQUE | STATX_MNT_ID))) {
		fprintf(stderr, "%s: no mount id\n", path);
		return 1;
	}
	printf("%s%llu\n",
	       (x.stx_mask & STATX_MNT_ID_UNIQUE) ? "" : "old:", (unsigned long long)x.stx_mnt_id);
	return 0;
}

static unsigned long errors;

static void err(const char *what, long round)
{
	errors++;
	fprintf(stderr, "round %ld: %s: %s\n", round, what, strerror(errno));
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Another open file description of the lock file cannot take it: our flock holds */
static bool flock_held(int dirfd)
{
	int fd = openat(dirfd, "lock", O_RDONLY | O_CLOEXEC), r;

	if (fd < 0)
		return false;
	r = flock(fd, LOCK_EX | LOCK_NB);
	close(fd);
	return r != 0 && errno == EWOULDBLOCK;
}

static int cmd_work(const char *dir, double seconds)
{
	static const char mapped[] = "mapped content, read again and again\n";
	char name[64], line[64], stop[4096];
	int dirfd, held, lock, mfd, fd;
	double end = now() + seconds;
	struct dirent *de;
	struct stat st;
	long round;
	char *map;
	DIR *d;

	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	held = openat(dirfd, "held", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	lock = openat(dirfd, "lock", O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	mfd = openat(dirfd, "mapped", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (dirfd < 0 || held < 0 || lock < 0 || mfd < 0 ||
	    write(mfd, mapped, sizeof mapped - 1) != sizeof mapped - 1 ||
	    flock(lock, LOCK_EX) != 0) {
		perror(dir);
		return 1;
	}
	map = mmap(NULL, sizeof mapped - 1, PROT_READ, MAP_SHARED, mfd, 0);
	if (map == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	snprintf(stop, sizeof stop, "%s/stop", dir);
	for (round = 0; now() < end && access(stop, F_OK) != 0; round++) {
		snprintf(name, sizeof name, "f.%ld", round);
		snprintf(line, sizeof line, "%ld\n", round);
		fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0 || write(fd, line, strlen(line)) != (ssize_t)strlen(line))
			err("write a new file", round);
		if (fd >= 0 && close(fd) != 0)
			err("close it", round);
		if (write(held, line, strlen(line)) != (ssize_t)strlen(line))
			err("append to the held descriptor", round);
		if (memcmp(map, mapped, sizeof mapped - 1) != 0) {
			errno = EILSEQ;
			err("read the mapped file", round);
		}
		fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		d = fd >= 0 ? fdopendir(fd) : NULL;
		if (d == NULL)
			err("open the folder", round);
		errno = 0;
		while (d != NULL && (de = readdir(d)) != NULL)
			;
		if (d != NULL && errno != 0)
			err("list the folder", round);
		if (d != NULL)
			closedir(d);
		if (!flock_held(dirfd)) {
			errno = ENOLCK;
			err("the held flock", round);
		}
		if (fstat(held, &st) != 0)
			err("fstat the held descriptor", round);
		usleep(2000);
	}
	if (close(held) != 0)
		err("close the held descriptor", round);
	printf("rounds %ld errors %lu\n", round, errors);
	return errors != 0;
}

static int cmd_hold(int argc, char **argv)
{
	int fds[256], n = 0, k, st;
	char buf[256];
	ssize_t r;
	pid_t pid;

	for (k = 0; k < argc && strcmp(argv[k], "--") != 0 && n < 256; k++) {
		fds[n] = open(argv[k], O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (fds[n] < 0 || write(fds[n], "before\n", 7) != 7)
			err(argv[k], 0);
		n++;
	}
	if (k >= argc)
		return 2;
	pid = fork();
	if (pid == 0) {
		execvp(argv[k + 1], argv + k + 1);
		_exit(127);
	}
	waitpid(pid, &st, 0);
	for (k = 0; k < n; k++) {
		if (fds[k] < 0)
			continue;
		if (write(fds[k], "after\n", 6) != 6)
			err("append after", k);
		if (fsync(fds[k]) != 0)
			err("fsync", k);
		r = pread(fds[k], buf, sizeof buf - 1, 0);
		if (r != 13 || memcmp(buf, "before\nafter\n", 13) != 0) {
			errno = r < 0 ? errno : EILSEQ;
			err("read it back", k);
		}
	}
	printf("held %d errors %lu\n", n, errors);
	return errors != 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0;
}

/* --- the systemd stand-in -------------------------------------------------- */

struct stored {
	char name[256];
	int fd;
};
static struct stored store[4096];
static int nstored;

static void note(const char *dir, const char *line)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof path, "%s/notify.log", dir);
	f = fopen(path, "ae");
	if (f != NULL) {
		fprintf(f, "%s\n", line);
		fclose(f);
	}
}

/* One notification: its lines logged, FDSTORE kept, FDSTOREREMOVE dropped */
static void notified(const char *dir, char *msg, int *fds, int nfds)
{
	char name[256] = "", line[512], *save = NULL, *l;
	bool fdstore = false, remove = false;
	int k;

	for (l = strtok_r(msg, "\n", &save); l != NULL; l = strtok_r(NULL, "\n", &save)) {
		if (strcmp(l, "FDSTORE=1") == 0)
			fdstore = true;
		else if (strcmp(l, "FDSTOREREMOVE=1") == 0)
			remove = true;
		else if (strncmp(l, "FDNAME=", 7) == 0)
			snprintf(name, sizeof name, "%s", l + 7);
		else
			note(dir, l);
	}
	if (fdstore) {
		for (k = 0; k < nfds && nstored < 4096; k++) {
			snprintf(store[nstored].name, sizeof store[nstored].name, "%s", name);
			store[nstored++].fd = fds[k];
		}
		nfds = 0;
		snprintf(line, sizeof line, "FDSTORE %s", name);
		note(dir, line);
	}
	if (remove) {
		for (k = 0; k < nstored; k++) {
			if (strcmp(store[k].name, name) == 0) {
				close(store[k].fd);
				store[k--] = store[--nstored];
			}
		}
		snprintf(line, sizeof line, "FDSTOREREMOVE %s", name);
		note(dir, line);
	}
	for (k = 0; k < nfds; k++)
		close(fds[k]);
}

static pid_t start_cmd(char **cmd, const char *sock)
{
	char names[65536] = "", num[32];
	pid_t pid = fork();
	int k;

	if (pid != 0)
		return pid;
	for (k = 0; k < nstored; k++) {
		/* above every target first, then into place: no store fd is overwritten */
		store[k].fd = fcntl(store[k].fd, F_DUPFD, 3 + nstored);
	}
	for (k = 0; k < nstored; k++) {
		dup2(store[k].fd, 3 + k);
		close(store[k].fd);
		if (k > 0)
			strncat(names, ":", sizeof names - strlen(names) - 1);
		strncat(names, store[k].name, sizeof names - strlen(names) - 1);
	}
	setenv("NOTIFY_SOCKET", sock, 1);
	if (nstored > 0) {
		snprintf(num, sizeof num, "%d", nstored);
		setenv("LISTEN_FDS", num, 1);
		setenv("LISTEN_FDNAMES", names, 1);
		snprintf(num, sizeof num, "%d", (int)getpid());
		setenv("LISTEN_PID", num, 1);
	}
	execvp(cmd[0], cmd);
	_exit(127);
}

static int cmd_systemd(const char *dir, char **cmd)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char buf[4096], cbuf[CMSG_SPACE(sizeof(int) * 253)], restart[4096], line[64];
	struct iovec iov = {buf, sizeof buf - 1};
	struct msghdr mh;
	struct cmsghdr *c;
	struct pollfd pfd;
	int s, fds[253], nfds, st, k;
	ssize_t n;
	pid_t pid;

	snprintf(sa.sun_path, sizeof sa.sun_path, "%s/notify.sock", dir);
	snprintf(restart, sizeof restart, "%s/restart", dir);
	unlink(sa.sun_path);
	s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof sa) != 0) {
		perror(sa.sun_path);
		return 1;
	}
	pid = start_cmd(cmd, sa.sun_path);
	pfd.fd = s;
	pfd.events = POLLIN;
	for (;;) {
		if (poll(&pfd, 1, 50) > 0) {
			memset(&mh, 0, sizeof mh);
			mh.msg_iov = &iov;
			mh.msg_iovlen = 1;
			mh.msg_control = cbuf;
			mh.msg_controllen = sizeof cbuf;
			n = recvmsg(s, &mh, MSG_CMSG_CLOEXEC);
			if (n < 0)
				continue;
			buf[n] = '\0';
			nfds = 0;
			for (c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c))
				if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
					for (k = 0;
					     k < (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
					     k++)
						memcpy(&fds[nfds++], CMSG_DATA(c) + k * sizeof(int),
						       sizeof(int));
			notified(dir, buf, fds, nfds);
			continue; /* messages first, as systemd reads them before SIGCHLD */
		}
		if (waitpid(pid, &st, WNOHANG) != pid)
			continue;
		snprintf(line, sizeof line, "EXIT %d",
			 WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
		note(dir, line);
		if (unlink(restart) != 0)
			break;
		note(dir, "START");
		pid = start_cmd(cmd, sa.sun_path);
	}
	for (k = 0; k < nstored; k++)
		close(store[k].fd);
	unlink(sa.sun_path);
	return 0;
}

int main(int argc, char **argv)
{
	int k;

	if (argc == 3 && strcmp(argv[1], "mntid") == 0)
		return cmd_mntid(argv[2]);
	if (argc == 4 && strcmp(argv[1], "work") == 0)
		return cmd_work(argv[2], atof(argv[3]));
	if (argc > 3 && strcmp(argv[1], "hold") == 0)
		return cmd_hold(argc - 2, argv + 2);
	if (argc > 4 && strcmp(argv[1], "systemd") == 0 && strcmp(argv[3], "--") == 0)
		return cmd_systemd(argv[2], argv + 4);
	for (k = 0; k < argc; k++)
		fprintf(stderr, "%s%s", k ? " " : "", argv[k]);
	fprintf(stderr, ": see tests/restart-client.c for the usage\n");
	return 2;
}

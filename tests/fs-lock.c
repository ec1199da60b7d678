/* SPDX-License-Identifier: MIT */
/*
 * fs-lock: take or probe an exclusive lock on a file, for fs-locks.sh.
 *
 *   fs-lock KIND ACTION PATH [SECONDS]
 *
 * KIND is flock (flock(2)), posix (fcntl F_SETLK) or ofd (F_OFD_SETLK), on
 * the whole file, opened read/write.  ACTION:
 *   try    non-blocking attempt; prints OK or the errno name (EAGAIN ...)
 *   hold   blocking lock, prints "locked", keeps it until SIGTERM/SIGINT
 *          (or SECONDS, default 60, as a safety bound), then exits 0
 *   wait   blocking lock, prints "locked" and exits; with SECONDS an alarm
 *          interrupts the wait after that long and it prints the errno
 *          name (EINTR)
 *   getlk  (posix, ofd) prints the type of a conflicting lock: F_WRLCK,
 *          F_RDLCK, or F_UNLCK when there is none
 *   churn  takes the lock blocking and lets it go again, SECONDS times
 *          (default 1000), so that several churners race each grant against
 *          the next wait; prints "done" or the errno name of a failed call
 * Exits 0 when the action ran, 1 when the file cannot be opened, 2 on usage.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

static int lock(int fd, const char *kind, bool block)
{
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};

	if (!strcmp(kind, "flock"))
		return flock(fd, LOCK_EX | (block ? 0 : LOCK_NB));
	if (!strcmp(kind, "posix"))
		return fcntl(fd, block ? F_SETLKW : F_SETLK, &fl);
	return fcntl(fd, block ? F_OFD_SETLKW : F_OFD_SETLK, &fl);
}

static int unlock(int fd, const char *kind)
{
	struct flock fl = {.l_type = F_UNLCK, .l_whence = SEEK_SET};

	if (!strcmp(kind, "flock"))
		return flock(fd, LOCK_UN);
	return fcntl(fd, !strcmp(kind, "posix") ? F_SETLK : F_OFD_SETLK, &fl);
}

static const char *ename(int e)
{
	const char *s = strerrorname_np(e);

	return s ? s : "E?";
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	const char *kind, *action;
	int fd, seconds;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 4 || argc > 5 ||
	    (strcmp(argv[1], "flock") && strcmp(argv[1], "posix") && strcmp(argv[1], "ofd"))) {
		fprintf(stderr, "usage: fs-lock flock|posix|ofd try|hold|wait|getlk|churn PATH "
				"[SECONDS]\n");
		return 2;
	}
	kind = argv[1];
	action = argv[2];
	seconds = argc == 5 ? atoi(argv[4]) : 0;

	/* no SA_RESTART: the alarm must interrupt a blocking lock */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGALRM, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	fd = open(argv[3], O_RDWR);
	if (fd < 0) {
		printf("open: %s\n", ename(errno));
		return 1;
	}
	if (!strcmp(action, "try")) {
		puts(lock(fd, kind, false) == 0 ? "OK" : ename(errno));
	} else if (!strcmp(action, "hold")) {
		if (lock(fd, kind, true) < 0) {
			printf("%s\n", ename(errno));
			return 0;
		}
		puts("locked");
		alarm(seconds > 0 ? seconds : 60);
		while (!stop)
			pause();
		puts("released");
	} else if (!strcmp(action, "wait")) {
		if (seconds > 0)
			alarm(seconds);
		puts(lock(fd, kind, true) == 0 ? "locked" : ename(errno));
	} else if (!strcmp(action, "churn")) {
		int i, n = seconds > 0 ? seconds : 1000;

		for (i = 0; i < n; i++)
			if (lock(fd, kind, true) < 0 || unlock(fd, kind) < 0)
				break;
		puts(i == n ? "done" : ename(errno));
	} else if (!strcmp(action, "getlk") && strcmp(kind, "flock")) {
		struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};

		if (fcntl(fd, !strcmp(kind, "posix") ? F_GETLK : F_OFD_GETLK, &fl) < 0)
			puts(ename(errno));
		else
			puts(fl.l_type == F_WRLCK   ? "F_WRLCK"
			     : fl.l_type == F_RDLCK ? "F_RDLCK"
						    : "F_UNLCK");
	} else {
		fprintf(stderr, "fs-lock: unknown action %s\n", action);
		return 2;
	}
	return 0;
}

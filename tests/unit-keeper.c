/* SPDX-License-Identifier: MIT */
/*
 * keeper_start() (src/daemon/keeper.c) whatever descriptors are free when
 * it is called: the keeper it starts must listen on its descriptor 3 and
 * have /dev/null as 0, 1 and 2. agentfsd starts a new keeper while it
 * runs (the old one killed), when descriptor 3 can be the lowest free one:
 * its listening socket is then made at 3 with close-on-exec, and a dup2()
 * onto itself leaves that flag set, so the keeper would start without it.
 *
 * Each case starts a real keeper (agentfsd --keeper, from top_builddir),
 * connects and talks to it as agentfsd does (keeper_connect, fdpass_send,
 * fdstore_recv), keeps a descriptor, lists it back and ends
 * the keeper (R). Root only: the keeper accepts no one else.
 */
#include "src/common/agentfs.h"
#include "tests/guard-tap.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <signal.h>

static char self[PATH_MAX], dir[] = "/tmp/agentfs-test.unit-keeper.XXXXXX";

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/*
 * Start a keeper, with descriptor 3 free (want3) or taken, and use it.
 * Returns after the keeper has been told to end.
 */
static void one(const char *what, bool want3)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char err[256] = "", buf[256];
	int s = -1, r, k, fd, pipefd[2];
	bool listed = false, same = false;
	struct stat a, b;

	snprintf(sa.sun_path, sizeof sa.sun_path, "%s/keeper-%s.sock", dir, want3 ? "3" : "n");
	if (want3) {
		close(3);
	} else if (fcntl(3, F_GETFD) < 0 && open("/dev/null", O_RDONLY) != 3) {
		tap_ok(0, "%s: descriptor 3 taken for the case", what);
		return;
	}
	r = keeper_start(self, &sa, dir, 5, err, sizeof err);
	tap_ok(r == 0, "%s: keeper_start %s", what, r == 0 ? "started it" : err);
	if (r != 0)
		return;
	for (k = 0; k < 100 && (s = keeper_connect(&sa)) < 0; k++)
		sleep_ms(20);
	tap_ok(s >= 0, "%s: agentfsd reaches the keeper on its socket (%s)", what,
	       s >= 0 ? "connected" : strerror(-s));
	if (s < 0)
		return;
	if (pipe(pipefd) != 0 || fstat(pipefd[0], &a) != 0)
		abort();
	r = fdpass_send(s, NULL, 0, "Punit-keeper.pipe", pipefd[0]);
	if (r == 0)
		r = fdpass_send(s, NULL, 0, "L", -1);
	while (r == 0 && fdstore_recv(s, buf, sizeof buf, &fd) > 0) {
		if (strncmp(buf, "F", 1) == 0 && strcmp(buf + 1, "unit-keeper.pipe") == 0 && fd >= 0) {
			listed = true;
			same = fstat(fd, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev;
		}
		if (fd >= 0)
			close(fd);
		if (buf[0] == 'E')
			break;
	}
	tap_ok(listed && same, "%s: what it keeps comes back (listed %d, same pipe %d)", what,
	       listed, same);
	fdpass_send(s, NULL, 0, "R", -1);
	close(s);
	close(pipefd[0]);
	close(pipefd[1]);
}

/* A keeper started by hand, without its socket: it says so and ends at once. */
static void by_hand(void)
{
	char *argv[] = {self, "--keeper", dir, "30", NULL};
	int st = -1, k;
	pid_t pid, w = 0;

	close(3);
	pid = fork();
	if (pid == 0) {
		int nul = open("/dev/null", O_RDWR);

		dup2(nul, 2);
		execv(self, argv);
		_exit(126);
	}
	for (k = 0; k < 200 && (w = waitpid(pid, &st, WNOHANG)) == 0; k++)
		sleep_ms(10);
	if (w == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	tap_ok(w == pid && WIFEXITED(st) && WEXITSTATUS(st) == 1,
	       "a keeper without a listening descriptor 3 ends at once with status 1 (%s)",
	       w == 0 ? "still running after 2 s" : "ended");
}

int main(void)
{
	const char *top = getenv("top_builddir");

	if (geteuid() != 0) {
		printf("1..0 # SKIP the keeper serves root only\n");
		return 77;
	}
	snprintf(self, sizeof self, "%s/src/agentfsd", top != NULL ? top : ".");
	if (access(self, X_OK) != 0) {
		printf("1..0 # SKIP no %s\n", self);
		return 77;
	}
	if (mkdtemp(dir) == NULL)
		abort();
	one("descriptor 3 free", true);
	one("descriptor 3 taken", false);
	close(3);
	one("descriptor 3 free again", true);
	by_hand();
	sleep_ms(100);
	unlink(strcat(strcpy((char[PATH_MAX]){0}, dir), "/keeper-3.sock"));
	unlink(strcat(strcpy((char[PATH_MAX]){0}, dir), "/keeper-n.sock"));
	rmdir(dir);
	return tap_done();
}

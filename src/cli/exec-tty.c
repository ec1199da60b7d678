/* SPDX-License-Identifier: MIT */
/*
 * agentfs exec: the caller's terminal, in the outer agentfs exec. The
 * command never holds it: on a terminal it gets a pty of its own
 * (cmd-exec.c relays between the two).
 */
#include "src/common/agentfs.h"
#include "src/cli/exec.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>

/*
 * What the caller's terminal holds before it goes raw was read in lines:
 * pass it on to the pty now. An end of input among it (^D, as script(1)
 * and the like send when their own input ends) would turn into a NUL byte
 * once raw, which the command's terminal would echo as ^@: it ends our
 * input instead, as it meant. False when the input ended.
 */
bool exec_cooked_input(int master)
{
	struct pollfd p = {STDIN_FILENO, POLLIN, 0};
	char buf[4096];
	ssize_t n;

	while (poll(&p, 1, 0) == 1 && (p.revents & POLLIN)) {
		n = read(STDIN_FILENO, buf, sizeof buf);
		if (n <= 0)
			return false;
		if (write(master, buf, (size_t)n) != n)
			return false;
	}
	return true;
}

/*
 * The caller's terminal among its standard input, output and error, or -1.
 * The command never gets it: with standard input a terminal it gets a pty
 * as its controlling terminal (sb.tty); with only output or error one, a
 * pty for those, relayed, since the caller's terminal is open for reading
 * too (a shell opens it so): the command could read what the person types
 * there meanwhile, or turn its echo off.
 */
int exec_terminal_fd(void)
{
	int fd;

	for (fd = STDIN_FILENO; fd <= STDERR_FILENO; fd++)
		if (isatty(fd))
			return fd;
	return -1;
}

/* A pty for the command, the size of the caller's terminal term; dies if none can be made. */
void exec_pty_open(int term, int *master, int *slave)
{
	struct winsize ws;

	if (ioctl(term, TIOCGWINSZ, &ws) != 0)
		memset(&ws, 0, sizeof ws);
	if (openpty(master, slave, NULL, NULL, &ws) != 0 ||
	    fcntl(*master, F_SETFD, FD_CLOEXEC) != 0)
		die("cannot make a pty: %s", strerror(errno));
}

/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of gitguard/layout.c: where a tree root's .git points, and
 * the common folder a git folder names, read through descriptors with no
 * link followed and a cap. Runs in a temporary folder, without root.
 */
#include "gitguard/gitguard.h"
#include "tests/guard-tap.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

static char top[] = "/tmp/unit-guard-layout.XXXXXX";

/* A folder under top holding name as a file with text (NULL: nothing). */
static int folder(const char *sub, const char *name, const char *text)
{
	char path[PATH_MAX];
	int fd, dfd;

	snprintf(path, sizeof path, "%s/%s", top, sub);
	if (mkdir(path, 0755) != 0 || (dfd = open(path, O_PATH | O_DIRECTORY)) < 0)
		abort();
	if (text != NULL) {
		fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
			abort();
		close(fd);
	}
	return dfd;
}

int main(void)
{
	char out[PATH_MAX], big[8192];
	int fd, r;

	if (mkdtemp(top) == NULL)
		return 99;

	fd = folder("file", ".git", "gitdir: ../main/.git/worktrees/w\n");
	r = guard_layout_gitdir(fd, out, sizeof out);
	tap_ok(r == 0 && strcmp(out, "../main/.git/worktrees/w") == 0,
	       "a gitdir: file gives its path, as written, without the newline (%s)", out);
	close(fd);

	fd = folder("crlf", ".git", "gitdir: /abs/git\r\n");
	r = guard_layout_gitdir(fd, out, sizeof out);
	tap_ok(r == 0 && strcmp(out, "/abs/git") == 0, "CRLF is stripped, as git does");
	close(fd);

	fd = folder("link", ".git", NULL);
	if (symlinkat("/elsewhere/.git", fd, ".git") != 0)
		abort();
	r = guard_layout_gitdir(fd, out, sizeof out);
	tap_ok(r == 0 && strcmp(out, "/elsewhere/.git") == 0, "a .git symlink gives its target");
	r = guard_layout_gitdir(fd, out, 8);
	tap_ok(r == -ENAMETOOLONG, "a target longer than the buffer is refused, not cut");
	close(fd);

	fd = folder("junk", ".git", "not a gitdir line\n");
	tap_ok(guard_layout_gitdir(fd, out, sizeof out) == -EINVAL,
	       "a file in another format: -EINVAL");
	close(fd);

	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	memcpy(big, "gitdir: /a", 10);
	fd = folder("big", ".git", big);
	tap_ok(guard_layout_gitdir(fd, out, sizeof out) == -EFBIG, "a file over 4 KiB: -EFBIG");
	close(fd);

	fd = folder("fifo", ".git", NULL);
	if (mkfifoat(fd, ".git", 0644) != 0)
		abort();
	tap_ok(guard_layout_gitdir(fd, out, sizeof out) == -EINVAL,
	       "a FIFO is not opened to wait for a writer: -EINVAL");
	close(fd);

	fd = folder("dir", ".git", NULL);
	if (mkdirat(fd, ".git", 0755) != 0)
		abort();
	tap_ok(guard_layout_gitdir(fd, out, sizeof out) == -EINVAL,
	       "a .git folder points nowhere else: -EINVAL");
	close(fd);

	fd = folder("none", ".git", NULL);
	tap_ok(guard_layout_gitdir(fd, out, sizeof out) == -ENOENT, "no .git: -ENOENT");
	close(fd);

	fd = folder("common", "commondir", "../..\n");
	r = guard_layout_commondir(fd, out, sizeof out);
	tap_ok(r == 0 && strcmp(out, "../..") == 0, "commondir gives its path, as written");
	close(fd);

	fd = folder("commonlink", "commondir", NULL);
	if (symlinkat("/etc/hostname", fd, "commondir") != 0)
		abort();
	tap_ok(guard_layout_commondir(fd, out, sizeof out) == -EINVAL,
	       "a commondir symlink is not followed");
	close(fd);

	fd = folder("commonempty", "commondir", "\n");
	tap_ok(guard_layout_commondir(fd, out, sizeof out) == -EINVAL,
	       "an empty commondir: -EINVAL");
	close(fd);

	{
		char cmd[PATH_MAX + 16];

		snprintf(cmd, sizeof cmd, "rm -rf '%s'", top);
		if (system(cmd) != 0)
			tap_ok(0, "remove %s", top);
	}
	return tap_done();
}

/* SPDX-License-Identifier: MIT */
/*
 * Layout questions of a caller that mounts a tree root (agentfsd): where
 * the root's `.git` points when it is a file or a symlink (a linked
 * worktree, a submodule, a separate git folder), and which common folder a
 * git folder's commondir names. Read through descriptors, following no
 * link, capped (guard_read_file), parsed as git does (parse.c). The
 * answers are as written: joining and normalising them is the caller's.
 */
#include "gitguard/guard-int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LAYOUT_FILE_MAX 4095 /* a .git or commondir file: a path and a newline */

/* NAME beneath dirfd, read capped and parsed by parse. */
static int read_parsed(int dirfd, const char *name,
		       int (*parse)(const char *, size_t, char *, size_t), char *out, size_t outsz)
{
	char *buf = NULL;
	size_t len = 0;
	int r;

	r = guard_read_file(dirfd, name, LAYOUT_FILE_MAX, &buf, &len, NULL);
	if (r != 0)
		return r;
	r = parse(buf, len, out, outsz);
	free(buf);
	return r;
}

int guard_layout_gitdir(int dirfd, char *out, size_t outsz)
{
	ssize_t n;

	n = readlinkat(dirfd, ".git", out, outsz);
	if (n > 0 && (size_t)n < outsz) {
		out[n] = '\0';
		return 0;
	}
	if (n > 0)
		return -ENAMETOOLONG;
	if (errno != EINVAL) /* EINVAL: not a symlink; read it as a file */
		return -errno;
	return read_parsed(dirfd, ".git", guard_parse_gitfile, out, outsz);
}

int guard_layout_commondir(int gitfd, char *out, size_t outsz)
{
	return read_parsed(gitfd, "commondir", guard_parse_commondir, out, outsz);
}

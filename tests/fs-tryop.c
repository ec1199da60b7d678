/* SPDX-License-Identifier: MIT */
/*
 * fs-tryop: try one filesystem operation and print its result.
 *
 *   fs-tryop OP PATH [PATH2]
 *
 * Prints "OK" or the errno name (EROFS, EACCES, ...) on stdout and exits 0;
 * exits 2 on a usage error.  Two-path operations go PATH -> PATH2 (symlink:
 * a link at PATH2 pointing to PATH).  Operations that need a write fd
 * (write, fallocate) report the open's error if the open fails.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

static int need2(const char *p2)
{
	if (!p2) {
		fprintf(stderr, "fs-tryop: this operation needs two paths\n");
		exit(2);
	}
	return 0;
}

static int try_open(const char *path, int flags)
{
	int fd = open(path, flags, 0644);

	if (fd < 0)
		return -1;
	return close(fd);
}

static int try_write(const char *path)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, "w", 1);
	close(fd);
	return n == 1 ? 0 : -1;
}

static int try_read(const char *path)
{
	char buf[64];
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	return n < 0 ? -1 : 0;
}

static int try_fallocate(const char *path)
{
	int fd = open(path, O_WRONLY), r;

	if (fd < 0)
		return -1;
	r = fallocate(fd, 0, 0, 4096);
	close(fd);
	return r;
}

int main(int argc, char **argv)
{
	const char *op, *p, *p2;
	char buf[256];
	struct stat st;
	int r;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: fs-tryop OP PATH [PATH2]\n");
		return 2;
	}
	op = argv[1];
	p = argv[2];
	p2 = argc == 4 ? argv[3] : NULL;
	errno = 0;
	if (!strcmp(op, "create"))
		r = try_open(p, O_CREAT | O_EXCL | O_WRONLY);
	else if (!strcmp(op, "open-w"))
		r = try_open(p, O_WRONLY);
	else if (!strcmp(op, "open-rw"))
		r = try_open(p, O_RDWR);
	else if (!strcmp(op, "open-trunc"))
		r = try_open(p, O_RDONLY | O_TRUNC);
	else if (!strcmp(op, "open-r"))
		r = try_open(p, O_RDONLY);
	else if (!strcmp(op, "write"))
		r = try_write(p);
	else if (!strcmp(op, "read"))
		r = try_read(p);
	else if (!strcmp(op, "stat"))
		r = lstat(p, &st);
	else if (!strcmp(op, "truncate"))
		r = truncate(p, 1);
	else if (!strcmp(op, "chmod"))
		r = chmod(p, 0600);
	else if (!strcmp(op, "chown"))
		r = lchown(p, 4242, 4242);
	else if (!strcmp(op, "utimens"))
		r = utimensat(AT_FDCWD, p, NULL, AT_SYMLINK_NOFOLLOW);
	else if (!strcmp(op, "mkdir"))
		r = mkdir(p, 0755);
	else if (!strcmp(op, "mknod"))
		r = mknod(p, S_IFREG | 0644, 0);
	else if (!strcmp(op, "mkfifo"))
		r = mkfifo(p, 0644);
	else if (!strcmp(op, "symlink"))
		r = need2(p2) ?: symlink(p, p2);
	else if (!strcmp(op, "link"))
		r = need2(p2) ?: link(p, p2);
	else if (!strcmp(op, "unlink"))
		r = unlink(p);
	else if (!strcmp(op, "rmdir"))
		r = rmdir(p);
	else if (!strcmp(op, "rename"))
		r = need2(p2) ?: rename(p, p2);
	else if (!strcmp(op, "rename-noreplace"))
		r = need2(p2) ?: renameat2(AT_FDCWD, p, AT_FDCWD, p2, RENAME_NOREPLACE);
	else if (!strcmp(op, "rename-exchange"))
		r = need2(p2) ?: renameat2(AT_FDCWD, p, AT_FDCWD, p2, RENAME_EXCHANGE);
	else if (!strcmp(op, "setxattr"))
		r = lsetxattr(p, "user.tryop", "1", 1, 0);
	else if (!strcmp(op, "removexattr"))
		r = lremovexattr(p, "user.tryop");
	else if (!strcmp(op, "getxattr"))
		r = lgetxattr(p, "user.tryop", buf, sizeof(buf)) < 0 ? -1 : 0;
	else if (!strcmp(op, "fallocate"))
		r = try_fallocate(p);
	else {
		fprintf(stderr, "fs-tryop: unknown operation %s\n", op);
		return 2;
	}
	if (r == 0) {
		puts("OK");
	} else {
		const char *name = strerrorname_np(errno);

		puts(name ? name : "E?");
	}
	return 0;
}

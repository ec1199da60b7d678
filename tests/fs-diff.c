/* SPDX-License-Identifier: MIT */
/*
 * fs-diff: a differential tester. Runs the same seeded random sequence of
 * filesystem operations in two folders (a native one and one through an
 * agentfs mount of another native folder), compares each result and errno,
 * then the two trees byte for byte. Several processes run at once, each in
 * its own subfolder with its own seed, so the results stay deterministic.
 *
 *   fs-diff [-p PROCS] [-n OPS] [-s SEED] NATIVE_DIR MOUNT_DIR
 *
 * Prints TAP, one line per process; tests/fs-diff.sh compares the trees.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>

#define NAMES 12
#define MAXFD 8

struct side {
	int dir;           /* the process's subfolder */
	int fds[MAXFD];    /* open files, by slot */
};

static uint64_t rng;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static unsigned pick(unsigned n)
{
	return (unsigned)(next() % n);
}

/* A path of one or two components among a few names, so operations collide. */
static void rand_path(char *buf, size_t len)
{
	static const char *dirs[] = {"", "d0/", "d1/", "d0/e/"};

	snprintf(buf, len, "%sn%u", dirs[pick(4)], pick(NAMES));
}

/* One operation on one side; returns the result or -errno, and data read. */
static long op(struct side *s, unsigned kind, const char *p1, const char *p2, unsigned slot,
	       unsigned a, unsigned b, char *out, size_t outlen)
{
	char buf[4096];
	struct stat st;
	long r = 0;
	int fd;

	memset(buf, 'a' + (int)(a % 26), sizeof buf);
	errno = 0;
	switch (kind) {
	case 0: /* create/open for write */
		fd = openat(s->dir, p1, O_CREAT | O_RDWR | (a & 1 ? O_APPEND : 0) | (a & 2 ? O_TRUNC : 0),
			    0644);
		if (fd < 0)
			return -errno;
		if (s->fds[slot] >= 0)
			close(s->fds[slot]);
		s->fds[slot] = fd;
		return 0;
	case 1: /* write */
		if (s->fds[slot] < 0)
			return -EBADF;
		r = pwrite(s->fds[slot], buf, a % 3000 + 1, b % 20000);
		break;
	case 2: /* read */
		if (s->fds[slot] < 0)
			return -EBADF;
		r = pread(s->fds[slot], buf, a % 3000 + 1, b % 20000);
		if (r > 0)
			snprintf(out, outlen, "%08x", (unsigned)(buf[0] * 31 + buf[r - 1] + r));
		break;
	case 3:
		r = mkdirat(s->dir, p1, 0755);
		break;
	case 4:
		r = unlinkat(s->dir, p1, 0);
		break;
	case 5:
		r = unlinkat(s->dir, p1, AT_REMOVEDIR);
		break;
	case 6:
		r = renameat2(s->dir, p1, s->dir, p2, a % 3 == 0 ? RENAME_NOREPLACE : 0);
		break;
	case 7:
		r = renameat2(s->dir, p1, s->dir, p2, RENAME_EXCHANGE);
		break;
	case 8:
		r = linkat(s->dir, p1, s->dir, p2, 0);
		break;
	case 9:
		r = symlinkat(p2, s->dir, p1);
		break;
	case 10:
		r = fstatat(s->dir, p1, &st, AT_SYMLINK_NOFOLLOW);
		if (r == 0)
			snprintf(out, outlen, "%o %lld %lu", st.st_mode, (long long)st.st_size,
				 (unsigned long)st.st_nlink);
		break;
	case 11: /* truncate through an fd */
		if (s->fds[slot] < 0)
			return -EBADF;
		r = ftruncate(s->fds[slot], a % 30000);
		break;
	case 12:
		r = fchmodat(s->dir, p1, 0600 | (a % 2 ? 0044 : 0), 0);
		break;
	case 13: /* close */
		if (s->fds[slot] < 0)
			return -EBADF;
		r = close(s->fds[slot]);
		s->fds[slot] = -1;
		break;
	case 14:
		r = readlinkat(s->dir, p1, buf, sizeof buf - 1);
		if (r >= 0) {
			buf[r] = '\0';
			snprintf(out, outlen, "%.100s", buf);
		}
		break;
	case 15: /* open O_EXCL */
		fd = openat(s->dir, p1, O_CREAT | O_EXCL | O_WRONLY, 0640);
		if (fd < 0)
			return -errno;
		close(fd);
		return 0;
	}
	return r < 0 ? -errno : r;
}

static const char *op_name[] = {"open", "write", "read", "mkdir", "unlink", "rmdir", "rename",
				"exchange", "link", "symlink", "lstat", "ftruncate", "chmod",
				"close", "readlink", "create-excl"};

/* One process: its own subfolder on both sides, its own seed. */
static int run(int native, int mount, unsigned id, unsigned ops, uint64_t seed, char *why,
	       size_t whylen)
{
	struct side s[2];
	char name[32], p1[64], p2[64], o0[128], o1[128];
	unsigned i, k, kind, slot, a, b;
	long r0, r1;

	snprintf(name, sizeof name, "p%u", id);
	for (k = 0; k < 2; k++) {
		int top = k == 0 ? native : mount;

		if (mkdirat(top, name, 0755) != 0 && errno != EEXIST)
			return snprintf(why, whylen, "mkdir %s: %s", name, strerror(errno)), 1;
		s[k].dir = openat(top, name, O_RDONLY | O_DIRECTORY);
		for (i = 0; i < MAXFD; i++)
			s[k].fds[i] = -1;
	}
	rng = seed * 2654435761u + id * 40503u + 1;
	for (i = 0; i < ops; i++) {
		kind = pick(16);
		rand_path(p1, sizeof p1);
		rand_path(p2, sizeof p2);
		slot = pick(MAXFD);
		a = (unsigned)next();
		b = (unsigned)next();
		o0[0] = o1[0] = '\0';
		r0 = op(&s[0], kind, p1, p2, slot, a, b, o0, sizeof o0);
		r1 = op(&s[1], kind, p1, p2, slot, a, b, o1, sizeof o1);
		if (r0 != r1 || strcmp(o0, o1) != 0) {
			snprintf(why, whylen, "op %u: %s %s %s: native %ld (%s) '%s', mount %ld (%s) '%s'",
				 i, op_name[kind], p1, p2, r0, r0 < 0 ? strerror((int)-r0) : "ok", o0,
				 r1, r1 < 0 ? strerror((int)-r1) : "ok", o1);
			return 1;
		}
	}
	for (k = 0; k < 2; k++)
		for (i = 0; i < MAXFD; i++)
			if (s[k].fds[i] >= 0)
				close(s[k].fds[i]);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned procs = 4, ops = 2000, i, failed = 0;
	uint64_t seed = 1;
	int c, native, mount, status, pfd[64][2];
	pid_t pids[64];
	char why[1024];
	ssize_t n;

	while ((c = getopt(argc, argv, "p:n:s:")) != -1) {
		switch (c) {
		case 'p':
			procs = (unsigned)atoi(optarg);
			break;
		case 'n':
			ops = (unsigned)atoi(optarg);
			break;
		case 's':
			seed = strtoull(optarg, NULL, 10);
			break;
		default:
			fprintf(stderr, "usage: fs-diff [-p PROCS] [-n OPS] [-s SEED] NATIVE MOUNT\n");
			return 2;
		}
	}
	if (argc - optind != 2 || procs < 1 || procs > 64) {
		fprintf(stderr, "usage: fs-diff [-p PROCS] [-n OPS] [-s SEED] NATIVE MOUNT\n");
		return 2;
	}
	native = open(argv[optind], O_RDONLY | O_DIRECTORY);
	mount = open(argv[optind + 1], O_RDONLY | O_DIRECTORY);
	if (native < 0 || mount < 0) {
		perror("open");
		return 2;
	}
	umask(022);
	printf("1..%u\n", procs);
	fflush(stdout);
	for (i = 0; i < procs; i++) {
		if (pipe(pfd[i]) != 0)
			return 2;
		pids[i] = fork();
		if (pids[i] == 0) {
			close(pfd[i][0]);
			why[0] = '\0';
			c = run(native, mount, i, ops, seed, why, sizeof why);
			if (write(pfd[i][1], why, strlen(why)) < 0)
				_exit(3);
			_exit(c);
		}
		close(pfd[i][1]);
	}
	for (i = 0; i < procs; i++) {
		n = read(pfd[i][0], why, sizeof why - 1);
		why[n > 0 ? n : 0] = '\0';
		close(pfd[i][0]);
		waitpid(pids[i], &status, 0);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
			printf("ok %u - process %u: %u operations (seed %llu) give the same results\n",
			       i + 1, i, ops, (unsigned long long)seed);
		} else {
			failed++;
			printf("not ok %u - process %u (seed %llu): %s\n", i + 1, i,
			       (unsigned long long)seed, why);
		}
	}
	return failed ? 1 : 0;
}

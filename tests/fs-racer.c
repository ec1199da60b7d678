/* SPDX-License-Identifier: MIT */
/*
 * fs-racer: the two sides of the symlink-swap race of fs-race.sh.
 *
 *   fs-racer swap DIR NAME LINK SECONDS
 *	On the host: for SECONDS, keep putting the symlink DIR/LINK in the
 *	place of the folder DIR/NAME and back, alternating an atomic
 *	RENAME_EXCHANGE with a rename aside (which also leaves NAME missing for
 *	a moment).  Always ends with NAME the folder and LINK the symlink.
 *	Prints the number of swaps.
 *
 *   fs-racer work DIR SECONDS MAXROUNDS
 *	Through the mount: for SECONDS or MAXROUNDS rounds, create, write,
 *	append, rename, link, symlink, mkdir, chmod, truncate, setxattr and
 *	unlink files by path inside DIR, and write into DIR/existing and
 *	DIR/sub/existing.  Errors are expected while the folder is swapped;
 *	prints "rounds R ok N failed F".
 *
 *   fs-racer g2 DIR_A DIR_B ROUNDS
 *	Two mounts of one folder whose qN/objects exist: for each N, one
 *	thread makes DIR_A/qN/refs while another creates DIR_B/qN/HEAD, both
 *	released together.  Either completes a bare repository's shape, so a
 *	guard that decides each alone must refuse the second (G2).  Prints
 *	"both B one O none Z erofs E": B rounds where both were made.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* stay swapped for a moment without a system call */
static void spin(int n)
{
	for (volatile int i = 0; i < n; i++)
		;
}

static int do_swap(const char *dir, const char *name, const char *link, double seconds)
{
	char aside[PATH_MAX];
	double end = now() + seconds;
	long swaps = 0;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);

	if (dfd < 0) {
		perror(dir);
		return 1;
	}
	snprintf(aside, sizeof(aside), "%s.aside", name);
	while (now() < end) {
		if (swaps % 2 == 0) {
			if (renameat2(dfd, name, dfd, link, RENAME_EXCHANGE) < 0) {
				perror("exchange");
				return 1;
			}
			spin(20000);
			if (renameat2(dfd, name, dfd, link, RENAME_EXCHANGE) < 0) {
				perror("exchange back");
				return 1;
			}
		} else {
			if (renameat(dfd, name, dfd, aside) < 0 ||
			    renameat(dfd, link, dfd, name) < 0) {
				perror("rename aside");
				return 1;
			}
			spin(20000);
			if (renameat(dfd, name, dfd, link) < 0 ||
			    renameat(dfd, aside, dfd, name) < 0) {
				perror("rename back");
				return 1;
			}
		}
		swaps++;
		/* leave the real folder in place most of the time, so the
		 * worker's operations mostly succeed and race the swaps */
		usleep(100 + 100 * (swaps % 5));
	}
	printf("swaps %ld\n", swaps);
	return 0;
}

static bool put(const char *path, int flags, const char *data)
{
	int fd = open(path, flags | O_WRONLY, 0644);
	bool good;

	if (fd < 0)
		return false;
	good = write(fd, data, strlen(data)) == (ssize_t)strlen(data);
	return close(fd) == 0 && good;
}

/*
 * Fresh names, so that every one is looked up by the server while it may be
 * the symlink: qN appears first as a symlink to the outside, then the real
 * folder qN.real is exchanged into its place and the symlink removed.
 */
static int do_fresh_swap(const char *dir, double seconds)
{
	char q[64], real[64];
	double end = now() + seconds;
	long n;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);

	if (dfd < 0) {
		perror(dir);
		return 1;
	}
	for (n = 0; now() < end; n++) {
		snprintf(q, sizeof(q), "q%ld", n);
		snprintf(real, sizeof(real), "q%ld.real", n);
		if (mkdirat(dfd, real, 0755) < 0 || symlinkat("../outside", dfd, q) < 0) {
			perror("fresh: make");
			return 1;
		}
		usleep(300 + 300 * (n % 4));
		if (renameat2(dfd, real, dfd, q, RENAME_EXCHANGE) < 0 ||
		    unlinkat(dfd, real, 0) < 0) {
			perror("fresh: exchange");
			return 1;
		}
		usleep(200);
	}
	printf("fresh %ld\n", n);
	return 0;
}

/*
 * Follow do_fresh_swap: as soon as qN shows on the host (HOSTDIR), make a
 * file and a folder in it through the mount (MNTDIR), so the first lookup
 * of qN comes while it is likely still the symlink.
 */
static int do_fresh_work(const char *dir, const char *hostdir, double seconds)
{
	char a[PATH_MAX];
	double end = now() + seconds;
	long n, good = 0, bad = 0, early = 0;
	struct stat st;

	for (n = 0; now() < end; n++) {
		snprintf(a, sizeof(a), "%s/q%ld", hostdir, n);
		while (lstat(a, &st) < 0 && now() < end)
			;
		if (S_ISLNK(st.st_mode))
			early++;
		for (int tries = 0; tries < 50 && now() < end; tries++) {
			snprintf(a, sizeof(a), "%s/q%ld/f", dir, n);
			if (put(a, O_CREAT | O_TRUNC, "fresh\n")) {
				good++;
				snprintf(a, sizeof(a), "%s/q%ld/m", dir, n);
				mkdir(a, 0755) == 0 ? good++ : bad++;
				break;
			}
			bad++;
			usleep(100);
		}
	}
	printf("fresh-rounds %ld ok %ld failed %ld while-symlink %ld\n", n, good, bad, early);
	return 0;
}

static bool putat(int dfd, const char *name, int flags, const char *data)
{
	int fd = openat(dfd, name, flags | O_WRONLY, 0644);
	bool good;

	if (fd < 0)
		return false;
	good = write(fd, data, strlen(data)) == (ssize_t)strlen(data);
	return close(fd) == 0 && good;
}

static int do_work(const char *dir, double seconds, long maxrounds)
{
	char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX];
	double end = now() + seconds;
	long rounds = 0, good = 0, bad = 0, at_good = 0, at_bad = 0;
	int dfd;

	/* a folder fd taken while DIR is the real folder: operations relative
	 * to it name the folder's inode, never its path */
	while ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW)) < 0 && now() < end)
		usleep(1000);
	if (dfd < 0) {
		perror(dir);
		return 1;
	}

#define TRY(expr) ((expr) ? good++ : bad++)
	while (rounds < maxrounds && now() < end) {
		long i = rounds++;

		snprintf(a, sizeof(a), "%s/w%ld", dir, i);
		snprintf(b, sizeof(b), "%s/r%ld", dir, i);
		TRY(put(a, O_CREAT | O_EXCL, "racer data\n"));
		TRY(rename(a, b) == 0);
		TRY(put(b, O_APPEND, "appended\n"));
		TRY(chmod(b, 0600) == 0);
		TRY(setxattr(b, "user.racer", "1", 1, 0) == 0);
		TRY(truncate(b, 4) == 0);
		snprintf(c, sizeof(c), "%s/h%ld", dir, i);
		TRY(link(b, c) == 0);
		TRY(unlink(c) == 0);
		snprintf(c, sizeof(c), "%s/l%ld", dir, i);
		TRY(symlink("r0", c) == 0);
		snprintf(c, sizeof(c), "%s/m%ld", dir, i);
		TRY(mkdir(c, 0755) == 0);
		snprintf(c, sizeof(c), "%s/sub/s%ld", dir, i);
		TRY(put(c, O_CREAT | O_TRUNC, "in sub\n"));
		snprintf(c, sizeof(c), "%s/existing", dir);
		TRY(put(c, O_APPEND, "x"));
		snprintf(c, sizeof(c), "%s/sub/existing", dir);
		TRY(put(c, O_TRUNC, "overwritten\n"));

		snprintf(a, sizeof(a), "fw%ld", i);
		snprintf(b, sizeof(b), "fr%ld", i);
#undef TRY
	/* what failed, and why, for the first few: a failure here is a bug to find */
#define TRY(expr)                                                                          \
	((expr) ? at_good++                                                                \
		: (at_bad < 5 ? fprintf(stderr, "at-failed: %s: %s (round %ld)\n", #expr,  \
					strerror(errno), i)                                \
			      : 0,                                                         \
		   at_bad++))
		TRY(putat(dfd, a, O_CREAT | O_EXCL, "racer data\n"));
		TRY(renameat(dfd, a, dfd, b) == 0);
		TRY(putat(dfd, b, O_APPEND, "appended\n"));
		TRY(fchmodat(dfd, b, 0600, 0) == 0);
		snprintf(c, sizeof(c), "fh%ld", i);
		TRY(linkat(dfd, b, dfd, c, 0) == 0);
		TRY(unlinkat(dfd, c, 0) == 0);
		snprintf(c, sizeof(c), "fl%ld", i);
		TRY(symlinkat("r0", dfd, c) == 0);
		snprintf(c, sizeof(c), "fm%ld", i);
		TRY(mkdirat(dfd, c, 0755) == 0);
		TRY(putat(dfd, "existing", O_APPEND, "y"));
		TRY(putat(dfd, "sub/existing", O_TRUNC, "overwritten at\n"));
#undef TRY
#define TRY(expr) ((expr) ? good++ : bad++)
	}
	close(dfd);
#undef TRY
	printf("rounds %ld ok %ld failed %ld at-ok %ld at-failed %ld\n", rounds, good, bad, at_good,
	       at_bad);
	return 0;
}

struct g2_side {
	const char *dir;
	bool head;
	long rounds;
	pthread_barrier_t *bar;
	char *made; /* per round: 1 if this side's entry was made */
	long erofs;
};

static void *g2_run(void *arg)
{
	struct g2_side *s = arg;
	char path[PATH_MAX];
	int fd;

	for (long i = 0; i < s->rounds; i++) {
		pthread_barrier_wait(s->bar);
		if (s->head) {
			snprintf(path, sizeof path, "%s/q%ld/HEAD", s->dir, i);
			fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
			s->made[i] = fd >= 0;
			if (fd >= 0)
				close(fd);
		} else {
			snprintf(path, sizeof path, "%s/q%ld/refs", s->dir, i);
			s->made[i] = mkdir(path, 0755) == 0;
		}
		if (!s->made[i] && errno == EROFS)
			s->erofs++;
	}
	return NULL;
}

static int do_g2(const char *a, const char *b, long rounds)
{
	struct g2_side sa = {a, false, rounds, NULL, calloc(rounds, 1), 0};
	struct g2_side sb = {b, true, rounds, NULL, calloc(rounds, 1), 0};
	pthread_barrier_t bar;
	pthread_t ta, tb;
	long both = 0, one = 0, none = 0;

	if (!sa.made || !sb.made)
		return 2;
	pthread_barrier_init(&bar, NULL, 2);
	sa.bar = sb.bar = &bar;
	pthread_create(&ta, NULL, g2_run, &sa);
	pthread_create(&tb, NULL, g2_run, &sb);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	for (long i = 0; i < rounds; i++) {
		int n = sa.made[i] + sb.made[i];

		both += n == 2;
		one += n == 1;
		none += n == 0;
	}
	printf("both %ld one %ld none %ld erofs %ld\n", both, one, none, sa.erofs + sb.erofs);
	free(sa.made);
	free(sb.made);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 6 && !strcmp(argv[1], "swap"))
		return do_swap(argv[2], argv[3], argv[4], atof(argv[5]));
	if (argc == 5 && !strcmp(argv[1], "work"))
		return do_work(argv[2], atof(argv[3]), atol(argv[4]));
	if (argc == 4 && !strcmp(argv[1], "fresh-swap"))
		return do_fresh_swap(argv[2], atof(argv[3]));
	if (argc == 5 && !strcmp(argv[1], "fresh-work"))
		return do_fresh_work(argv[2], argv[3], atof(argv[4]));
	if (argc == 5 && !strcmp(argv[1], "g2"))
		return do_g2(argv[2], argv[3], atol(argv[4]));
	fprintf(stderr, "usage: fs-racer swap DIR NAME LINK SECONDS\n"
			"       fs-racer work DIR SECONDS MAXROUNDS\n"
			"       fs-racer fresh-swap DIR SECONDS\n"
			"       fs-racer fresh-work MNTDIR HOSTDIR SECONDS\n"
			"       fs-racer g2 DIR_A DIR_B ROUNDS\n");
	return 2;
}

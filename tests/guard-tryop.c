/* SPDX-License-Identifier: MIT */
/*
 * guard-tryop: the attacker's side of tests/guard-attack.sh.
 *
 *   guard-tryop put PATH TEXT      open(O_WRONLY|O_CREAT|O_TRUNC, 0755), write TEXT
 *   guard-tryop append PATH TEXT   open(O_WRONLY|O_APPEND), write TEXT
 *   guard-tryop create PATH TEXT   open(O_WRONLY|O_CREAT|O_EXCL, 0755), write TEXT
 *   guard-tryop chmodx PATH        chmod 0755
 *	Print "OK" or the errno name (EROFS, ...) and exit 0; 2 on misuse.
 *
 *   guard-tryop race-rename SECONDS ROOT
 *	For SECONDS, inside ROOT (a mount): swap the plain folders race/a and
 *	race/b, and try to move the folders around a git folder (deep ->
 *	deep-x, deep/nest -> race/a/nest, race/a <-> deep exchanged,
 *	deep/nest/.git -> race/b/.git) and to plant symlinks into it.  Prints
 *	"swaps N forbidden F" where F counts the forbidden moves that
 *	succeeded (each is undone at once so the race goes on).
 *
 *   guard-tryop race-write SECONDS ROOT TEXT
 *	For SECONDS, keep trying to create and write TEXT as pre-commit in
 *	every path that could reach deep/nest/.git/hooks while the folders move
 *	(deep-x/..., race/a/nest/..., race/b/.git/hooks/..., race/l/...), and
 *	a new .git in the moving folders.  Prints "tries N planted P" where P
 *	counts the writes that succeeded.
 *
 *   guard-tryop race-bare SECONDS DIR
 *	For SECONDS, make DIR/bN/objects and then, from two threads released
 *	together, mkdir DIR/bN/refs and create DIR/bN/HEAD: one of them
 *	completes a bare-shaped folder (rule G2) and must be refused, so both
 *	succeeding is a hole.  Prints "rounds N both B" (B rounds where both
 *	succeeded).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int put(const char *path, int flags, const char *text)
{
	int fd = open(path, flags, 0755), e;
	size_t len = strlen(text);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, text, len);
	e = errno;
	close(fd);
	errno = e;
	return n == (ssize_t)len ? 0 : -1;
}

static int report(int r)
{
	const char *name;

	if (r == 0) {
		puts("OK");
		return 0;
	}
	name = strerrorname_np(errno);
	puts(name ? name : "E?");
	return 0;
}

static int race_rename(double secs, const char *root)
{
	char a[4096], b[4096], t[4096], deep[4096], deepx[4096], nest[4096], anest[4096], git[4096],
		bgit[4096], l[4096];
	double end = now() + secs;
	long swaps = 0, forbidden = 0;

	snprintf(a, sizeof(a), "%s/race/a", root);
	snprintf(b, sizeof(b), "%s/race/b", root);
	snprintf(t, sizeof(t), "%s/race/t", root);
	snprintf(deep, sizeof(deep), "%s/deep", root);
	snprintf(deepx, sizeof(deepx), "%s/deep-x", root);
	snprintf(nest, sizeof(nest), "%s/deep/nest", root);
	snprintf(anest, sizeof(anest), "%s/race/a/nest", root);
	snprintf(git, sizeof(git), "%s/deep/nest/.git", root);
	snprintf(bgit, sizeof(bgit), "%s/race/b/.git", root);
	snprintf(l, sizeof(l), "%s/race/l", root);
	while (now() < end) {
		/* allowed: plain folders move */
		if (rename(a, t) == 0) {
			rename(b, a);
			rename(t, b);
			swaps++;
		}
		if (renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) == 0)
			swaps++;
		/* forbidden: the folders on the way to a git folder, and the folder */
		if (rename(deep, deepx) == 0) {
			forbidden++;
			rename(deepx, deep);
		}
		if (rename(nest, anest) == 0) {
			forbidden++;
			rename(anest, nest);
		}
		if (renameat2(AT_FDCWD, a, AT_FDCWD, deep, RENAME_EXCHANGE) == 0) {
			forbidden++;
			renameat2(AT_FDCWD, a, AT_FDCWD, deep, RENAME_EXCHANGE);
		}
		if (rename(git, bgit) == 0) {
			forbidden++;
			rename(bgit, git);
		}
		if (symlink("../deep/nest/.git/hooks", l) == 0) {
			forbidden++;
			unlink(l);
		}
		if (symlink("a/../../deep/nest/.git/hooks", l) == 0) {
			forbidden++;
			unlink(l);
		}
	}
	printf("swaps %ld forbidden %ld\n", swaps, forbidden);
	return 0;
}

static int race_write(double secs, const char *root, const char *text)
{
	static const char *const paths[] = {
		"deep/nest/.git/hooks/pre-commit",
		"deep-x/nest/.git/hooks/pre-commit",
		"race/a/nest/.git/hooks/pre-commit",
		"race/b/.git/hooks/pre-commit",
		"race/l/pre-commit",
		"race/a/.git/hooks/pre-commit",
		"race/t/.git/hooks/pre-commit",
	};
	static const char *const dirs[] = {"race/a/.git", "race/b/.git", "race/t/.git"};
	char p[4096];
	double end = now() + secs;
	long tries = 0, planted = 0;
	size_t i;

	while (now() < end) {
		for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
			snprintf(p, sizeof(p), "%s/%s", root, paths[i]);
			tries++;
			if (put(p, O_WRONLY | O_CREAT | O_TRUNC, text) == 0) {
				planted++;
				fprintf(stderr, "planted %s\n", paths[i]);
			}
		}
		for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
			snprintf(p, sizeof(p), "%s/%s", root, dirs[i]);
			tries++;
			if (mkdir(p, 0755) == 0) {
				planted++;
				fprintf(stderr, "made %s\n", dirs[i]);
			}
		}
	}
	printf("tries %ld planted %ld\n", tries, planted);
	return 0;
}

struct bare_arg {
	pthread_barrier_t *bar;
	char path[4096];
	int is_dir;
	int ok;
};

static void *bare_thread(void *p)
{
	struct bare_arg *a = p;

	pthread_barrier_wait(a->bar);
	if (a->is_dir)
		a->ok = mkdir(a->path, 0755) == 0;
	else
		a->ok = put(a->path, O_WRONLY | O_CREAT | O_EXCL, "ref: refs/heads/main\n") == 0;
	return NULL;
}

static int race_bare(double secs, const char *dir)
{
	double end = now() + secs;
	long rounds = 0, both = 0;
	char b[2048], o[4096];

	if (strlen(dir) > 1024) {
		fprintf(stderr, "guard-tryop: %s: path too long\n", dir);
		return 2;
	}
	while (now() < end) {
		pthread_barrier_t bar;
		struct bare_arg x = {.is_dir = 1}, y = {.is_dir = 0};
		pthread_t tx, ty;

		snprintf(b, sizeof(b), "%s/b%ld", dir, rounds);
		snprintf(o, sizeof(o), "%s/objects", b);
		if (mkdir(b, 0755) || mkdir(o, 0755)) {
			perror(b);
			return 1;
		}
		snprintf(x.path, sizeof(x.path), "%s/refs", b);
		snprintf(y.path, sizeof(y.path), "%s/HEAD", b);
		pthread_barrier_init(&bar, NULL, 2);
		x.bar = y.bar = &bar;
		pthread_create(&tx, NULL, bare_thread, &x);
		pthread_create(&ty, NULL, bare_thread, &y);
		pthread_join(tx, NULL);
		pthread_join(ty, NULL);
		pthread_barrier_destroy(&bar);
		rounds++;
		if (x.ok && y.ok) {
			both++;
			fprintf(stderr, "bare-shaped folder made: %s\n", b);
		}
	}
	printf("rounds %ld both %ld\n", rounds, both);
	return 0;
}

int main(int argc, char **argv)
{
	const char *op;

	if (argc < 3)
		goto usage;
	op = argv[1];
	errno = 0;
	if (!strcmp(op, "put") && argc == 4)
		return report(put(argv[2], O_WRONLY | O_CREAT | O_TRUNC, argv[3]));
	if (!strcmp(op, "append") && argc == 4)
		return report(put(argv[2], O_WRONLY | O_APPEND, argv[3]));
	if (!strcmp(op, "create") && argc == 4)
		return report(put(argv[2], O_WRONLY | O_CREAT | O_EXCL, argv[3]));
	if (!strcmp(op, "chmodx") && argc == 3)
		return report(chmod(argv[2], 0755));
	if (!strcmp(op, "race-rename") && argc == 4)
		return race_rename(atof(argv[2]), argv[3]);
	if (!strcmp(op, "race-write") && argc == 5)
		return race_write(atof(argv[2]), argv[3], argv[4]);
	if (!strcmp(op, "race-bare") && argc == 4)
		return race_bare(atof(argv[2]), argv[3]);
usage:
	fprintf(stderr, "usage: guard-tryop put|append|create PATH TEXT | chmodx PATH |\n"
			"       race-rename SECONDS ROOT | race-write SECONDS ROOT TEXT |\n"
			"       race-bare SECONDS DIR\n");
	return 2;
}

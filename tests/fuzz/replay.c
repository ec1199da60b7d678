/* SPDX-License-Identifier: MIT */
/*
 * Replays saved inputs through a fuzz target's entry point, without
 * libFuzzer, as a TAP test for `make check`: one "ok" per input.  Each input
 * runs in a child process, so an input that crashes is reported as "not ok"
 * and the others still run.  An input whose name starts with "open-" is a
 * known, not yet fixed bug: its failure is reported as TODO, which does not
 * fail the suite (no target tolerates a bug: every input runs the same).  An input that runs longer
 * than FUZZ_REPLAY_TIMEOUT seconds (default 5) fails: every entry point
 * here must answer a 1 MiB input in well under that.
 *
 * Usage: replay-TARGET [FILE|FOLDER...]; without arguments it replays
 * $top_srcdir/tests/fuzz/regress-TARGET/ and corpus-TARGET/.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "tests/fuzz/fuzz.h"

#ifndef FUZZ_TARGET
#error FUZZ_TARGET must name the target
#endif

int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

struct files {
	char **v;
	size_t n;
};

static void add(struct files *f, const char *path)
{
	char **v = realloc(f->v, (f->n + 1) * sizeof *v);

	if (v == NULL || (v[f->n] = strdup(path)) == NULL) {
		perror("replay");
		exit(99);
	}
	f->v = v;
	f->n++;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file of DIR (not dotfiles), or DIR itself if it is a file */
static void collect(struct files *f, const char *dir, bool must)
{
	char path[PATH_MAX];
	struct dirent *de;
	struct stat st;
	DIR *d;

	if (stat(dir, &st) != 0) {
		if (must) {
			fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
			exit(99);
		}
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		add(f, dir);
		return;
	}
	d = opendir(dir);
	if (d == NULL) {
		fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
		exit(99);
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
			add(f, path);
	}
	closedir(d);
}

static uint8_t *slurp(const char *path, size_t *len)
{
	uint8_t *buf = NULL, *nb;
	size_t n = 0, cap = 0;
	ssize_t r;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	for (;;) {
		if (n == cap) {
			cap = cap ? cap * 2 : 4096;
			if ((nb = realloc(buf, cap)) == NULL)
				break;
			buf = nb;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	/* an exact-size copy, as libFuzzer hands it over */
	nb = malloc(n ? n : 1);
	if (nb != NULL)
		memcpy(nb, buf, n);
	free(buf);
	*len = n;
	return nb;
}

int main(int argc, char **argv)
{
	struct files f = {0};
	const char *top = getenv("top_srcdir");
	char dir[PATH_MAX];
	const char *tmo = getenv("FUZZ_REPLAY_TIMEOUT");
	unsigned timeout = tmo != NULL && atoi(tmo) > 0 ? (unsigned)atoi(tmo) : 5;
	int i, status, fails = 0;
	size_t k;

	if (LLVMFuzzerInitialize != NULL)
		LLVMFuzzerInitialize(&argc, &argv);
	if (argc > 1) {
		for (i = 1; i < argc; i++)
			collect(&f, argv[i], true);
	} else {
		if (top == NULL)
			top = ".";
		snprintf(dir, sizeof dir, "%s/tests/fuzz/regress-%s", top, FUZZ_TARGET);
		collect(&f, dir, false);
		snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus-%s", top, FUZZ_TARGET);
		collect(&f, dir, false);
	}
	qsort(f.v, f.n, sizeof *f.v, cmp);
	if (f.n == 0) {
		printf("1..0 # SKIP no inputs for %s\n", FUZZ_TARGET);
		return 77;
	}
	printf("1..%zu\n", f.n);
	fflush(stdout);
	for (k = 0; k < f.n; k++) {
		const char *base = strrchr(f.v[k], '/') ? strrchr(f.v[k], '/') + 1 : f.v[k];
		bool open_bug = strncmp(base, "open-", 5) == 0;
		pid_t pid = fork();

		if (pid < 0) {
			perror("fork");
			return 99;
		}
		if (pid == 0) {
			size_t len = 0;
			uint8_t *data = slurp(f.v[k], &len);

			alarm(timeout);
			if (data == NULL) {
				fprintf(stderr, "replay: %s: cannot read\n", f.v[k]);
				_exit(98);
			}
			LLVMFuzzerTestOneInput(data, len);
			free(data);
			fflush(NULL);
			_exit(0);
		}
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
			printf("ok %zu - %s %s\n", k + 1, FUZZ_TARGET, f.v[k]);
		} else {
			printf("not ok %zu - %s %s (%s %d%s)%s\n", k + 1, FUZZ_TARGET, f.v[k],
			       WIFSIGNALED(status) ? "signal" : "exit",
			       WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status),
			       WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM ? ", too slow" : "",
			       open_bug ? " # TODO known bug, not fixed yet" : "");
			if (!open_bug)
				fails++;
		}
		fflush(stdout);
	}
	for (k = 0; k < f.n; k++)
		free(f.v[k]);
	free(f.v);
	return fails ? 1 : 0;
}

/* SPDX-License-Identifier: MIT */
/* gitguard/ggutil.h's descriptor helpers (fdio.c) and the doubling array (grow.c). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gitguard/ggutil.h"
#include "tests/guard-tap.h"

static char top[PATH_MAX];

static void put(const char *rel, const char *text)
{
	char p[PATH_MAX * 2];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", top, rel);
	f = fopen(p, "w");
	if (!f || fputs(text, f) < 0 || fclose(f)) {
		perror(p);
		exit(99);
	}
}

/* gg_open_nofollow(topfd, path, beneath) gives an fd (want 0) or -1 with errno want */
static void open_is(int topfd, const char *path, bool beneath, int want)
{
	int fd = gg_open_nofollow(topfd, path, O_RDONLY, beneath);
	int e = errno;

	if (want == 0)
		tap_ok(fd >= 0, "open \"%s\"%s: opened (errno %d)", path, beneath ? " beneath" : "",
		       fd < 0 ? e : 0);
	else
		tap_ok(fd < 0 && e == want, "open \"%s\"%s: errno %d (got fd %d errno %d)", path,
		       beneath ? " beneath" : "", want, fd, fd < 0 ? e : 0);
	if (fd >= 0) {
		tap_ok((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0, "open \"%s\": close-on-exec", path);
		close(fd);
	}
}

static void test_open(int topfd)
{
	char abs[PATH_MAX * 2];

	open_is(topfd, "d/f", false, 0);
	open_is(topfd, "d/./f", true, 0);
	open_is(topfd, "d/../d/f", true, 0);
	open_is(topfd, "l/f", false, ELOOP);
	open_is(topfd, "d/lf", false, ELOOP);
	open_is(topfd, "../x", true, EXDEV);
	open_is(topfd, "d/../../x", true, EXDEV);
	snprintf(abs, sizeof(abs), "%s/d/f", top);
	open_is(topfd, abs, false, 0);
	open_is(topfd, abs, true, EXDEV);
	open_is(topfd, "d/missing", false, ENOENT);
}

static void test_read(int topfd)
{
	struct stat st;
	char *buf = NULL;
	size_t len = 0;
	int rc, dfd;

	dfd = openat(topfd, "d", O_PATH | O_DIRECTORY | O_CLOEXEC);
	rc = guard_read_file(dfd, "f", 64, &buf, &len, &st);
	tap_ok(rc == 0 && len == 6 && !strcmp(buf, "hello\n") && st.st_size == 6,
	       "read d/f: 6 bytes, NUL-terminated (rc %d)", rc);
	free(buf);
	rc = guard_read_file(dfd, "f", 5, &buf, &len, NULL);
	tap_ok(rc == -EFBIG, "read d/f capped at 5: -EFBIG (rc %d)", rc);
	rc = guard_read_file(dfd, "f", 6, &buf, &len, NULL);
	tap_ok(rc == 0 && len == 6, "read d/f capped at its size: read (rc %d)", rc);
	if (!rc)
		free(buf);
	rc = guard_read_file(dfd, "lf", 64, &buf, &len, NULL);
	tap_ok(rc == -EINVAL, "read the symlink d/lf: -EINVAL (rc %d)", rc);
	rc = guard_read_file(dfd, "fifo", 64, &buf, &len, NULL);
	tap_ok(rc == -EINVAL, "read the FIFO d/fifo: -EINVAL, not blocked (rc %d)", rc);
	rc = guard_read_file(dfd, ".", 64, &buf, &len, NULL);
	tap_ok(rc == -EISDIR || rc == -EINVAL, "read a folder: refused (rc %d)", rc);
	rc = guard_read_file(dfd, "missing", 64, &buf, &len, NULL);
	tap_ok(rc == -ENOENT, "read a missing file: -ENOENT (rc %d)", rc);
	close(dfd);
}

static void test_grow(void)
{
	size_t alloc = 0, i;
	int *v = NULL;
	bool ok = true;

	tap_ok(gg_grow(&v, &alloc, 1, sizeof(*v), 8) == 0 && alloc == 8 && v, "grow from 0: MIN");
	for (i = 0; i < 8; i++)
		v[i] = (int)i;
	tap_ok(gg_grow(&v, &alloc, 8, sizeof(*v), 8) == 0 && alloc == 8, "enough room: unchanged");
	tap_ok(gg_grow(&v, &alloc, 9, sizeof(*v), 8) == 0 && alloc == 16, "one more: doubled");
	tap_ok(gg_grow(&v, &alloc, 100, sizeof(*v), 8) == 0 && alloc == 128,
	       "many more: doubled until they fit");
	for (i = 0; i < 8; i++)
		ok = ok && v[i] == (int)i;
	tap_ok(ok, "contents kept");
	tap_ok(gg_grow(&v, &alloc, SIZE_MAX / 2, sizeof(*v), 8) == -ENOMEM && alloc == 128 && v,
	       "an overflowing size: -ENOMEM, array as it was");
	free(v);
}

int main(void)
{
	char p[PATH_MAX * 2];
	int topfd;

	snprintf(top, sizeof(top), "%s/unit-ggutil.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(top))
		return 99;
	snprintf(p, sizeof(p), "%s/d", top);
	mkdir(p, 0755);
	put("d/f", "hello\n");
	snprintf(p, sizeof(p), "%s/l", top);
	if (symlink("d", p))
		return 99;
	snprintf(p, sizeof(p), "%s/d/lf", top);
	if (symlink("f", p))
		return 99;
	snprintf(p, sizeof(p), "%s/d/fifo", top);
	if (mkfifo(p, 0644))
		return 99;
	topfd = open(top, O_PATH | O_DIRECTORY | O_CLOEXEC);
	test_open(topfd);
	test_read(topfd);
	test_grow();
	close(topfd);
	snprintf(p, sizeof(p), "rm -rf '%s'", top);
	if (system(p))
		return 99;
	{
		static const struct {
			const char *in, *want;
		} esc[] = {
			{"plain/path.c", "plain/path.c"},
			{"a\nb", "a\\nb"},
			{"t\tx\\y", "t\\tx\\\\y"},
			{"\033[2K", "\\x1b[2K"},
			{"del\177", "del\\x7f"},
			{"caf\xc3\xa9 \xe2\x82\xac", "caf\xc3\xa9 \xe2\x82\xac"},
			{"c1\xc2\x9b", "c1\\xc2\\x9b"},
			{"bad\xff\xc3", "bad\\xff\\xc3"},
			{"over\xc0\xaf", "over\\xc0\\xaf"},
			{"evil\xe2\x80\xaegpj.sh", "evil\\u202egpj.sh"},
			{"\xe2\x81\xa6x\xe2\x81\xa9\xd8\x9c", "\\u2066x\\u2069\\u061c"},
			{"\xe2\x80\x8fm\xe2\x80\x8b", "\\u200fm\xe2\x80\x8b"},
		};
		char out[64];
		size_t i;

		for (i = 0; i < sizeof esc / sizeof esc[0]; i++) {
			gg_escape(esc[i].in, out, sizeof out);
			tap_ok(!strcmp(out, esc[i].want), "gg_escape case %zu", i);
		}
		gg_escape("\n\n\n\n", out, 6);
		tap_ok(!strcmp(out, "\\n\\n"), "gg_escape truncates between escapes");
	}
	return tap_done();
}

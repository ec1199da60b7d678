/* SPDX-License-Identifier: MIT */
/*
 * benchtool: data generators and the small-file churn workload for bench/run.
 *
 *   benchtool tree DIR NFILES        nested tree of small source-like files
 *   benchtool cproj DIR NFILES       C project: NFILES .c files, a header, a Makefile
 *   benchtool churn DIR NFILES       create+write, stat, then unlink NFILES files
 *   benchtool bigfile FILE MIB       FILE of MIB MiB of pseudo-random bytes
 *   benchtool probe FILE SECONDS     for bench/restart: statx FILE with
 *                                    AT_STATX_FORCE_SYNC (a request to the
 *                                    server every time) every 5 ms until SECONDS pass or
 *                                    FILE.stop exists; print each call slower
 *                                    than 2 ms as "END_NS DURATION_US" (monotonic)
 *   benchtool now                    CLOCK_MONOTONIC in ns, as probe prints it
 *
 * Built by bench/run with plain `cc -O2`; not part of the package build.
 */
#define _GNU_SOURCE /* statx */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("benchtool: ", stderr);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, ": %s\n", strerror(errno));
	va_end(ap);
	exit(1);
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void mkdir_or_die(const char *p)
{
	if (mkdir(p, 0755) < 0 && errno != EEXIST)
		die("mkdir %s", p);
}

static void write_file(const char *path, const char *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);

	if (fd < 0)
		die("create %s", path);
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0)
			die("write %s", path);
		buf += n;
		len -= (size_t)n;
	}
	if (close(fd) < 0)
		die("close %s", path);
}

/* Source-like text of about `size` bytes. */
static size_t fill_text(char *buf, size_t size, unsigned id)
{
	size_t len = 0;
	unsigned line = 0;

	len += (size_t)snprintf(buf, size, "/* generated file %u */\n#include <stdio.h>\n\n", id);
	while (len + 80 < size) {
		len += (size_t)snprintf(buf + len, size - len,
		                        "static int v%u_%u = %u; /* %016llx */\n", id, line,
		                        (unsigned)(next() % 100000), (unsigned long long)next());
		line++;
	}
	return len;
}

/*
 * A tree shaped like a source checkout: top folders of 20 subfolders, 50 files
 * per subfolder (so 1,000 files per top folder), file sizes 200 B..8 KiB.
 */
static int cmd_tree(const char *dir, long nfiles)
{
	char path[4096], buf[8192];
	long i;

	mkdir_or_die(dir);
	for (i = 0; i < nfiles; i++) {
		long top = i / 1000, sub = (i / 50) % 20, f = i % 50;
		size_t size = 200 + (size_t)(next() % (sizeof buf - 200));

		if (i % 1000 == 0) {
			snprintf(path, sizeof path, "%s/d%03ld", dir, top);
			mkdir_or_die(path);
		}
		if (i % 50 == 0) {
			snprintf(path, sizeof path, "%s/d%03ld/s%02ld", dir, top, sub);
			mkdir_or_die(path);
		}
		snprintf(path, sizeof path, "%s/d%03ld/s%02ld/f%02ld.c", dir, top, sub, f);
		write_file(path, buf, fill_text(buf, size, (unsigned)i));
	}
	return 0;
}

/* A C project: NFILES small translation units of a few functions each. */
static int cmd_cproj(const char *dir, long nfiles)
{
	char path[4096], buf[16384];
	FILE *mk;
	size_t len;
	long i;
	int j;

	mkdir_or_die(dir);
	snprintf(path, sizeof path, "%s/common.h", dir);
	len = (size_t)snprintf(buf, sizeof buf,
	                       "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
	                       "struct item { int key; double val; char name[32]; };\n"
	                       "int sum_items(const struct item *it, int n);\n");
	write_file(path, buf, len);
	for (i = 0; i < nfiles; i++) {
		len = (size_t)snprintf(buf, sizeof buf, "#include \"common.h\"\n\n");
		for (j = 0; j < 6; j++)
			len += (size_t)snprintf(buf + len, sizeof buf - len,
			                        "int f%ld_%d(struct item *it, int n)\n{\n"
			                        "\tint s = 0;\n"
			                        "\tfor (int i = 0; i < n; i++) {\n"
			                        "\t\tit[i].val = it[i].val * %d.5 + i;\n"
			                        "\t\tsnprintf(it[i].name, sizeof it[i].name, \"%%d\", i);\n"
			                        "\t\ts += it[i].key ^ (int)strlen(it[i].name);\n"
			                        "\t}\n\treturn s + %d;\n}\n\n",
			                        i, j, j + 1, (int)(next() % 1000));
		snprintf(path, sizeof path, "%s/u%04ld.c", dir, i);
		write_file(path, buf, len);
	}
	snprintf(path, sizeof path, "%s/main.c", dir);
	len = (size_t)snprintf(buf, sizeof buf,
	                       "#include \"common.h\"\n"
	                       "int sum_items(const struct item *it, int n)\n"
	                       "{ int s = 0; for (int i = 0; i < n; i++) s += it[i].key; return s; }\n"
	                       "int main(void) { return 0; }\n");
	write_file(path, buf, len);

	snprintf(path, sizeof path, "%s/Makefile", dir);
	mk = fopen(path, "w");
	if (!mk)
		die("create %s", path);
	fprintf(mk, "CC = cc\nCFLAGS = -O2\nOBJS = main.o");
	for (i = 0; i < nfiles; i++)
		fprintf(mk, " \\\n\tu%04ld.o", i);
	fprintf(mk, "\n\nprog: $(OBJS)\n\t$(CC) -o $@ $(OBJS)\n\n"
	            "%%.o: %%.c common.h\n\t$(CC) $(CFLAGS) -c -o $@ $<\n\n"
	            "clean:\n\trm -f prog $(OBJS)\n");
	if (fclose(mk) != 0)
		die("write %s", path);
	return 0;
}

/* Create (and write 100 bytes to) NFILES files, stat each, unlink each. */
static int cmd_churn(const char *dir, long nfiles)
{
	char path[4096], buf[100];
	struct stat st;
	long i;

	memset(buf, 'x', sizeof buf);
	mkdir_or_die(dir);
	for (i = 0; i < nfiles; i++) {
		int fd;

		snprintf(path, sizeof path, "%s/c%06ld", dir, i);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0)
			die("create %s", path);
		if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
			die("write %s", path);
		if (close(fd) < 0)
			die("close %s", path);
	}
	for (i = 0; i < nfiles; i++) {
		snprintf(path, sizeof path, "%s/c%06ld", dir, i);
		if (stat(path, &st) < 0)
			die("stat %s", path);
		if (st.st_size != (off_t)sizeof buf) {
			errno = EIO;
			die("stat %s: size %lld", path, (long long)st.st_size);
		}
	}
	for (i = 0; i < nfiles; i++) {
		snprintf(path, sizeof path, "%s/c%06ld", dir, i);
		if (unlink(path) < 0)
			die("unlink %s", path);
	}
	if (rmdir(dir) < 0)
		die("rmdir %s", dir);
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A bot waiting on the server: how long each call waited while it restarted (bench/restart). */
static int cmd_probe(const char *file, long seconds)
{
	uint64_t end = now_ns() + (uint64_t)seconds * 1000000000u, t0, t1;
	char stop[4096];
	struct statx x;

	snprintf(stop, sizeof stop, "%s.stop", file);
	while ((t0 = now_ns()) < end && access(stop, F_OK) != 0) {
		if (statx(AT_FDCWD, file, AT_STATX_FORCE_SYNC, STATX_SIZE, &x) != 0)
			die("statx %s", file);
		t1 = now_ns();
		if (t1 - t0 > 2000000)
			printf("%llu %llu\n", (unsigned long long)t1,
			       (unsigned long long)((t1 - t0) / 1000));
		usleep(5000); /* a bot at work, not a flood: 200 calls a second */
	}
	return fflush(stdout) == 0 ? 0 : 1;
}

static int cmd_bigfile(const char *file, long mib)
{
	static uint64_t buf[1 << 17]; /* 1 MiB */
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	long i;
	size_t k;

	if (fd < 0)
		die("create %s", file);
	for (i = 0; i < mib; i++) {
		for (k = 0; k < sizeof buf / sizeof buf[0]; k++)
			buf[k] = next();
		if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
			die("write %s", file);
	}
	if (fsync(fd) < 0 || close(fd) < 0)
		die("close %s", file);
	return 0;
}

int main(int argc, char **argv)
{
	long n;

	if (argc == 2 && strcmp(argv[1], "now") == 0) { /* CLOCK_MONOTONIC, as probe's */
		printf("%llu\n", (unsigned long long)now_ns());
		return 0;
	}
	if (argc != 4) {
		fprintf(stderr, "usage: benchtool tree|cproj|churn|bigfile|probe PATH N\n");
		return 2;
	}
	n = strtol(argv[3], NULL, 10);
	if (n <= 0) {
		fprintf(stderr, "benchtool: bad count %s\n", argv[3]);
		return 2;
	}
	if (strcmp(argv[1], "tree") == 0)
		return cmd_tree(argv[2], n);
	if (strcmp(argv[1], "probe") == 0)
		return cmd_probe(argv[2], n);
	if (strcmp(argv[1], "cproj") == 0)
		return cmd_cproj(argv[2], n);
	if (strcmp(argv[1], "churn") == 0)
		return cmd_churn(argv[2], n);
	if (strcmp(argv[1], "bigfile") == 0)
		return cmd_bigfile(argv[2], n);
	fprintf(stderr, "benchtool: unknown command %s\n", argv[1]);
	return 2;
}

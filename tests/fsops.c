/* SPDX-License-Identifier: MIT */
/*
 * fsops: POSIX behaviour of a folder, printed as TAP.
 *
 *   fsops native|fuse DIR [HOSTDIR]
 *
 * Makes a private folder inside DIR, runs every check there and removes it.
 * The same program runs on a native folder and through a mount, so both must
 * behave alike; the kind ("native" or "fuse") only selects the few answers
 * that differ by design (O_TMPFILE, RENAME_WHITEOUT).  HOSTDIR, the source
 * of a mount at DIR that refuses setuid and setgid files (agentfs's do), is
 * where the checks that need such files make them.  Results are unnumbered
 * "ok - ..." lines and the plan comes last; the counters live in shared
 * memory so the unprivileged child of the identity checks adds to them.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define UID_U 4242 /* the unprivileged identity */
#define GID_U 4242
#define GID_MEMBER 4343 /* its supplementary group */
#define UID_OTHER 4444	/* someone else */
#define GID_OTHER 4444

struct tap {
	int n;
	int failed;
};

static struct tap *tap;
static bool is_fuse;
/*
 * The work folder as seen on the host, when the mount refuses setuid and
 * setgid files (agentfs does): files that need those bits are made there.
 */
static char host_work[PATH_MAX];

static const char *ename(int e)
{
	const char *s;

	if (e == 0)
		return "OK";
	s = strerrorname_np(e);
	return s ? s : "E?";
}

static void __attribute__((format(printf, 2, 3))) ok(bool cond, const char *fmt, ...)
{
	va_list ap;

	tap->n++;
	if (!cond)
		tap->failed++;
	printf("%s - ", cond ? "ok" : "not ok");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static void __attribute__((format(printf, 1, 2))) diag(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static void skip(const char *why)
{
	tap->n++;
	printf("ok - # SKIP %s\n", why);
	fflush(stdout);
}

/* expect success (r >= 0) */
#define T_OK(expr, ...)                                                                            \
	({                                                                                         \
		errno = 0;                                                                         \
		long r_ = (long)(expr);                                                            \
		int e_ = errno;                                                                    \
		ok(r_ >= 0, __VA_ARGS__);                                                          \
		if (r_ < 0)                                                                        \
			diag("  %s failed: %s", #expr, ename(e_));                                 \
		r_;                                                                                \
	})

/* expect failure with errno want */
#define T_ERR(expr, want, ...)                                                                     \
	({                                                                                         \
		errno = 0;                                                                         \
		long r_ = (long)(expr);                                                            \
		int e_ = r_ < 0 ? errno : 0;                                                       \
		ok(r_ < 0 && e_ == (want), __VA_ARGS__);                                           \
		if (!(r_ < 0 && e_ == (want)))                                                     \
			diag("  %s: got %s (%ld), want %s", #expr, ename(e_), r_, ename(want));    \
		if (r_ >= 0 && r_ < INT_MAX && strstr(#expr, "open"))                              \
			close((int)r_);                                                            \
		r_;                                                                                \
	})

#define T_EQ(got, want, desc, ...)                                                                 \
	do {                                                                                       \
		long long g_ = (long long)(got), w_ = (long long)(want);                           \
		ok(g_ == w_, desc, ##__VA_ARGS__);                                                 \
		if (g_ != w_)                                                                      \
			diag("  %s = %lld (%#llo), want %lld (%#llo)", #got, g_, g_, w_, w_);      \
	} while (0)

static struct stat st_of(const char *path)
{
	struct stat st;

	memset(&st, 0, sizeof(st));
	if (stat(path, &st) < 0)
		st.st_mode = 0;
	return st;
}

static struct stat lst_of(const char *path)
{
	struct stat st;

	memset(&st, 0, sizeof(st));
	if (lstat(path, &st) < 0)
		st.st_mode = 0;
	return st;
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static int put_file(const char *path, const char *data, mode_t mode)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_NOFOLLOW, mode);
	size_t len = strlen(data);

	if (fd < 0)
		return -1;
	if (write(fd, data, len) != (ssize_t)len) {
		close(fd);
		return -1;
	}
	return close(fd);
}

/* the whole content of path (up to 4 KiB) as a string, "<errno>" on failure */
static const char *content(const char *path)
{
	static char buf[4097];
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (fd < 0) {
		snprintf(buf, sizeof(buf), "<%s>", ename(errno));
		return buf;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n < 0 ? 0 : n] = '\0';
	return buf;
}

#define T_CONTENT(path, want, desc)                                                                \
	do {                                                                                       \
		const char *c_ = content(path);                                                    \
		ok(strcmp(c_, want) == 0, desc);                                                   \
		if (strcmp(c_, want))                                                              \
			diag("  %s holds '%s', want '%s'", path, c_, want);                        \
	} while (0)

static bool all_bytes(const char *buf, size_t len, char c)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != c)
			return false;
	return true;
}

static void t_open_flags(void)
{
	struct stat st;
	int fd;

	umask(022);
	fd = T_OK(open("f1", O_CREAT | O_EXCL | O_WRONLY, 0640), "create: open O_CREAT|O_EXCL");
	if (fd >= 0) {
		fstat(fd, &st);
		ok(S_ISREG(st.st_mode) && st.st_size == 0, "create: a new empty regular file");
		T_EQ(st.st_mode & 07777, 0640, "create: mode 0640 as asked");
		T_EQ(st.st_uid, geteuid(), "create: owned by the caller's uid");
		T_EQ(write(fd, "hello", 5), 5, "write: 5 bytes");
		close(fd);
	}
	T_ERR(open("f1", O_CREAT | O_EXCL | O_WRONLY, 0600), EEXIST,
	      "open O_EXCL on an existing file: EEXIST");
	fd = T_OK(open("f1", O_CREAT | O_WRONLY, 0600),
		  "open O_CREAT without O_EXCL on an existing file");
	if (fd >= 0)
		close(fd);
	T_EQ(st_of("f1").st_mode & 07777, 0640, "O_CREAT on an existing file keeps its mode");
	T_CONTENT("f1", "hello", "O_CREAT without O_TRUNC keeps the content");

	fd = T_OK(open("f1", O_WRONLY | O_APPEND), "open O_APPEND");
	if (fd >= 0) {
		lseek(fd, 0, SEEK_SET);
		T_EQ(write(fd, "world", 5), 5, "O_APPEND: write after seeking to 0");
		T_EQ(pwrite(fd, "!!", 2, 0), 2, "O_APPEND: pwrite at offset 0");
		close(fd);
	}
	T_CONTENT("f1", "helloworld!!", "O_APPEND: write and pwrite both append (Linux)");

	fd = T_OK(open("f1", O_WRONLY | O_TRUNC), "open O_TRUNC");
	if (fd >= 0) {
		fstat(fd, &st);
		T_EQ(st.st_size, 0, "O_TRUNC: fstat size 0");
		close(fd);
	}
	T_EQ(st_of("f1").st_size, 0, "O_TRUNC: stat size 0");
	T_EQ(st_of("f1").st_mode & 07777, 0640, "O_TRUNC keeps the mode");

	T_ERR(open("f1", O_RDONLY | O_DIRECTORY), ENOTDIR, "O_DIRECTORY on a file: ENOTDIR");
	fd = T_OK(open(".", O_RDONLY | O_DIRECTORY), "O_DIRECTORY on a folder");
	if (fd >= 0)
		close(fd);

	T_OK(symlink("f1", "l1"), "symlink to a file");
	T_ERR(open("l1", O_RDONLY | O_NOFOLLOW), ELOOP, "O_NOFOLLOW on a symlink: ELOOP");
	fd = T_OK(open("l1", O_RDONLY), "open through a symlink follows it");
	if (fd >= 0) {
		fstat(fd, &st);
		T_EQ(st.st_ino, st_of("f1").st_ino, "open through a symlink reaches its target");
		close(fd);
	}

	/* a dangling symlink: O_CREAT makes its target, O_EXCL refuses */
	T_OK(symlink("dtarget", "dangle"), "dangling symlink");
	T_ERR(open("dangle", O_CREAT | O_EXCL | O_WRONLY, 0644), EEXIST,
	      "O_CREAT|O_EXCL on a dangling symlink: EEXIST");
	fd = T_OK(open("dangle", O_CREAT | O_WRONLY, 0644), "O_CREAT through a dangling symlink");
	if (fd >= 0)
		close(fd);
	ok(S_ISREG(lst_of("dtarget").st_mode),
	   "O_CREAT through a dangling symlink creates its target");

	errno = 0;
	fd = open(".", O_TMPFILE | O_RDWR, 0600);
	diag("O_TMPFILE here: %s", fd >= 0 ? "OK" : ename(errno));
	if (is_fuse) {
		ok(fd < 0 && errno == EOPNOTSUPP,
		   "O_TMPFILE through FUSE (libfuse 3.14): EOPNOTSUPP");
	} else if (fd < 0 && errno == EOPNOTSUPP) {
		skip("the native filesystem has no O_TMPFILE");
	} else {
		ok(fd >= 0, "O_TMPFILE on a native folder");
	}
	if (fd >= 0) {
		T_EQ(write(fd, "tmp", 3), 3, "O_TMPFILE: write");
		T_OK(linkat(fd, "", AT_FDCWD, "tmpnamed", AT_EMPTY_PATH),
		     "O_TMPFILE: linkat gives it a name");
		T_CONTENT("tmpnamed", "tmp", "O_TMPFILE: the named file holds what was written");
		close(fd);
	}
}

static void t_read_write(void)
{
	static char buf[3 * 4096 + 123], back[sizeof(buf)], big[(1 << 20) + 1],
		bigback[sizeof(big)];
	char small[16];
	int fd, fd2;
	off_t pos;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (char)('a' + i % 23);
	fd = T_OK(open("rw", O_CREAT | O_RDWR | O_TRUNC, 0644), "rw: create");
	if (fd < 0)
		return;
	T_EQ(write(fd, buf, sizeof(buf)), sizeof(buf), "write 12411 bytes");
	T_EQ(lseek(fd, 0, SEEK_SET), 0, "lseek to 0");
	T_EQ(read(fd, back, sizeof(back)), sizeof(back), "read them back");
	ok(memcmp(buf, back, sizeof(buf)) == 0, "read returns what write wrote");
	T_EQ(read(fd, back, 10), 0, "read at EOF returns 0");
	pos = lseek(fd, 100, SEEK_SET);
	T_EQ(pread(fd, back, 100, 5000), 100, "pread 100 bytes at 5000");
	ok(memcmp(back, buf + 5000, 100) == 0, "pread returns the right bytes");
	T_EQ(pwrite(fd, "XYZ", 3, 10), 3, "pwrite 3 bytes at 10");
	T_EQ(lseek(fd, 0, SEEK_CUR), pos, "pread/pwrite leave the file offset alone");
	memset(small, 0, sizeof(small));
	T_EQ(pread(fd, small, 5, 9), 5, "pread around the pwrite");
	ok(memcmp(small, "jXYZn", 5) == 0, "pwrite landed at its offset");
	T_EQ(pwrite(fd, "end", 3, sizeof(buf) + 8192), 3, "pwrite past EOF");
	T_EQ(st_of("rw").st_size, sizeof(buf) + 8192 + 3, "pwrite past EOF extends the size");
	T_EQ(pread(fd, back, 8192, sizeof(buf)), 8192, "pread the gap");
	ok(all_bytes(back, 8192, 0), "the gap reads as zeros");
	close(fd);

	/* larger than a FUSE max_write: split and reassembled in order */
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)(i * 7 + i / 4096);
	fd = open("big", O_CREAT | O_WRONLY | O_TRUNC, 0644);
	T_EQ(write(fd, big, sizeof(big)), sizeof(big), "write 1 MiB + 1 in one call");
	close(fd);
	fd2 = open("big", O_RDONLY);
	T_EQ(read(fd2, bigback, sizeof(bigback)), sizeof(bigback),
	     "read 1 MiB + 1 through a new fd");
	ok(memcmp(big, bigback, sizeof(big)) == 0, "1 MiB + 1 reads back identical");
	close(fd2);
	unlink("big");
}

static void t_mmap(void)
{
	const size_t len = 16384;
	char back[16384];
	char *p;
	int fd, fd2;

	fd = T_OK(open("mm", O_CREAT | O_RDWR | O_TRUNC, 0644), "mmap: create");
	if (fd < 0)
		return;
	T_OK(ftruncate(fd, len), "mmap: ftruncate to 16 KiB");
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ok(p != MAP_FAILED, "mmap MAP_SHARED read/write");
	if (p == MAP_FAILED) {
		diag("  mmap: %s", ename(errno));
		close(fd);
		return;
	}
	for (size_t i = 0; i < len; i++)
		p[i] = (char)('A' + i % 26);
	T_OK(msync(p, len, MS_SYNC), "msync MS_SYNC");
	fd2 = open("mm", O_RDONLY);
	T_EQ(pread(fd2, back, len, 0), len, "read the mapped file through another fd");
	ok(memcmp(back, p, len) == 0, "MAP_SHARED stores are visible to read() after msync");
	close(fd2);
	munmap(p, len);

	T_EQ(pwrite(fd, "QQ", 2, 100), 2, "pwrite into the file");
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	ok(p != MAP_FAILED && p[100] == 'Q' && p[101] == 'Q' && p[102] == 'A' + 102 % 26,
	   "a new mapping sees what pwrite wrote");
	if (p != MAP_FAILED)
		munmap(p, len);
	close(fd);
}

static void t_truncate(void)
{
	char back[64];
	int fd;

	fd = open("tr", O_CREAT | O_RDWR | O_TRUNC, 0644);
	memset(back, 'a', sizeof(back));
	T_EQ(write(fd, back, 60), 60, "truncate: write 60 bytes");
	T_OK(truncate("tr", 10), "truncate to 10");
	T_EQ(st_of("tr").st_size, 10, "truncate: size 10");
	T_OK(ftruncate(fd, 50), "ftruncate to 50");
	T_EQ(st_of("tr").st_size, 50, "ftruncate: size 50");
	T_EQ(pread(fd, back, 64, 0), 50, "read after ftruncate");
	ok(all_bytes(back, 10, 'a') && all_bytes(back + 10, 40, 0),
	   "shrink then grow: 10 old bytes then zeros");
	close(fd);
	T_ERR(truncate(".", 0), EISDIR, "truncate a folder: EISDIR");
	T_ERR(truncate("no-such-file", 0), ENOENT, "truncate a missing file: ENOENT");
	T_ERR(truncate("tr", -1), EINVAL, "truncate to a negative size: EINVAL");
}

static void t_fallocate(void)
{
	static char buf[65536];
	struct stat st;
	blkcnt_t blocks;
	int fd, r;

	fd = T_OK(open("fa", O_CREAT | O_RDWR | O_TRUNC, 0644), "fallocate: create");
	if (fd < 0)
		return;
	r = fallocate(fd, 0, 0, 1 << 20);
	if (r < 0 && errno == EOPNOTSUPP && !is_fuse) {
		skip("the native filesystem has no fallocate");
		close(fd);
		return;
	}
	ok(r == 0, "fallocate mode 0, 1 MiB");
	if (r < 0)
		diag("  fallocate: %s", ename(errno));
	fstat(fd, &st);
	T_EQ(st.st_size, 1 << 20, "fallocate mode 0 sets the size");
	ok(st.st_blocks * 512 >= 1 << 20, "fallocate mode 0 allocates the blocks");
	blocks = st.st_blocks;

	T_OK(fallocate(fd, FALLOC_FL_KEEP_SIZE, 1 << 20, 1 << 20), "fallocate KEEP_SIZE past EOF");
	fstat(fd, &st);
	T_EQ(st.st_size, 1 << 20, "KEEP_SIZE keeps the size");
	ok(st.st_blocks > blocks, "KEEP_SIZE allocates beyond EOF");
	if (st.st_blocks <= blocks)
		diag("  st_blocks %lld, before %lld", (long long)st.st_blocks, (long long)blocks);

	memset(buf, 'x', sizeof(buf));
	T_EQ(pwrite(fd, buf, sizeof(buf), 0), sizeof(buf), "write 64 KiB of data");
	fsync(fd);
	fstat(fd, &st);
	blocks = st.st_blocks;
	T_OK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 16384, 16384),
	     "fallocate PUNCH_HOLE");
	fstat(fd, &st);
	T_EQ(st.st_size, 1 << 20, "PUNCH_HOLE keeps the size");
	ok(st.st_blocks < blocks, "PUNCH_HOLE frees blocks");
	T_EQ(pread(fd, buf, sizeof(buf), 0), sizeof(buf), "read around the hole");
	ok(all_bytes(buf, 16384, 'x') && all_bytes(buf + 16384, 16384, 0) &&
		   all_bytes(buf + 32768, 32768, 'x'),
	   "the punched range reads as zeros, the rest is intact");
	T_ERR(fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, 4096), EOPNOTSUPP,
	      "PUNCH_HOLE without KEEP_SIZE: EOPNOTSUPP");

	T_OK(fsync(fd), "fsync");
	T_OK(fdatasync(fd), "fdatasync");
	close(fd);
	fd = open(".", O_RDONLY | O_DIRECTORY);
	T_OK(fsync(fd), "fsync a folder");
	close(fd);
}

static void t_rename(void)
{
	struct stat a, b;

	put_file("ra", "A", 0644);
	a = st_of("ra");
	T_OK(rename("ra", "rb"), "rename");
	ok(!exists("ra"), "rename: the old name is gone");
	T_CONTENT("rb", "A", "rename: the new name holds the content");
	T_EQ(st_of("rb").st_ino, a.st_ino, "rename keeps the inode");

	put_file("rc", "C", 0644);
	T_ERR(renameat2(AT_FDCWD, "rb", AT_FDCWD, "rc", RENAME_NOREPLACE), EEXIST,
	      "RENAME_NOREPLACE onto an existing name: EEXIST");
	T_CONTENT("rc", "C", "RENAME_NOREPLACE failure leaves the target alone");
	T_OK(renameat2(AT_FDCWD, "rb", AT_FDCWD, "rd", RENAME_NOREPLACE),
	     "RENAME_NOREPLACE to a new name");
	a = st_of("rd");
	b = st_of("rc");
	T_OK(renameat2(AT_FDCWD, "rd", AT_FDCWD, "rc", RENAME_EXCHANGE), "RENAME_EXCHANGE");
	T_CONTENT("rd", "C", "RENAME_EXCHANGE: first name holds the second's content");
	T_CONTENT("rc", "A", "RENAME_EXCHANGE: second name holds the first's content");
	ok(st_of("rd").st_ino == b.st_ino && st_of("rc").st_ino == a.st_ino,
	   "RENAME_EXCHANGE swaps the inodes");
	T_ERR(renameat2(AT_FDCWD, "rd", AT_FDCWD, "no-such", RENAME_EXCHANGE), ENOENT,
	      "RENAME_EXCHANGE with a missing name: ENOENT");
	if (is_fuse)
		T_ERR(renameat2(AT_FDCWD, "rd", AT_FDCWD, "rw2", RENAME_WHITEOUT), EINVAL,
		      "RENAME_WHITEOUT through the mount: EINVAL");

	mkdir("d1", 0755);
	put_file("d1/x", "x", 0644);
	mkdir("d2", 0755);
	put_file("d2/y", "y", 0644);
	mkdir("d3", 0755);
	T_ERR(rename("d2", "d1"), ENOTEMPTY, "rename a folder onto a non-empty folder: ENOTEMPTY");
	T_ERR(rename("rc", "d1"), EISDIR, "rename a file onto a folder: EISDIR");
	T_ERR(rename("d1", "rc"), ENOTDIR, "rename a folder onto a file: ENOTDIR");
	T_OK(rename("d2", "d3"), "rename a folder onto an empty folder");
	T_CONTENT("d3/y", "y", "the renamed folder keeps its content");
	ok(!exists("d2"), "the old folder name is gone");
	mkdir("d1/sub", 0755);
	T_ERR(rename("d1", "d1/sub/d"), EINVAL, "rename a folder into itself: EINVAL");
	T_OK(rename("d3/y", "d1/y"), "rename a file to another folder");
	T_CONTENT("d1/y", "y", "the file moved between folders");
	T_OK(rename("rc", "rc"), "rename onto itself");
	T_CONTENT("rc", "A", "rename onto itself changes nothing");
	T_ERR(rename("no-such", "x"), ENOENT, "rename a missing name: ENOENT");
	T_ERR(rename("rc", "no-dir/x"), ENOENT, "rename into a missing folder: ENOENT");
}

static void t_links(void)
{
	static char longtarget[1001];
	char buf[2048], buf2[2048], longname[301] = "";
	struct stat st;

	put_file("h1", "one", 0644);
	T_OK(link("h1", "h2"), "hard link");
	T_EQ(st_of("h1").st_nlink, 2, "st_nlink is 2 after link");
	T_EQ(st_of("h2").st_ino, st_of("h1").st_ino, "both names reach one inode");
	put_file("h2", "two", 0644);
	T_CONTENT("h1", "two", "a write through one name shows through the other");
	T_ERR(link("h1", "rc"), EEXIST, "link onto an existing name: EEXIST");
	T_ERR(link("d1", "d1link"), EPERM, "hard link to a folder: EPERM");
	T_ERR(link("no-such", "x"), ENOENT, "link a missing file: ENOENT");
	T_OK(unlink("h1"), "unlink one name");
	T_EQ(st_of("h2").st_nlink, 1, "st_nlink back to 1");
	T_CONTENT("h2", "two", "the other name still holds the data");

	T_OK(symlink("some/target path", "s1"), "symlink with a dangling target");
	memset(buf, 0, sizeof(buf));
	T_EQ(readlink("s1", buf, sizeof(buf)), 16, "readlink returns the target's length");
	ok(strcmp(buf, "some/target path") == 0, "readlink returns the target verbatim");
	st = lst_of("s1");
	ok(S_ISLNK(st.st_mode), "lstat sees a symlink");
	T_EQ(st.st_size, 16, "lstat st_size is the target's length");
	T_ERR(stat("s1", &st), ENOENT, "stat through a dangling symlink: ENOENT");
	T_OK(symlink("h2", "s2"), "symlink to a file");
	T_EQ(st_of("s2").st_ino, st_of("h2").st_ino, "stat follows the symlink");
	T_ERR(symlink("x", "s2"), EEXIST, "symlink onto an existing name: EEXIST");
	T_ERR(readlink("h2", buf, sizeof(buf)), EINVAL, "readlink of a file: EINVAL");
	memset(longtarget, 'L', sizeof(longtarget) - 1);
	for (int i = 50; i < 1000; i += 51)
		longtarget[i] = '/';
	T_OK(symlink(longtarget, "s3"), "symlink with a 1000-byte target");
	memset(buf, 0, sizeof(buf));
	T_EQ(readlink("s3", buf, sizeof(buf)), 1000, "readlink of a 1000-byte target");
	ok(strcmp(buf, longtarget) == 0, "the 1000-byte target comes back verbatim");
	/*
	 * A target is only a string: a component of it longer than NAME_MAX is
	 * made (it cannot resolve: ENAMETOOLONG when followed); only the link's
	 * own name is held to NAME_MAX.
	 */
	memset(longname, 'N', sizeof(longname) - 1);
	snprintf(buf, sizeof(buf), "%s/x", longname);
	T_OK(symlink(buf, "s4"), "symlink whose target has a 300-byte component");
	memset(buf2, 0, sizeof(buf2));
	T_EQ(readlink("s4", buf2, sizeof(buf2)), (ssize_t)strlen(buf),
	     "readlink of the target with a 300-byte component");
	T_ERR(stat("s4", &st), ENAMETOOLONG, "stat through it: ENAMETOOLONG");
	T_ERR(symlink("x", longname), ENAMETOOLONG, "a symlink's own 300-byte name: ENAMETOOLONG");
	T_OK(unlink("s4"), "unlink that symlink");
}

static void t_dirs(void)
{
	struct stat st;

	T_OK(mkdir("md", 0750), "mkdir");
	st = st_of("md");
	ok(S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0750,
	   "mkdir makes a folder with mode 0750");
	T_EQ(st.st_nlink, 2, "a new folder has st_nlink 2");
	T_ERR(mkdir("md", 0755), EEXIST, "mkdir an existing name: EEXIST");
	T_OK(mkdir("md/sub", 0755), "mkdir inside");
	T_EQ(st_of("md").st_nlink, 3, "a subfolder raises the parent's st_nlink");
	T_ERR(rmdir("md"), ENOTEMPTY, "rmdir a non-empty folder: ENOTEMPTY");
	T_ERR(rmdir("h2"), ENOTDIR, "rmdir a file: ENOTDIR");
	T_ERR(unlink("md"), EISDIR, "unlink a folder: EISDIR");
	T_ERR(rmdir("."), EINVAL, "rmdir .: EINVAL");
	T_OK(rmdir("md/sub"), "rmdir an empty folder");
	T_OK(rmdir("md"), "rmdir the emptied parent");
	ok(!exists("md"), "the folder is gone");
	T_ERR(rmdir("md"), ENOENT, "rmdir a missing folder: ENOENT");
	T_ERR(unlink("no-such"), ENOENT, "unlink a missing file: ENOENT");
	T_ERR(open("no-such", O_RDONLY), ENOENT, "open a missing file: ENOENT");
	T_ERR(stat("no-dir/x", &st), ENOENT, "stat in a missing folder: ENOENT");
	T_ERR(mkdir("no-dir/x", 0755), ENOENT, "mkdir in a missing folder: ENOENT");
	T_ERR(open("h2/x", O_RDONLY), ENOTDIR, "a file used as a folder: ENOTDIR");
	T_OK(mkfifo("fifo", 0644), "mkfifo");
	ok(S_ISFIFO(lst_of("fifo").st_mode), "mkfifo makes a FIFO");
	T_OK(mknod("nod", S_IFREG | 0644, 0), "mknod S_IFREG");
	ok(S_ISREG(lst_of("nod").st_mode), "mknod S_IFREG makes a regular file");
	T_OK(unlink("fifo"), "unlink a FIFO");
}

static void t_copy_ioctl(void)
{
	static char buf[100000], back[sizeof(buf)];
	loff_t in_off = 1000, out_off = 5;
	int in, out, flags, r;
	ssize_t n, done = 0;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (char)(i % 251);
	in = open("cfr-src", O_CREAT | O_RDWR | O_TRUNC, 0644);
	out = open("cfr-dst", O_CREAT | O_RDWR | O_TRUNC, 0644);
	T_EQ(write(in, buf, sizeof(buf)), sizeof(buf), "copy_file_range: write the source");
	lseek(in, 0, SEEK_SET);
	while (done < (ssize_t)sizeof(buf) &&
	       (n = copy_file_range(in, NULL, out, NULL, sizeof(buf) - done, 0)) > 0)
		done += n;
	T_EQ(done, sizeof(buf), "copy_file_range copies 100000 bytes");
	T_EQ(pread(out, back, sizeof(back), 0), sizeof(back), "read the copy");
	ok(memcmp(buf, back, sizeof(buf)) == 0, "the copy is identical");
	T_EQ(copy_file_range(in, &in_off, out, &out_off, 100, 0), 100,
	     "copy_file_range with offsets");
	T_EQ(pread(out, back, 100, 5), 100, "read the copied range");
	ok(memcmp(back, buf + 1000, 100) == 0 && in_off == 1100 && out_off == 105,
	   "copy_file_range with offsets copies the right bytes and advances the offsets");
	close(in);

	/* no ioctl op: a root bot must not set the immutable flag */
	if (is_fuse) {
		flags = FS_IMMUTABLE_FL;
		errno = 0;
		r = ioctl(out, FS_IOC_SETFLAGS, &flags);
		ok(r < 0, "FS_IOC_SETFLAGS (immutable) is refused through the mount");
		diag("FS_IOC_SETFLAGS through the mount: %s", r < 0 ? ename(errno) : "OK");
		if (r == 0) {
			flags = 0;
			ioctl(out, FS_IOC_SETFLAGS, &flags);
		}
		T_EQ(pwrite(out, "z", 1, 0), 1, "the file is still writable");
	}
	close(out);
}

static bool ts_eq(struct timespec a, time_t s, long ns)
{
	return a.tv_sec == s && a.tv_nsec == ns;
}

static void t_attrs(void)
{
	struct timespec ts[2], before, after;
	struct stat st;
	int fd;

	T_OK(chmod("h2", 0604), "chmod");
	T_EQ(st_of("h2").st_mode & 07777, 0604, "chmod sets the mode");
	fd = open("h2", O_RDONLY);
	if (host_work[0] != '\0') {
		T_ERR(fchmod(fd, 04751), EPERM, "fchmod with setuid: EPERM through the mount");
		T_EQ(st_of("h2").st_mode & 07777, 0604, "the refused fchmod changed nothing");
		T_ERR(chmod("h2", 02755), EPERM, "chmod g+s of a file: EPERM through the mount");
		T_OK(fchmod(fd, 0751), "fchmod without setuid");
	} else {
		T_OK(fchmod(fd, 04751), "fchmod with setuid");
		T_EQ(st_of("h2").st_mode & 07777, 04751, "fchmod sets the mode, setuid included");
	}
	T_OK(chown("h2", UID_U, GID_MEMBER), "chown");
	st = st_of("h2");
	ok(st.st_uid == UID_U && st.st_gid == GID_MEMBER, "chown sets owner and group");
	T_OK(chown("h2", -1, -1), "chown -1 -1");
	st = st_of("h2");
	ok(st.st_uid == UID_U && st.st_gid == GID_MEMBER, "chown -1 -1 changes nothing");
	T_OK(fchown(fd, 0, 0), "fchown back to root");
	st = st_of("h2");
	ok(st.st_uid == 0 && st.st_gid == 0, "fchown sets owner and group");
	close(fd);
	T_OK(lchown("s2", UID_U, GID_U), "lchown a symlink");
	ok(lst_of("s2").st_uid == UID_U && st_of("h2").st_uid == 0,
	   "lchown changes the symlink, not its target");
	T_ERR(chown("no-such", 0, 0), ENOENT, "chown a missing file: ENOENT");

	ts[0] = (struct timespec){1000000000, 123456789};
	ts[1] = (struct timespec){1500000000, 987654321};
	T_OK(utimensat(AT_FDCWD, "h2", ts, 0), "utimensat with nanoseconds");
	st = st_of("h2");
	ok(ts_eq(st.st_atim, 1000000000, 123456789), "atime set to the nanosecond");
	ok(ts_eq(st.st_mtim, 1500000000, 987654321), "mtime set to the nanosecond");
	if (!ts_eq(st.st_mtim, 1500000000, 987654321))
		diag("  mtime %lld.%09ld", (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);

	ts[0] = (struct timespec){0, UTIME_OMIT};
	ts[1] = (struct timespec){1600000000, 5};
	T_OK(utimensat(AT_FDCWD, "h2", ts, 0), "utimensat UTIME_OMIT for atime");
	st = st_of("h2");
	ok(ts_eq(st.st_atim, 1000000000, 123456789), "UTIME_OMIT leaves atime alone");
	ok(ts_eq(st.st_mtim, 1600000000, 5), "the other time is still set");

	clock_gettime(CLOCK_REALTIME_COARSE, &before);
	ts[0] = (struct timespec){0, UTIME_NOW};
	ts[1] = (struct timespec){0, UTIME_NOW};
	T_OK(utimensat(AT_FDCWD, "h2", ts, 0), "utimensat UTIME_NOW");
	clock_gettime(CLOCK_REALTIME, &after);
	st = st_of("h2");
	ok(st.st_mtim.tv_sec >= before.tv_sec - 1 && st.st_mtim.tv_sec <= after.tv_sec + 1 &&
		   st.st_atim.tv_sec >= before.tv_sec - 1 && st.st_atim.tv_sec <= after.tv_sec + 1,
	   "UTIME_NOW sets both times to now");

	fd = open("h2", O_RDONLY);
	ts[0] = (struct timespec){1100000000, 1};
	ts[1] = (struct timespec){1200000000, 2};
	T_OK(futimens(fd, ts), "futimens");
	st = st_of("h2");
	ok(ts_eq(st.st_atim, 1100000000, 1) && ts_eq(st.st_mtim, 1200000000, 2),
	   "futimens sets both times");
	close(fd);

	ts[0] = (struct timespec){1300000000, 3};
	ts[1] = (struct timespec){1300000000, 4};
	T_OK(utimensat(AT_FDCWD, "s2", ts, AT_SYMLINK_NOFOLLOW),
	     "utimensat AT_SYMLINK_NOFOLLOW on a symlink");
	ok(ts_eq(lst_of("s2").st_mtim, 1300000000, 4), "the symlink's own mtime is set");
	ok(ts_eq(st_of("h2").st_mtim, 1200000000, 2), "the symlink's target is untouched");
}

static void t_xattr(void)
{
	char buf[8192], val[4000];
	ssize_t n;
	bool found = false;
	int r;

	r = setxattr("h2", "user.agentfs", "value1", 6, 0);
	if (r < 0 && errno == EOPNOTSUPP && !is_fuse) {
		skip("the native filesystem has no user xattrs");
		return;
	}
	ok(r == 0, "setxattr user.agentfs");
	if (r < 0)
		diag("  setxattr: %s", ename(errno));
	T_EQ(getxattr("h2", "user.agentfs", NULL, 0), 6, "getxattr size query");
	memset(buf, 0, sizeof(buf));
	T_EQ(getxattr("h2", "user.agentfs", buf, sizeof(buf)), 6, "getxattr");
	ok(memcmp(buf, "value1", 6) == 0, "getxattr returns the value");
	T_ERR(getxattr("h2", "user.agentfs", buf, 3), ERANGE,
	      "getxattr into a short buffer: ERANGE");
	T_ERR(setxattr("h2", "user.agentfs", "v", 1, XATTR_CREATE), EEXIST,
	      "XATTR_CREATE on an existing name: EEXIST");
	T_ERR(setxattr("h2", "user.nope", "v", 1, XATTR_REPLACE), ENODATA,
	      "XATTR_REPLACE on a missing name: ENODATA");
	T_ERR(getxattr("h2", "user.nope", buf, sizeof(buf)), ENODATA,
	      "getxattr a missing name: ENODATA");
	for (size_t i = 0; i < sizeof(val); i++)
		val[i] = (char)(i % 251);
	T_OK(setxattr("h2", "user.big", val, sizeof(val), XATTR_CREATE),
	     "setxattr a 4000-byte binary value");
	T_EQ(getxattr("h2", "user.big", buf, sizeof(buf)), sizeof(val),
	     "getxattr the binary value");
	ok(memcmp(buf, val, sizeof(val)) == 0, "the binary value comes back intact");
	n = T_OK(listxattr("h2", buf, sizeof(buf)), "listxattr");
	for (ssize_t off = 0; n > 0 && off < n; off += strlen(buf + off) + 1)
		if (strcmp(buf + off, "user.agentfs") == 0)
			found = true;
	ok(found, "listxattr names user.agentfs");
	T_EQ(listxattr("h2", NULL, 0), n, "listxattr size query matches");
	T_OK(removexattr("h2", "user.agentfs"), "removexattr");
	T_ERR(getxattr("h2", "user.agentfs", buf, sizeof(buf)), ENODATA,
	      "getxattr after removexattr: ENODATA");
	T_ERR(removexattr("h2", "user.agentfs"), ENODATA, "removexattr a missing name: ENODATA");
	T_OK(setxattr(".", "user.dir", "d", 1, 0), "setxattr on a folder");
	T_EQ(getxattr(".", "user.dir", buf, sizeof(buf)), 1, "getxattr on a folder");
}

static void t_statfs(void)
{
	struct statfs s, fs;
	int fd;

	if (T_OK(statfs(".", &s), "statfs") < 0)
		return;
	ok(s.f_bsize > 0 && s.f_blocks > 0, "statfs: a block size and a block count");
	ok(s.f_bfree <= s.f_blocks && s.f_bavail <= s.f_bfree,
	   "statfs: free <= total, available <= free");
	ok(s.f_namelen >= 255, "statfs: names of 255 bytes allowed");
	T_EQ(s.f_namelen, 255, "statfs: f_namelen 255");
	fd = open(".", O_RDONLY | O_DIRECTORY);
	T_OK(fstatfs(fd, &fs), "fstatfs");
	ok(fs.f_bsize == s.f_bsize && fs.f_blocks == s.f_blocks, "fstatfs agrees with statfs");
	close(fd);
}

static void t_sparse(void)
{
	const off_t far = 5LL << 30;
	char buf[4096];
	struct stat st;
	off_t o;
	int fd;

	fd = T_OK(open("sparse", O_CREAT | O_RDWR | O_TRUNC, 0644), "sparse: create");
	if (fd < 0)
		return;
	memset(buf, 'a', sizeof(buf));
	T_EQ(pwrite(fd, buf, sizeof(buf), 0), sizeof(buf), "sparse: 4 KiB at 0");
	memset(buf, 'b', sizeof(buf));
	T_EQ(pwrite(fd, buf, sizeof(buf), far), sizeof(buf), "sparse: 4 KiB at 5 GiB");
	fstat(fd, &st);
	T_EQ(st.st_size, far + 4096, "sparse: size is 5 GiB + 4 KiB");
	ok(st.st_blocks * 512 < (1 << 20), "sparse: under 1 MiB allocated");
	T_EQ(lseek(fd, 0, SEEK_DATA), 0, "SEEK_DATA from 0 finds the first block");
	o = lseek(fd, 0, SEEK_HOLE);
	ok(o >= 4096 && o < far, "SEEK_HOLE from 0 finds the hole after the first block");
	if (!(o >= 4096 && o < far))
		diag("  SEEK_HOLE gave %lld", (long long)o);
	T_EQ(lseek(fd, 8192, SEEK_DATA), far, "SEEK_DATA from 8 KiB finds the data at 5 GiB");
	T_EQ(lseek(fd, far, SEEK_HOLE), far + 4096, "SEEK_HOLE from 5 GiB finds EOF");
	T_ERR(lseek(fd, far + 4096, SEEK_DATA), ENXIO, "SEEK_DATA at EOF: ENXIO");
	T_EQ(pread(fd, buf, sizeof(buf), far), sizeof(buf), "pread at 5 GiB");
	ok(all_bytes(buf, sizeof(buf), 'b'), "pread at 5 GiB returns the data");
	T_EQ(pread(fd, buf, sizeof(buf), (4LL << 30) + 12345), sizeof(buf),
	     "pread past 4 GiB in the hole");
	ok(all_bytes(buf, sizeof(buf), 0), "the hole reads as zeros");
	close(fd);
	unlink("sparse");
}

#define NDIRENT 10000

static void t_readdir(void)
{
	static long pos[NDIRENT];  /* telldir before entry i (read order) */
	static int order[NDIRENT]; /* name index of entry i */
	static unsigned char seen[NDIRENT];
	int made = 0, nread = 0, dots = 0, strays = 0, dups = 0, missing = 0, bad = 0;
	char name[32], first[256] = "";
	struct dirent *de;
	DIR *d;
	int dfd;

	if (mkdir("many", 0755) < 0 || (dfd = open("many", O_RDONLY | O_DIRECTORY)) < 0) {
		ok(false, "readdir: make a folder");
		return;
	}
	for (int i = 0; i < NDIRENT; i++) {
		snprintf(name, sizeof(name), "entry-%05d", i);
		if (mknodat(dfd, name, S_IFREG | 0644, 0) == 0)
			made++;
	}
	T_EQ(made, NDIRENT, "readdir: made 10000 files");
	d = fdopendir(dfd);
	for (;;) {
		long here = telldir(d);
		int idx;

		errno = 0;
		de = readdir(d);
		if (!de)
			break;
		if (nread < NDIRENT)
			pos[nread] = here;

		if (!first[0])
			snprintf(first, sizeof(first), "%s", de->d_name);
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) {
			dots++;
			continue;
		}
		if (sscanf(de->d_name, "entry-%d", &idx) != 1 || idx < 0 || idx >= NDIRENT) {
			strays++;
			continue;
		}
		if (seen[idx]++)
			dups++;
		if (nread < NDIRENT)
			order[nread] = idx;
		nread++;
	}
	T_EQ(errno, 0, "readdir: no error");
	for (int i = 0; i < NDIRENT; i++)
		if (!seen[i])
			missing++;
	T_EQ(nread, NDIRENT, "readdir: 10000 entries read");
	T_EQ(dots, 2, "readdir: . and .. once each");
	T_EQ(dups, 0, "readdir: no duplicates");
	T_EQ(missing, 0, "readdir: no name missing");
	T_EQ(strays, 0, "readdir: no unexpected name");

	/* the entries read first, last and in between, out of order */
	for (int i = NDIRENT - 1; i >= 0 && nread == NDIRENT; i -= (i > 100 ? 997 : 1)) {
		seekdir(d, pos[i]);
		de = readdir(d);
		snprintf(name, sizeof(name), "entry-%05d", order[i]);
		if (!de || strcmp(de->d_name, name)) {
			if (bad++ < 3)
				diag("  seekdir to entry %d gave %s, want %s", i,
				     de ? de->d_name : "NULL", name);
		}
	}
	T_EQ(bad, 0, "seekdir to a telldir position returns the same entry");
	if (nread == NDIRENT) {
		seekdir(d, pos[NDIRENT - 1]);
		readdir(d);
		ok(readdir(d) == NULL, "readdir after the last entry returns NULL");
	}
	rewinddir(d);
	de = readdir(d);
	ok(de && !strcmp(de->d_name, first), "rewinddir returns to the first entry");

	made = 0;
	for (int i = 0; i < NDIRENT; i++) {
		snprintf(name, sizeof(name), "entry-%05d", i);
		if (unlinkat(dirfd(d), name, 0) == 0)
			made++;
	}
	T_EQ(made, NDIRENT, "readdir: unlinked 10000 files");
	rewinddir(d);
	nread = 0;
	while ((de = readdir(d)))
		nread++;
	T_EQ(nread, 2, "readdir: the emptied folder lists only . and ..");
	closedir(d);
	T_OK(rmdir("many"), "readdir: remove the emptied folder");
	/* the folder holding them, reached through the kernel's cached inode
	 * (the working folder), not by a fresh lookup */
	T_OK(mkdir("after-many", 0755),
	     "the parent folder still answers mkdir after 10,000 entries");
	T_OK(rmdir("after-many"), "the parent folder still answers rmdir after 10,000 entries");
	d = opendir(".");
	nread = 0;
	while (d && (de = readdir(d)))
		nread++;
	ok(d && nread > 2, "the parent folder still lists after 10,000 entries");
	if (d)
		closedir(d);
}

static void ident_setup(void)
{
	struct {
		const char *name;
		mode_t mode;
		uid_t uid;
		gid_t gid;
	} dirs[] =
		{
			{"id", 0755, 0, 0},
			{"id/open", 0777, 0, 0},
			{"id/sgid", 02775, 0, GID_MEMBER},
			{"id/closed", 0755, 0, 0},
			{"id/othergrp", 0775, 0, GID_OTHER},
			{"id/sticky", 01777, 0, 0},
			{"id/private", 0700, 0, 0},
		},
	  files[] = {
		  {"id/secret", 0600, 0, 0},
		  {"id/pub", 0644, 0, 0},
		  {"id/suidw", 06775, UID_OTHER, GID_MEMBER},
		  {"id/suidt", 06775, UID_OTHER, GID_MEMBER},
		  {"id/suido", 06775, UID_OTHER, GID_MEMBER},
		  {"id/sgidnx", 02765, UID_OTHER, GID_MEMBER},
		  {"id/open/ng", 0644, UID_U, GID_OTHER},
		  {"id/sticky/rootfile", 0666, 0, 0},
	  };
	int bad = 0;

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (mkdir(dirs[i].name, 0700) < 0 ||
		    chown(dirs[i].name, dirs[i].uid, dirs[i].gid) < 0 ||
		    chmod(dirs[i].name, dirs[i].mode) < 0)
			bad++;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[PATH_MAX * 2];

		snprintf(path, sizeof path, "%s%s%s", host_work, host_work[0] ? "/" : "",
			 files[i].name);
		if ((files[i].mode & (S_ISUID | S_ISGID)) == 0)
			snprintf(path, sizeof path, "%s", files[i].name);
		if (put_file(path, "secret data", 0600) < 0 ||
		    chown(path, files[i].uid, files[i].gid) < 0 ||
		    chmod(path, files[i].mode) < 0)
			bad++;
	}
	T_EQ(bad, 0, "identity: root sets up the folders and files");
}

/* runs in the child as UID_U:GID_U with GID_MEMBER */
static void ident_child(void)
{
	struct timespec ts[2] = {{1, 0}, {2, 0}};
	struct stat st;
	int fd;

	fd = T_OK(open("id/open/c1", O_CREAT | O_EXCL | O_WRONLY, 0644),
		  "as 4242: create in a 0777 folder");
	if (fd >= 0) {
		fstat(fd, &st);
		ok(st.st_uid == UID_U && st.st_gid == GID_U,
		   "as 4242: the new file is owned 4242:4242");
		if (st.st_uid != UID_U || st.st_gid != GID_U)
			diag("  owner %u:%u", st.st_uid, st.st_gid);
		close(fd);
	}
	T_OK(mkdir("id/open/d1", 0755), "as 4242: mkdir");
	st = st_of("id/open/d1");
	ok(st.st_uid == UID_U && st.st_gid == GID_U, "as 4242: the new folder is owned 4242:4242");
	T_OK(symlink("target", "id/open/s1"), "as 4242: symlink");
	st = lst_of("id/open/s1");
	ok(st.st_uid == UID_U && st.st_gid == GID_U, "as 4242: the new symlink is owned 4242:4242");
	T_OK(mkfifo("id/open/p1", 0644), "as 4242: mkfifo");
	st = lst_of("id/open/p1");
	ok(st.st_uid == UID_U && st.st_gid == GID_U, "as 4242: the new FIFO is owned 4242:4242");

	fd = T_OK(open("id/sgid/c2", O_CREAT | O_EXCL | O_WRONLY, 0644),
		  "as 4242 in group 4343: create in a 2775 root:4343 folder");
	if (fd >= 0) {
		fstat(fd, &st);
		ok(st.st_uid == UID_U && st.st_gid == GID_MEMBER,
		   "as 4242: a file in a setgid folder is owned 4242:4343");
		close(fd);
	}
	T_OK(mkdir("id/sgid/d2", 0755), "as 4242: mkdir in the setgid folder");
	st = st_of("id/sgid/d2");
	ok(st.st_gid == GID_MEMBER && (st.st_mode & S_ISGID),
	   "as 4242: a folder in a setgid folder inherits group and setgid");

	T_ERR(open("id/closed/c3", O_CREAT | O_WRONLY, 0644), EACCES,
	      "as 4242: create in a 0755 root folder: EACCES");
	T_ERR(mkdir("id/closed/d3", 0755), EACCES, "as 4242: mkdir in a 0755 root folder: EACCES");
	T_ERR(symlink("x", "id/closed/s3"), EACCES,
	      "as 4242: symlink in a 0755 root folder: EACCES");
	T_ERR(open("id/othergrp/c4", O_CREAT | O_WRONLY, 0644), EACCES,
	      "as 4242: create in a 0775 root:4444 folder (not a member): EACCES");
	T_ERR(open("id/secret", O_RDONLY), EACCES, "as 4242: read a 0600 root file: EACCES");
	{
		DIR *dp = opendir("id/private");

		ok(dp == NULL && errno == EACCES, "as 4242: list a 0700 root folder: EACCES");
		if (dp != NULL)
			closedir(dp);
		dp = opendir("id/closed");
		ok(dp != NULL && readdir(dp) != NULL, "as 4242: list a 0755 root folder");
		if (dp != NULL)
			closedir(dp);
	}
	fd = T_OK(open("id/pub", O_RDONLY), "as 4242: read a 0644 root file");
	if (fd >= 0)
		close(fd);
	T_ERR(open("id/pub", O_WRONLY), EACCES, "as 4242: write-open a 0644 root file: EACCES");
	T_ERR(unlink("id/pub"), EACCES, "as 4242: unlink in a 0755 root folder: EACCES");

	fd = T_OK(open("id/suidw", O_WRONLY),
		  "as 4242: write-open a group-writable 6775 file of 4444");
	if (fd >= 0) {
		T_EQ(write(fd, "x", 1), 1, "as 4242: write to it");
		close(fd);
	}
	T_EQ(st_of("id/suidw").st_mode & 07777, 0775, "as 4242: a write clears setuid and setgid");
	T_OK(truncate("id/suidt", 1), "as 4242: truncate a group-writable 6775 file of 4444");
	T_EQ(st_of("id/suidt").st_mode & 07777, 0775, "as 4242: truncate clears setuid and setgid");
	fd = T_OK(open("id/suido", O_WRONLY | O_TRUNC),
		  "as 4242: open O_TRUNC a group-writable 6775 file");
	if (fd >= 0)
		close(fd);
	T_EQ(st_of("id/suido").st_mode & 07777, 0775,
	     "as 4242: open O_TRUNC clears setuid and setgid");
	fd = open("id/sgidnx", O_WRONLY);
	T_EQ(write(fd, "x", 1), 1, "as 4242: write to a 2765 file (setgid without group exec)");
	close(fd);
	T_EQ(st_of("id/sgidnx").st_mode & 07777, 02765,
	     "as 4242: setgid without group exec survives a write");

	T_ERR(chmod("id/pub", 0666), EPERM, "as 4242: chmod a root file: EPERM");
	T_ERR(chown("id/open/c1", 0, -1), EPERM, "as 4242: give a file to root: EPERM");
	T_OK(chown("id/open/c1", -1, GID_MEMBER), "as 4242: chgrp its file to a group it is in");
	T_EQ(st_of("id/open/c1").st_gid, GID_MEMBER, "as 4242: the group changed");
	T_ERR(chown("id/open/c1", -1, GID_OTHER), EPERM,
	      "as 4242: chgrp to a group it is not in: EPERM");
	if (host_work[0] != '\0') {
		T_ERR(chmod("id/open/c1", 02755), EPERM,
		      "as 4242: chmod g+s its file: EPERM through the mount");
		T_ERR(chmod("id/open/c1", 04755), EPERM,
		      "as 4242: chmod u+s its file: EPERM through the mount");
		T_OK(chmod("id/open/d1", 02755), "as 4242: chmod g+s its folder");
		T_EQ(st_of("id/open/d1").st_mode & 07777, 02755, "as 4242: a folder may be setgid");
	} else {
		T_OK(chmod("id/open/c1", 02755), "as 4242: chmod g+s its file of a group it is in");
		T_EQ(st_of("id/open/c1").st_mode & 07777, 02755,
		     "as 4242: setgid kept for a member");
	}
	T_OK(chmod("id/open/ng", 02755), "as 4242: chmod g+s its file of group 4444");
	T_EQ(st_of("id/open/ng").st_mode & 07777, 0755, "as 4242: setgid dropped for a non-member");
	T_ERR(utimensat(AT_FDCWD, "id/pub", ts, 0), EPERM,
	      "as 4242: set explicit times on a root file: EPERM");
	T_ERR(utimensat(AT_FDCWD, "id/pub", NULL, 0), EACCES,
	      "as 4242: touch a read-only root file: EACCES");
	T_OK(utimensat(AT_FDCWD, "id/suidw", NULL, 0),
	     "as 4242: touch a group-writable file of 4444");
	T_ERR(setxattr("id/pub", "user.x", "1", 1, 0), EACCES,
	      "as 4242: setxattr on a read-only root file: EACCES");
	T_ERR(unlink("id/sticky/rootfile"), EPERM,
	      "as 4242: unlink root's file in a sticky folder: EPERM");
	if (put_file("id/sticky/mine", "m", 0644) == 0)
		T_OK(unlink("id/sticky/mine"), "as 4242: unlink its own file in a sticky folder");
	else
		ok(false, "as 4242: create in a sticky 1777 folder");
}

static void t_identity(void)
{
	gid_t groups[] = {GID_MEMBER};
	pid_t pid;
	int status;

	if (geteuid() != 0) {
		skip("identity checks need root");
		return;
	}
	ident_setup();
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		if (setgroups(1, groups) < 0 || setresgid(GID_U, GID_U, GID_U) < 0 ||
		    setresuid(UID_U, UID_U, UID_U) < 0) {
			ok(false, "identity: become 4242:4242 with group 4343");
			_exit(1);
		}
		ident_child();
		fflush(stdout);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid) {
		ok(false, "identity: fork");
		return;
	}
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "identity: the child ran to the end");
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

int main(int argc, char **argv)
{
	char work[PATH_MAX];
	int failed;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3 || argc > 4 || (strcmp(argv[1], "native") && strcmp(argv[1], "fuse"))) {
		fprintf(stderr, "usage: fsops native|fuse DIR [HOSTDIR]\n");
		return 2;
	}
	is_fuse = !strcmp(argv[1], "fuse");
	tap = mmap(NULL, sizeof(*tap), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (tap == MAP_FAILED)
		return 2;
	snprintf(work, sizeof(work), "%s/fsops.XXXXXX", argv[2]);
	if (!mkdtemp(work) || chmod(work, 0755) < 0 || chdir(work) < 0) {
		printf("Bail out! cannot make a work folder in %s: %s\n", argv[2], strerror(errno));
		return 2;
	}
	diag("fsops %s in %s", argv[1], work);
	if (argc == 4)
		snprintf(host_work, sizeof host_work, "%s%s", argv[3], work + strlen(argv[2]));

	t_open_flags();
	t_read_write();
	t_mmap();
	t_truncate();
	t_fallocate();
	t_copy_ioctl();
	t_rename();
	t_links();
	t_dirs();
	t_attrs();
	t_xattr();
	t_statfs();
	t_identity();
	t_sparse();
	/* last: 10,000 entries are the likeliest to upset a server's caches,
	 * and what fails after them would hide what it means */
	t_readdir();

	if (chdir("/") < 0 || nftw(work, rm_one, 16, FTW_DEPTH | FTW_PHYS) < 0)
		ok(false, "remove the work folder %s", work);
	printf("1..%d\n", tap->n);
	failed = tap->failed;
	return failed ? 1 : 0;
}

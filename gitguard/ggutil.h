/* SPDX-License-Identifier: MIT */
/*
 * Helpers that decide access, shared by gitguard, fusefs and src: one
 * function per meaning, so two copies cannot differ on "..".
 * gitguard is the lowest layer, so they live here; fusefs and src include
 * this header and link libgitguard.a.
 *
 * Errors: negative errno returned, results through out-parameters, errno
 * not to be read afterwards (as gitguard.h says for the whole library);
 * gg_open_nofollow alone is a drop-in for openat(2): -1 and errno.
 *
 *   path.c   gg_path_abs, gg_path_rel: the two lexical normalisers;
 *            gg_path_next: one component at a time
 *   fdio.c   gg_open_nofollow; guard_read_fd, guard_read_file: the capped
 *            reader of files a bot may have written
 *   grow.c   gg_grow: the doubling array
 */
#ifndef GITGUARD_GGUTIL_H
#define GITGUARD_GGUTIL_H

#include <dirent.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/stat.h>

/* path.c */

/*
 * Meaning 1, for paths a person gives (mount sources, targets, a root's host
 * path, an absolute symlink target): lexical and absolute.  IN must start
 * with "/"; the result in OUT has no ".", ".." or empty components and no
 * trailing slash ("/" alone for the root), and a ".." at "/" stays at "/",
 * as the kernel takes it.  Nothing is looked up: stat could hang on a dead
 * mount, and callers open the result without following links.
 * 0, -EINVAL (IN relative or NULL) or -ENAMETOOLONG (OUT, of OUTSZ bytes,
 * too small at some step).
 */
int gg_path_abs(const char *in, char *out, size_t outsz);

/*
 * Meaning 2, for paths inside a root (a relative symlink target joined to
 * its folder, a relative core.hooksPath): lexical, in place, relative to
 * where it starts.  Leading, double and trailing slashes and "." go, "a/.."
 * cancels; false if a ".." would climb above the start (the path leaves the
 * root: the caller decides what that means), PATH is then undefined.
 * "" (the start itself) is a valid result.
 */
bool gg_path_rel(char *path);

/*
 * The next component of the path at *P (slashes before it skipped) into COMP
 * of COMPSZ bytes, *P moved past it: its length, 0 at the end, or
 * -ENAMETOOLONG (*P moved past it all the same) when it does not fit.
 */
int gg_path_next(const char **p, char *comp, size_t compsz);

/*
 * A string made safe to print for a person: control characters, DEL,
 * backslash, C1 controls and bytes that are not UTF-8 as \n, \t, \\ or
 * \xHH, and Unicode's bidirectional controls as \uHHHH, so a bot's file
 * name cannot forge lines, drive a terminal or show as another name.
 * Truncated to OUTSZ - 1 bytes, always NUL-ended.
 */
void gg_escape(const char *in, char *out, size_t outsz);

/* FMT's message (at most 2 KiB of it) into OUT, escaped as gg_escape does: every log line */
void gg_vescapef(char *out, size_t outsz, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

/* fdio.c */

/*
 * Open PATH relative to DIRFD (or absolute) without following a symlink in
 * any component, the last included: openat2(RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS), or by hand one component at a time with
 * O_NOFOLLOW where openat2 is missing (old kernels, seccomp, valgrind).  With
 * BENEATH, an absolute PATH or a ".." climbing out of DIRFD is EXDEV.  A link
 * anywhere is ELOOP.  O_CLOEXEC is added.  The fd, or -1 with errno set.
 */
int gg_open_nofollow(int dirfd, const char *path, int flags, bool beneath);

/*
 * Read the open file FD from its start: a regular file of at most CAP bytes
 * (it may not grow past CAP while being read).  0 with *BUF malloc'd and
 * NUL-terminated, *LEN its length and *ST (if not NULL) its fstat; -EINVAL
 * for a non-regular file, -EFBIG when larger than CAP, or another -errno.
 * The one reader of files a bot may have written.
 */
int guard_read_fd(int fd, size_t cap, char **buf, size_t *len, struct stat *st);

/*
 * guard_read_fd on NAME, one component of DIRFD, opened with O_NOFOLLOW (a
 * symlink is -EINVAL, as any non-regular file) and O_NONBLOCK (a FIFO does
 * not block).  -ENOENT when missing.
 */
int guard_read_file(int dirfd, const char *name, size_t cap, char **buf, size_t *len,
		    struct stat *st);

/* grow.c */

/*
 * Make room for NEED elements of SIZE bytes in the array *(T **)ARRAY, of
 * *ALLOC elements: doubles *ALLOC (from MIN when 0) until NEED fit.  0, or
 * -ENOMEM with the array and *ALLOC as they were.
 */
int gg_grow(void *array, size_t *alloc, size_t need, size_t size, size_t min);

/* fdio.c: the folder NAME in DFD (NAME itself not followed) for readdir, or NULL with errno */
DIR *gg_opendirat(int dfd, const char *name);
int gg_step_up(int *cur, const struct stat *st);

#endif

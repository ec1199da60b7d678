/* SPDX-License-Identifier: MIT */
/*
 * Helpers that decide access, shared by gitguard, fusefs and src (STYLE.md
 * 15): one function per meaning, so two copies cannot differ on "..".
 * gitguard is the lowest layer, so they live here; fusefs and src include
 * this header and link libgitguard.a.
 *
 * Errors: negative errno returned, results through out-parameters, errno
 * not to be read afterwards (as gitguard.h says for the whole library).
 */
#ifndef GITGUARD_GGUTIL_H
#define GITGUARD_GGUTIL_H

#include <stdbool.h>
#include <stddef.h>

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

#endif

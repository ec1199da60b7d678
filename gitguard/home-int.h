/* SPDX-License-Identifier: MIT */
/* Private to gitguard/home.c and gitguard/home-ssh.c: one scan of the homes (H1). */
#ifndef GITGUARD_HOME_INT_H
#define GITGUARD_HOME_INT_H

#include <stdbool.h>
#include <sys/stat.h>

#include "gitguard/guard-int.h"

/* One home scan: its records, the files it read (or found missing), and the homes met */
struct hscan {
	struct guard *g;
	struct guard_repo r; /* records, and repo.c's watch for one config file at a time */
	struct guard_wfile *w;
	size_t nw;
	size_t aw;
	struct guard_home *tab; /* NULL on a rescan */
	size_t n;
	unsigned outside;  /* config files outside the root read */
	unsigned walked;   /* entries of ~/.ssh and ~/.gnupg looked at */
	unsigned walk_cut; /* times tree_walk stopped at a bound */
	unsigned sshfiles; /* this home's ssh config files read */
};

/* home.c: the order of homes (dev, ino) */
int home_cmp(const void *a, const void *b);
/* home.c: has the watched file F changed since it was read? WF_* */
int home_wfile_moved(const struct guard_wfile *f);
void home_wfiles_free(struct guard_wfile *w, size_t n);
/*
 * home-reuse.c: the view's last scan as G's (H and G's homes): 1 if it may
 * be, else 0 or -errno; keep a fresh one (its TRAIL taken) for the next.
 */
int home_reuse_take(struct guard *g, struct hscan *h, const char *const *extra);
void home_reuse_keep(struct guard *g, struct hscan *h, struct gg_trail *trail,
		     const char *const *extra);
/* home.c: a folder on the way to what a home's config names (pinned; a link RO) */
int home_pin_cb(void *arg, const struct stat *st, bool is_link);
/* home.c: records what guard_resolve answered for a protected path (RO, NC if missing) */
int home_record(struct hscan *h, int kind, const struct resolved *res, bool tree);
/* home.c: "~/x" (HOME), "~user/x", else a path relative to DIR, into OUT */
int home_expand(const char *in, const char *dir, const char *home, char *out, size_t outsz);
/* home-ssh.c: what the home DIR's ~/.ssh/config Includes, inside the root or not */
int home_ssh(struct hscan *h, const char *dir);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * Authority: who may see which bot, what a bot may read and write, and
 * what a bot may give the bots it makes. Pure functions over the list of
 * bots: no libevent, no I/O, so tests/unit-authority.c runs them without
 * root. Paths are absolute and normalised (path_normalise) before they
 * get here; path_within decides "inside" by whole components.
 */
#include "src/daemon/bots-int.h"

#include <stdio.h>
#include <string.h>

struct bot *auth_find(const struct bots *all, const char *name)
{
	struct bot *b;

	TAILQ_FOREACH(b, all, entry)
		if (strcmp(b->name, name) == 0)
			return b;
	return NULL;
}

/* Is b made by anc, directly or through its children? */
bool auth_descends(const struct bots *all, const struct bot *b, const struct bot *anc)
{
	int depth;

	for (depth = 0; b != NULL && b->creator != NULL && depth < 1000; depth++) {
		if (strcmp(b->creator, anc->name) == 0)
			return true;
		b = auth_find(all, b->creator);
	}
	return false;
}

/*
 * May the asker see b? The asker is the bot caller, or (caller NULL) the
 * operator with uid op. A bot sees itself and the bots it made; root sees
 * every bot; an operator in agentfsd's group sees the bots it made, and
 * theirs.
 */
bool auth_visible(const struct bots *all, const struct bot *caller, uid_t op, const struct bot *b)
{
	if (caller != NULL)
		return caller == b || auth_descends(all, b, caller);
	return op == 0 || b->owner_uid == op;
}

/*
 * May the pod "NAMESPACE/SERVICEACCOUNT" have b's roots (agentfs-csi)?
 * Only if the operator named it in b's pods: whole-string equality, so
 * "ns/a" never matches "ns/ab" nor "ns-x/a".
 */
bool auth_pod_allowed(const struct bot *b, const char *pod)
{
	size_t i;

	for (i = 0; i < b->pods.n; i++)
		if (strcmp(b->pods.v[i], pod) == 0)
			return true;
	return false;
}

/*
 * Is p absolute and normalised: no empty, "." or ".." component and no
 * trailing slash? path_within compares strings, so "/a/b/../c" would pass
 * for inside "/a/b": such a path is refused here, not trusted.
 */
bool auth_path_ok(const char *p)
{
	const char *c;

	if (p == NULL || p[0] != '/')
		return false;
	if (p[1] == '\0')
		return true;
	for (c = p; *c != '\0'; c++) {
		if (*c != '/')
			continue;
		if (c[1] == '/' || c[1] == '\0')
			return false;
		if (c[1] == '.' && (c[2] == '/' || c[2] == '\0'))
			return false;
		if (c[1] == '.' && c[2] == '.' && (c[3] == '/' || c[3] == '\0'))
			return false;
	}
	return true;
}

/* The roots a bot writes to: its folder (unless read-only) and writable. */
bool auth_may_write(const struct bot *b, const char *path)
{
	if (b->sandbox == SANDBOX_READ_ONLY || !auth_path_ok(path))
		return false;
	return path_within(path, b->folder) || paths_contains(&b->writable, path);
}

bool auth_may_read(const struct bot *b, const char *path)
{
	if (!auth_path_ok(path))
		return false;
	return path_within(path, b->folder) || paths_contains(&b->writable, path) ||
	       paths_contains(&b->readable, path);
}

/*
 * Is the bot b no weaker than its ceiling c (a bot that made it)? Fills
 * why with the first excess.
 */
bool auth_within_ceiling(const struct bot *b, const struct bot *c, char *why, size_t len)
{
	size_t i;

	if (b->sandbox > c->sandbox) {
		snprintf(why, len, "sandbox %s is weaker than %s's %s", sandbox_name(b->sandbox),
			 c->name, sandbox_name(c->sandbox));
		return false;
	}
	if (b->sandbox != SANDBOX_READ_ONLY && !auth_may_write(c, b->folder)) {
		snprintf(why, len, "folder %s is not writable by %s", b->folder, c->name);
		return false;
	}
	if (b->sandbox == SANDBOX_READ_ONLY && !auth_may_read(c, b->folder)) {
		snprintf(why, len, "folder %s is not readable by %s", b->folder, c->name);
		return false;
	}
	for (i = 0; i < b->writable.n; i++) {
		if (!auth_may_write(c, b->writable.v[i])) {
			snprintf(why, len, "writable %s is not writable by %s", b->writable.v[i],
				 c->name);
			return false;
		}
	}
	for (i = 0; i < b->readable.n; i++) {
		if (!auth_may_read(c, b->readable.v[i])) {
			snprintf(why, len, "readable %s is not readable by %s", b->readable.v[i],
				 c->name);
			return false;
		}
	}
	if (b->network && !c->network) {
		snprintf(why, len, "network is off for %s", c->name);
		return false;
	}
	if (b->allow_new_repos && !c->allow_new_repos) {
		snprintf(why, len, "allow_new_repos is off for %s", c->name);
		return false;
	}
	return true;
}

/* The bot the operator made at the top of b's family (b itself if the operator made it) */
const struct bot *auth_family_top(const struct bots *all, const struct bot *b)
{
	const struct bot *p;
	unsigned hops = 0;

	while (b->creator != NULL && (p = auth_find(all, b->creator)) != NULL && hops++ < 1000)
		b = p;
	return b;
}

/*
 * May the operator uid (not root) have one more bot? An operator in the
 * group, with every bot it and its bots made, holds at most a quarter of
 * max_bots (at least 4), as a family does: one operator cannot keep root
 * or the others from making bots.
 */
bool auth_operator_room(const struct bots *all, unsigned max_bots, uid_t uid, char *why, size_t len)
{
	unsigned share = max_bots / 4, n = 0;
	const struct bot *b;

	if (uid == 0)
		return true;
	if (share < 4)
		share = max_bots < 4 ? max_bots : 4;
	TAILQ_FOREACH(b, all, entry)
		n += b->owner_uid == uid;
	if (n >= share) {
		snprintf(why, len, "uid %u and its bots number %u, its share of max_bots (%u)",
			 (unsigned)uid, n, max_bots);
		return false;
	}
	return true;
}

/*
 * May caller (a bot) make one more bot, with nbots of max_bots made? Bots
 * made by bots get shares of max_bots (agentfsd(8), LIMITS): one
 * operator-made bot and everything it made hold at most a quarter, and all
 * bots' bots together leave a quarter to the operator, so one busy lead
 * cannot keep the operator or the other leads from making bots.
 */
bool auth_family_room(const struct bots *all, unsigned nbots, unsigned max_bots,
		      const struct bot *caller, char *why, size_t len)
{
	unsigned share = max_bots / 4, n = 0;
	const struct bot *top = auth_family_top(all, caller), *b;

	if (share < 4)
		share = max_bots < 4 ? max_bots : 4;
	TAILQ_FOREACH(b, all, entry)
		n += auth_family_top(all, b) == top;
	if (n >= share) {
		snprintf(why, len,
			 "bot %s and the bots it made number %u, their share of max_bots (%u)",
			 top->name, n, max_bots);
		return false;
	}
	if (max_bots >= 8 && nbots + share >= max_bots) {
		snprintf(why, len, "%u bots: the rest of max_bots (%u) is kept for the operator",
			 nbots, max_bots);
		return false;
	}
	return true;
}

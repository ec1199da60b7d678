/* SPDX-License-Identifier: MIT */
/*
 * agentfs audit, the findings of rules R1, X5, D12, G1's gitlinks and H1's
 * pager files: what a tree holds that would make the person's git write a
 * file that is no ref, hand a path to another command as an option, take a
 * folder of a bot's for a git folder, start git in a bot's repository, or
 * have less run a command.
 *   ref      a ref file (HEAD, ORIG_HEAD..., refs/..., packed-refs, a
 *            rebase's head-name, update-refs, refs-to-delete, an update-ref
 *            line of its todo list) naming something not under refs/
 *   options  apply-opt or gpg_sign_opt with an option naming a path
 *   name     a folder in a git folder (or its objects/) that git never makes
 *   gitlink  an index entry for a repository whose git folder is in the
 *            work tree (git status runs git there)
 *   index    an index entry whose stat data match the work tree's file but
 *            whose object is not that file's content: git status and git
 *            diff take the file for unchanged, so a change is hidden from
 *            the person's review
 *   home     a lesskey file, source or binary
 * Through descriptors, no link followed, bounded like the rest of audit.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "gitguard/audit-int.h"

#define AUDIT_REFS_DEPTH 32	/* folders deep under refs/ */
#define AUDIT_REFS_FILES 100000 /* loose refs read per git folder */

/* One file NAME in DFD checked as R1, X5 or X7 would check it */
static void content_file(struct audit *a, int dfd, const char *name, const char *path,
			 unsigned rule)
{
	const char *kind = rule == GUARD_RULE_R1   ? "ref"
			   : rule == GUARD_RULE_X7 ? "exec"
						   : "options";
	const char *why = NULL;
	size_t len;
	char *buf;
	int rc;

	rc = guard_read_file(dfd, name, guard_content_cap(rule), &buf, &len, NULL);
	if (rc == -ENOENT)
		return;
	if (rc) {
		audit_found(a, path, kind, "cannot be checked (%s): git may follow what it names",
			    rc == -EINVAL ? "not a regular file" : strerror(-rc));
		return;
	}
	if (guard_content_check(rule, name, buf, len, a->hashsz, &why))
		audit_found(a, path, kind,
			    rule == GUARD_RULE_R1   ? "%s: the person's git would write that file"
			    : rule == GUARD_RULE_X7 ? "%s (in PROMPT_COMMAND mode)"
						    : "%s: git hands it to another command",
			    why);
	free(buf);
}

/* A file or folder under refs/: folders walked (to AUDIT_REFS_DEPTH), files checked */
static void refs_entry(struct audit *a, int dfd, const char *name, const char *path)
{
	struct stat st;
	size_t n = strlen(name);

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return;
	if (S_ISDIR(st.st_mode)) {
		if (a->refs_depth < AUDIT_REFS_DEPTH) {
			a->refs_depth++;
			audit_each_entry(a, dfd, name, path, refs_entry);
			a->refs_depth--;
		}
		return;
	}
	if ((n > 5 && !strcmp(name + n - 5, ".lock")) || a->refs_files++ >= AUDIT_REFS_FILES)
		return;
	content_file(a, dfd, name, path, GUARD_RULE_R1);
}

static void top_ref(struct audit *a, int dfd, const char *name, const char *path)
{
	const struct guard_cls gitdir = {.kind = GUARD_GITDIR};

	if (guard_content_rule(&gitdir, name) == GUARD_RULE_R1)
		content_file(a, dfd, name, path, GUARD_RULE_R1);
}

/* R1: the refs at the top of the git folder GFD (PATH) and every loose ref under refs/ */
void audit_refs(struct audit *a, int gfd, const char *path)
{
	char *p;

	audit_each_entry(a, gfd, ".", path, top_ref);
	p = audit_join(path, "refs");
	a->refs_depth = 0;
	a->refs_files = 0;
	if (p)
		audit_each_entry(a, gfd, "refs", p, refs_entry);
	free(p);
}

/* R1, X5 and X7 for a file of a rebase's, am's or sequencer's state folder */
void audit_state_refs(struct audit *a, int dfd, const char *name, const char *path)
{
	const struct guard_cls seq = {.kind = GUARD_INGIT, .role = GUARD_R_SEQ};
	unsigned rule = guard_content_rule(&seq, name);

	if (rule == GUARD_RULE_R1 || rule == GUARD_RULE_X5 || rule == GUARD_RULE_X7)
		content_file(a, dfd, name, path, rule);
}

/*
 * D10: rerere's records of a conflicted merge.  The next git commit (merge,
 * cherry-pick...) with rerere on copies the file each names into
 * rr-cache/ID, or writes a recorded resolution to it: any record is listed,
 * one git would not write by why.
 */
void audit_merge_rr(struct audit *a, int dfd, const char *name, const char *path)
{
	const char *why = NULL;
	size_t len;
	char *buf;
	int rc;

	rc = guard_read_file(dfd, name, guard_content_cap(GUARD_RULE_D10), &buf, &len, NULL);
	if (rc == -ENOENT)
		return;
	if (rc) {
		audit_found(a, path, "state", "rerere records that cannot be checked (%s)",
			    rc == -EINVAL ? "not a regular file" : strerror(-rc));
		return;
	}
	rc = guard_merge_rr_check(buf, len, a->hashsz, &why);
	if (rc == -EINVAL)
		audit_found(a, path, "state", "%s", why);
	else if (rc)
		audit_found(a, path, "state",
			    "rerere records: with rerere on, the next git commit copies the file "
			    "each names into rr-cache, or writes a resolution to it; review them "
			    "(tr '\\0' '\\n' <FILE) or remove the file");
	free(buf);
}

/* An "update-ref REF" (or "u REF") line of a todo list: REF is updated when it ends */
void audit_update_ref_line(struct audit *a, const char *path, const char *p)
{
	size_t n;

	if (!strncmp(p, "update-ref", 10) && (p[10] == ' ' || p[10] == '\t'))
		p += 11;
	else if (p[0] == 'u' && (p[1] == ' ' || p[1] == '\t'))
		p += 2;
	else
		return;
	while (*p == ' ' || *p == '\t')
		p++;
	n = strcspn(p, " \t\r");
	if (!guard_refname_ok(p, n))
		audit_found(a, path, "ref",
			    "update-ref %.*s: git rebase --continue writes that file, not a ref",
			    (int)(n > 200 ? 200 : n), p);
}

static void name_entry(struct audit *a, const char *path)
{
	audit_found(a, path, "name",
		    "a folder git does not make here: a commondir or a worktree's gitdir naming "
		    "it would make it a git folder (its config, its hooks)");
}

static void objinfo_entry(struct audit *a, int dfd, const char *name, const char *path)
{
	const struct guard_cls objinfo = {.kind = GUARD_INGIT, .role = GUARD_R_OBJINFO};
	struct stat st;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) ||
	    guard_git_name_ok(&objinfo, name, st.st_mode))
		return;
	audit_found(a, path, "name", "a name git does not make in objects/info");
}

/*
 * D7: the multi-pack-index NAME in the folder DFD (PATH), a layer of git
 * >= 2.47's chain if LAYER, naming a pack elsewhere than objects/pack (midx.c)
 */
static void midx_file(struct audit *a, int dfd, const char *name, bool layer, const char *path)
{
	const char *why = NULL;
	char *buf, *p;
	size_t len;
	int rc;

	rc = guard_read_file(dfd, name, guard_content_cap(GUARD_RULE_D7), &buf, &len, NULL);
	p = rc != -ENOENT ? audit_join(path, name) : NULL;
	if (p && rc)
		audit_found(a, p, "name", "a multi-pack-index that cannot be checked (%s)",
			    rc == -EINVAL ? "not a regular file" : strerror(-rc));
	else if (p && (layer ? guard_midx_layer_check(buf, len, &why)
			     : guard_midx_check(buf, len, &why)))
		audit_found(a, p, "name", "%s", why);
	if (!rc)
		free(buf);
	free(p);
}

/* D7: objects/pack/multi-pack-index and the layers of multi-pack-index.d */
void audit_midx(struct audit *a, int gfd, const char *path)
{
	struct dirent *de;
	int ofd, pfd, cfd;
	char *pp, *cp;
	DIR *d;

	ofd = audit_open_dir(gfd, "objects");
	pfd = ofd >= 0 ? audit_open_dir(ofd, "pack") : -1;
	pp = pfd >= 0 ? audit_join(path, "objects/pack") : NULL;
	if (pp)
		midx_file(a, pfd, "multi-pack-index", false, pp);
	cfd = pp ? audit_open_dir(pfd, "multi-pack-index.d") : -1;
	d = cfd >= 0 ? fdopendir(cfd) : NULL;
	cp = d ? audit_join(pp, "multi-pack-index.d") : NULL;
	while (cp && (de = readdir(d)))
		if (guard_midx_layer_name(de->d_name))
			midx_file(a, dirfd(d), de->d_name, true, cp);
	if (d)
		closedir(d);
	else if (cfd >= 0)
		close(cfd);
	free(cp);
	free(pp);
	if (pfd >= 0)
		close(pfd);
	if (ofd >= 0)
		close(ofd);
}

/* D12: folders in the git folder GFD (PATH) and its objects/ that git does not make */
void audit_names(struct audit *a, int gfd, const char *path)
{
	static const struct guard_cls top = {.kind = GUARD_GITDIR};
	static const struct guard_cls objects = {.kind = GUARD_INGIT, .role = GUARD_R_OBJECTS};
	struct dirent *de;
	struct stat st;
	char *p, *o;
	DIR *d;
	int i, fd;

	for (i = 0; i < 2; i++) {
		fd = audit_open_dir(gfd, i ? "objects" : ".");
		d = fd >= 0 ? fdopendir(fd) : NULL;
		if (!d) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		o = i ? audit_join(path, "objects") : NULL;
		while ((de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
			    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
			    !S_ISDIR(st.st_mode) ||
			    guard_git_name_ok(i ? &objects : &top, de->d_name, st.st_mode))
				continue;
			p = audit_join(i ? (o ? o : path) : path, de->d_name);
			if (p)
				name_entry(a, p);
			free(p);
		}
		free(o);
		closedir(d);
	}
	p = audit_join(path, "objects/info");
	if (p && (fd = audit_open_dir(gfd, "objects")) >= 0) {
		audit_each_entry(a, fd, "info", p, objinfo_entry);
		close(fd);
	}
	free(p);
}

struct gitlinks {
	struct audit *a;
	int topfd;
	const char *top;
	struct strs seen; /* the index reader may walk the entries more than once */
};

static int gitlink_entry(void *arg, const char *path, uint32_t mode, const unsigned char *oid,
			 const char **why)
{
	struct gitlinks *l = arg;
	struct stat st;
	char *p;
	int fd;

	(void)oid;
	(void)why;
	if ((mode & 0170000) != 0160000)
		return 0;
	for (size_t i = 0; i < l->seen.n; i++)
		if (!strcmp(l->seen.v[i], path))
			return 0;
	strs_add(&l->seen, path);
	fd = gg_open_nofollow(l->topfd, path, O_PATH | O_DIRECTORY, true);
	if (fd < 0)
		return 0;
	if (!fstatat(fd, ".git", &st, AT_SYMLINK_NOFOLLOW) && S_ISDIR(st.st_mode) &&
	    (p = audit_join(l->top, path))) {
		audit_found(l->a, p, "gitlink",
			    "a gitlink to a repository whose git folder is in the work tree: git "
			    "status and git diff run git there, with its config (a bot's, if "
			    "it made it)");
		free(p);
	}
	close(fd);
	return 0;
}

/* Gitlinks of the index of GFD, whose work tree is TOPFD (TOP) */
void audit_gitlinks(struct audit *a, int gfd, int topfd, const char *top)
{
	struct gitlinks l = {.a = a, .topfd = topfd, .top = top};
	const char *why = NULL;
	size_t len;
	char *buf;

	if (topfd < 0 || guard_read_file(gfd, "index", GUARD_INDEX_MAX, &buf, &len, NULL))
		return;
	guard_index_entries(buf, len, a->hashsz, gitlink_entry, &l, &why);
	strs_free(&l.seen);
	free(buf);
}

#define AUDIT_HASH_MAX (256u << 20) /* bytes of one file read to compare it with the index */

struct hidden_changes {
	struct audit *a;
	int topfd;
	const char *top;
};

/* Would git take the file ST for the entry E unchanged (read-cache.c ie_match_stat)? */
static bool stat_matches(const struct guard_index_stat *e, const struct stat *st)
{
	return e->mtime_sec == (uint32_t)st->st_mtim.tv_sec &&
	       e->mtime_nsec == (uint32_t)st->st_mtim.tv_nsec &&
	       e->ctime_sec == (uint32_t)st->st_ctim.tv_sec &&
	       e->ctime_nsec == (uint32_t)st->st_ctim.tv_nsec && e->size == (uint32_t)st->st_size &&
	       e->ino == (uint32_t)st->st_ino && e->uid == (uint32_t)st->st_uid &&
	       e->gid == (uint32_t)st->st_gid;
}

static int hidden_change(void *arg, const char *path, uint32_t mode, const unsigned char *oid,
			 const struct guard_index_stat *e)
{
	struct hidden_changes *h = arg;
	unsigned char sum[20];
	struct stat st;
	size_t len;
	char *buf, *p;
	int fd;

	(void)mode;
	fd = gg_open_nofollow(h->topfd, path, O_RDONLY | O_NONBLOCK | O_NOCTTY, true);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || !stat_matches(e, &st) ||
	    (uint64_t)st.st_size > AUDIT_HASH_MAX ||
	    guard_read_fd(fd, AUDIT_HASH_MAX, &buf, &len, NULL)) {
		close(fd);
		return 0;
	}
	close(fd);
	guard_blob_sha1(buf, len, sum);
	free(buf);
	if (memcmp(sum, oid, 20) && (p = audit_join(h->top, path))) {
		audit_found(h->a, p, "index",
			    "hidden change: the index's size and times for it match the file, so "
			    "git status and git diff take it for unchanged, but it is not the "
			    "content the index names (touch it, then git diff shows the change)");
		free(p);
	}
	return 0;
}

/*
 * Entries of the index of GFD, whose work tree is TOPFD (TOP), that hide a
 * change: a bot that stages a file and then puts the old object back in
 * its entry, stat data kept, leaves a change git never looks at. Each file
 * whose stat data match is read and hashed (SHA-1 repositories only).
 */
void audit_index_changes(struct audit *a, int gfd, int topfd, const char *top)
{
	struct hidden_changes h = {.a = a, .topfd = topfd, .top = top};
	size_t len;
	char *buf;

	if (topfd < 0 || a->hashsz != 20 ||
	    guard_read_file(gfd, "index", GUARD_INDEX_MAX, &buf, &len, NULL))
		return;
	guard_index_files(buf, len, a->hashsz, hidden_change, &h);
	free(buf);
}

/*
 * H1's pager files found anywhere in the tree: less reads a lesskey file,
 * source (.lesskey, .config/lesskey) or binary (.less, .config/less), from
 * the person's home, and its env section's LESSOPEN runs a command.
 */
void audit_home_file(struct audit *a, int dfd, const char *name, const char *path)
{
	static const char *const sub[] = {"less", "lesskey"};
	struct stat st;
	char *p;
	size_t i;

	if (!strcmp(name, ".less") || !strcmp(name, ".lesskey")) {
		if (!fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) && !S_ISDIR(st.st_mode))
			audit_found(a, path, "home",
				    "a lesskey file: less reads it in a home, and its LESSOPEN "
				    "runs a command when git pages");
		return;
	}
	if (strcmp(name, ".config"))
		return;
	for (i = 0; i < sizeof(sub) / sizeof(sub[0]); i++) {
		int fd = audit_open_dir(dfd, name);

		if (fd < 0)
			return;
		if (!fstatat(fd, sub[i], &st, AT_SYMLINK_NOFOLLOW) && !S_ISDIR(st.st_mode) &&
		    (p = audit_join(path, sub[i]))) {
			audit_found(a, p, "home",
				    "a lesskey file: less reads it in a home, and its LESSOPEN "
				    "runs a command when git pages");
			free(p);
		}
		close(fd);
	}
}

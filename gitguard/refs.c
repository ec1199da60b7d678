/* SPDX-License-Identifier: MIT */
/*
 * R1: what a file git reads as a ref, or as a list of refs, may name.
 *
 * git's files backend maps a ref NAME to a file: refs/... and one-level
 * names under the git folder (refs/files-backend.c files_ref_path), so a
 * name git 2.39 accepts (check_refname_format with REFNAME_ALLOW_ONELEVEL)
 * such as "commondir", "objects/info/alternates" or "worktrees/<id>/commondir"
 * is a file of the git folder.  When the person's git updates a ref without
 * REF_NO_DEREF (reset.c writes ORIG_HEAD so on every pull, merge, reset,
 * stash; git push writes the remote-tracking ref), it follows a symbolic
 * ref and writes the file the target names: a bot's ORIG_HEAD holding
 * "ref: commondir" makes the person's pull write .git/commondir.  A list of
 * ref names that git updates later (rebase-merge/update-refs, head-name,
 * refs-to-delete, packed-refs) is the same thing.
 *
 * So a ref file may hold an object name (40 or 64 hex digits, then the end
 * or white space: FETCH_HEAD has more after it), a symbolic ref to HEAD or
 * to a name under refs/ that check_refname_format accepts (refs.c), or
 * nothing (a file being written); a list may name refs under refs/ only.
 */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "gitguard/guard-int.h"

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Characters check_refname_component refuses anywhere (refs.c refname_disposition) */
static bool bad_ref_char(unsigned char c)
{
	return c < 0x20 || c == 0x7f || c == ' ' || c == ':' || c == '?' || c == '[' || c == '\\' ||
	       c == '^' || c == '~' || c == '*';
}

/*
 * NAME (LEN bytes) as git's check_refname_format(NAME, 0) takes it: two
 * components or more, none empty, starting with '.' or ending with ".lock",
 * no "..", no "@{", no forbidden character, not ending with '.', not "@".
 */
static bool refname_format_ok(const char *name, size_t len)
{
	size_t i, start = 0, comps = 0;

	if (!len || (len == 1 && name[0] == '@') || name[len - 1] == '.')
		return false;
	for (i = 0; i <= len; i++) {
		if (i < len && name[i] != '/') {
			if (bad_ref_char((unsigned char)name[i]) ||
			    (i > start && name[i - 1] == '.' && name[i] == '.') ||
			    (i > start && name[i - 1] == '@' && name[i] == '{'))
				return false;
			continue;
		}
		/* a component is name[start, i) */
		if (i == start || name[start] == '.' ||
		    (i - start >= 5 && !strncmp(name + i - 5, ".lock", 5)))
			return false;
		comps++;
		start = i + 1;
	}
	return comps >= 2;
}

/* A name under refs/ git writes as a file under refs/ (and nowhere else) */
bool guard_refname_ok(const char *name, size_t len)
{
	return len > 5 && !strncmp(name, "refs/", 5) && refname_format_ok(name, len);
}

/* What a symbolic ref may point to: HEAD, or a name under refs/ */
static bool symref_target_ok(const char *t, size_t len)
{
	return (len == 4 && !memcmp(t, "HEAD", 4)) || guard_refname_ok(t, len);
}

/* An object name at BUF (40 or 64 hex digits) followed by the end or white space */
static bool oid_at(const char *buf, size_t len, size_t *used)
{
	size_t n = 0;

	while (n < len && n < 65 && is_hex(buf[n]))
		n++;
	if ((n != 40 && n != 64) || (n < len && !is_space(buf[n])))
		return false;
	if (used)
		*used = n;
	return true;
}

/*
 * Refs git writes in place (write_file, stdio: create or O_TRUNC, then the
 * content): FETCH_HEAD, MERGE_HEAD, AUTO_MERGE (merge-ort), a rebase's
 * head-name and refs-to-delete.
 * Every other ref git writes by renaming its lock onto it, so a ref made or
 * emptied in place is no git's: refusing it keeps a refused write's O_TRUNC
 * from leaving the person a broken ref.
 */
bool guard_ref_in_place(const char *name)
{
	return !strcasecmp(name, "FETCH_HEAD") || !strcasecmp(name, "MERGE_HEAD") ||
	       !strcasecmp(name, "AUTO_MERGE") || !strcasecmp(name, "head-name") ||
	       !strcasecmp(name, "refs-to-delete");
}

/* One loose ref's content as git's parse_loose_ref_contents reads it (after rtrim) */
static int loose_ref_check(const char *name, const char *buf, size_t len, const char **why)
{
	size_t i;

	while (len && is_space(buf[len - 1]))
		len--;
	if (!len && guard_ref_in_place(name))
		return 0; /* made empty, to be written next */
	if (!len) {
		*why = "an empty ref (git writes a ref by renaming its lock onto it)";
		return -EINVAL;
	}
	if (len >= 4 && !memcmp(buf, "ref:", 4)) {
		for (i = 4; i < len && is_space(buf[i]); i++)
			;
		if (symref_target_ok(buf + i, len - i))
			return 0;
		*why = "a symbolic ref to a name not under refs/ (git would write the file it "
		       "names)";
		return -EINVAL;
	}
	if (oid_at(buf, len, NULL))
		return 0;
	*why = "neither an object name nor a symbolic ref";
	return -EINVAL;
}

/* The next line of BUF from *POS: its start and length (no '\n'); false at the end */
static bool next_line(const char *buf, size_t len, size_t *pos, const char **line, size_t *n)
{
	const char *nl;

	if (*pos >= len)
		return false;
	*line = buf + *pos;
	nl = memchr(*line, '\n', len - *pos);
	*n = nl ? (size_t)(nl - *line) : len - *pos;
	*pos += *n + (nl != NULL);
	return true;
}

/* packed-refs: a "# pack-refs with:" header, "<oid> refs/..." and "^<oid>" lines */
static int packed_refs_check(const char *buf, size_t len, const char **why)
{
	size_t pos = 0, n, used, lineno = 0;
	const char *l;

	while (next_line(buf, len, &pos, &l, &n)) {
		if (lineno++ == 0 && n >= 18 && !memcmp(l, "# pack-refs with:", 17))
			continue;
		if (n && l[0] == '^' && oid_at(l + 1, n - 1, &used) && used == n - 1)
			continue;
		if (oid_at(l, n, &used) && used < n && l[used] == ' ' &&
		    guard_refname_ok(l + used + 1, n - used - 1))
			continue;
		*why = "a packed-refs line that is not an object name and a ref under refs/";
		return -EINVAL;
	}
	return 0;
}

/*
 * rebase-merge/update-refs (sequencer.c write_update_refs_state): the ref,
 * the object before and the object after, one line each, for every ref the
 * rebase moves; `git rebase --continue` updates each name, following it if
 * it is a symbolic ref.  refs-to-delete: one ref per line, deleted at the end.
 */
static int ref_list_check(const char *buf, size_t len, unsigned stride, const char **why)
{
	size_t pos = 0, n, used;
	unsigned k = 0;
	const char *l;

	while (next_line(buf, len, &pos, &l, &n)) {
		if (k % stride == 0 ? !guard_refname_ok(l, n)
				    : !(oid_at(l, n, &used) && used == n)) {
			*why = "a list of refs naming something not under refs/";
			return -EINVAL;
		}
		k++;
	}
	if (k % stride) {
		*why = "an update-refs entry without its two object names";
		return -EINVAL;
	}
	return 0;
}

/*
 * rebase-merge/head-name, rebase-apply/head-name: the branch the rebase
 * updates when it ends (builtin/rebase.c, sequencer.c take it when it starts
 * with refs/), or "detached HEAD".
 */
static int head_name_check(const char *buf, size_t len, const char **why)
{
	while (len && is_space(buf[len - 1]))
		len--;
	if (!len || (len == 13 && !memcmp(buf, "detached HEAD", 13)) || guard_refname_ok(buf, len))
		return 0;
	*why = "a rebase's branch that is not a ref under refs/";
	return -EINVAL;
}

int guard_ref_check(const char *name, const char *buf, size_t len, const char **why)
{
	if (!strcasecmp(name, "packed-refs"))
		return packed_refs_check(buf, len, why);
	if (!strcasecmp(name, "update-refs"))
		return ref_list_check(buf, len, 3, why);
	if (!strcasecmp(name, "refs-to-delete"))
		return ref_list_check(buf, len, 1, why);
	if (!strcasecmp(name, "head-name"))
		return head_name_check(buf, len, why);
	return loose_ref_check(name, buf, len, why);
}

/* A HEAD symlink's target as git writes it (core.preferSymlinkRefs): a ref under refs/ */
bool guard_head_target_ok(const char *t)
{
	return t && guard_refname_ok(t, strlen(t));
}

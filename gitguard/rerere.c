/* SPDX-License-Identifier: MIT */
/*
 * D10's MERGE_RR: rerere's list of the conflicts in progress.
 *
 * git 2.39 (rerere.c read_rr, do_rerere_one_path) reads MERGE_RR at every
 * `git commit` (and merge, cherry-pick, rebase, am) while rerere is on, and
 * trusts it: each record is a conflict id, an optional ".VARIANT", a tab,
 * a path and a NUL.  For a record whose file has no conflict markers left it
 * copies that file, by the path as written (absolute, with "..", through any
 * symbolic link), to rr-cache/ID/postimage.VARIANT: a bot's record naming
 * /root/.ssh/id_ed25519 and the id of a resolution the person recorded
 * before has the person's next commit put the key where the bot reads it,
 * and one naming a file of the bot's plants a resolution D10 keeps it from
 * writing.  A record whose file still has markers has git write a recorded
 * resolution to that path.
 *
 * No record is safe to leave: one whose id rr-cache holds is the attack
 * above, and one whose id it does not hold (all the bot's git can write,
 * since D10 keeps it from making rr-cache/ID) crashes git 2.39 at the next
 * commit that finds its file resolved (a NULL status array, signal 11), which
 * leaves MERGE_RR.lock behind and fails every later commit, the person's on
 * the host too.  A path checked now may also lead through a symbolic link
 * made later.  So MERGE_RR may only be empty: git writes it by renaming
 * MERGE_RR.lock onto it, which fails for records ("unable to write rerere
 * record" at a conflict, status 128: git -c rerere.enabled=false is the
 * bot's way), and empty after a commit, a reset or `git rerere clear`.
 */
#include <errno.h>
#include <string.h>

#include "gitguard/gitguard.h"

#define RR_VARIANT_DIGITS 6

/*
 * The record at BUF (LEN bytes left), as git 2.39's read_rr() takes it: its
 * length with the NUL, or 0 with *WHY when it is none git would write.
 */
static size_t rr_record(const char *buf, size_t len, size_t hashsz, const char **why)
{
	const char *nul = memchr(buf, '\0', len);
	size_t hex = 2 * hashsz, i = hex, d;

	if (!nul) {
		*why = "MERGE_RR: a record without its NUL";
		return 0;
	}
	if ((size_t)(nul - buf) < hex + 2 || strspn(buf, "0123456789abcdef") != hex) {
		*why = "MERGE_RR: a record without a conflict id of the repository's hash";
		return 0;
	}
	if (buf[i] == '.') {
		d = strspn(buf + i + 1, "0123456789");
		if (d == 0 || d > RR_VARIANT_DIGITS) {
			*why = "MERGE_RR: a variant that is no small number";
			return 0;
		}
		i += 1 + d;
	}
	if (buf[i] != '\t') {
		*why = "MERGE_RR: a record without a tab before its path";
		return 0;
	}
	if (!guard_index_path_ok(buf + i + 1, 0100644)) {
		*why = "MERGE_RR: a path outside the work tree or in a git folder (rerere copies "
		       "the file it names into rr-cache)";
		return 0;
	}
	return (size_t)(nul - buf) + 1;
}

int guard_merge_rr_check(const char *buf, size_t len, size_t hashsz, const char **why)
{
	if (len == 0)
		return 0;
	if (!rr_record(buf, len, hashsz, why))
		return -EINVAL;
	*why = "MERGE_RR: a rerere record (rr-cache is read-only here: git would copy the file "
	       "it names into rr-cache, or crash on it; run git with -c rerere.enabled=false)";
	return -EROFS;
}

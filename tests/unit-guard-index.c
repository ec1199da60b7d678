/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of gitguard's X2 and X4 parsers: guard_index_check (an index
 * is refused when git's verify_path would refuse one of its paths, when a
 * mode is one git never writes, or when anything is not understood) and the
 * strategy file checks of seq.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gitguard/gitguard.h"
#include "tests/guard-tap.h"

struct ent {
	uint32_t mode;
	const char *name;
	unsigned xflags; /* flags2; sets the extended bit */
};

static size_t put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
	return 4;
}

/* An index of VERSION with entries E[0..N) and raw extension bytes EXT; trailer zeros. */
static size_t build(unsigned char *out, unsigned version, const struct ent *e, size_t n,
		    const void *ext, size_t extlen)
{
	size_t off = 0, i, common, nl, start;
	char prev[4096] = "";

	memcpy(out, "DIRC", 4);
	off = 4;
	off += put32(out + off, version);
	off += put32(out + off, (uint32_t)n);
	for (i = 0; i < n; i++) {
		start = off;
		memset(out + off, 0, 40 + 20);
		put32(out + off + 24, e[i].mode);
		off += 40 + 20;
		nl = strlen(e[i].name);
		out[off] = (unsigned char)(((nl < 0xfff ? nl : 0xfff) >> 8) |
					   (e[i].xflags ? 0x40 : 0));
		out[off + 1] = (unsigned char)(nl < 0xfff ? nl : 0xfff);
		off += 2;
		if (e[i].xflags) {
			out[off] = (unsigned char)(e[i].xflags >> 8);
			out[off + 1] = (unsigned char)e[i].xflags;
			off += 2;
		}
		if (version == 4) {
			for (common = 0; prev[common] && prev[common] == e[i].name[common];
			     common++)
				;
			out[off++] = (unsigned char)(strlen(prev) - common); /* < 128 here */
			memcpy(out + off, e[i].name + common, nl - common + 1);
			off += nl - common + 1;
			strcpy(prev, e[i].name);
		} else {
			memcpy(out + off, e[i].name, nl);
			off += nl;
			do
				out[off++] = 0;
			while ((off - start) % 8);
		}
	}
	if (extlen)
		memcpy(out + off, ext, extlen);
	off += extlen;
	memset(out + off, 0, 20);
	return off + 20;
}

/*
 * EXPR refused, and for the reason WANT names (a part of the why it gives):
 * a refusal for another reason is a failure too.
 */
#define REFUSED(expr, want, desc)                                                                  \
	do {                                                                                       \
		const char *why_ = NULL;                                                           \
		why = NULL;                                                                        \
		int rc_ = (expr);                                                                  \
		why_ = why;                                                                        \
		tap_ok(rc_ < 0 && why_ != NULL && strstr(why_, want) != NULL, "%s (%s)", desc,     \
		       why_ != NULL ? why_ : "no reason given");                                   \
	} while (0)

static unsigned char buf[1 << 16];

static int check1(unsigned version, uint32_t mode, const char *name, const char **why)
{
	struct ent e[2] = {{0100644, "!first", 0}, {mode, name, 0}};
	size_t len = build(buf, version, e, 2, NULL, 0);

	return guard_index_check((const char *)buf, len, why);
}

static size_t put64(unsigned char *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	return 4 + put32(p + 4, (uint32_t)v);
}

static unsigned char shared[1 << 12];
static size_t split_len;
static int seen;
static uint32_t seen_mode; /* the mode FN last saw the path counted with */

static int count_entry(void *arg, const char *path, uint32_t mode, const unsigned char *oid,
		       const char **why)
{
	(void)oid;
	(void)why;
	if (!strcmp(path, (const char *)arg)) {
		seen++;
		seen_mode = mode;
	}
	return 0;
}

/* An EWAH bitmap at P: POS's bit alone (LITERALS: the literal words claimed, 1 is right),
   or none with POS < 0 */
static size_t ewah1(unsigned char *p, int pos, unsigned literals)
{
	size_t off = 0;

	if (pos < 0) {
		off += put32(p + off, 0);
		off += put32(p + off, 0);
		return off + put32(p + off, 0);
	}
	off += put32(p + off, 64); /* one marker, one literal word */
	off += put32(p + off, 2);
	off += put64(p + off, (uint64_t)literals << 33);
	off += put64(p + off, (uint64_t)1 << pos);
	return off + put32(p + off, 0);
}

/*
 * A split index of one replacement (MODE) for position POS of a shared
 * index {.gitmodules, a}, or of none with POS < 0, deleting position DEL
 * (none if < 0); LITERALS is the literal-word count its replace bitmap
 * claims (1 is right).  guard_index_replaced()'s answer, with KEPT
 * guard_index_from_shared()'s, FN counting WANT.
 */
static int splitx(uint32_t mode, int pos, unsigned literals, int del, bool with_shared, bool kept,
		  const char *want)
{
	struct ent sh[2] = {{0100644, ".gitmodules", 0}, {0100644, "a", 0}};
	struct ent rep[1] = {{mode, "", 0}};
	unsigned char ext[128];
	size_t off = 8, slen, len;
	const char *why = NULL;

	slen = build(shared, 2, sh, 2, NULL, 0);
	memcpy(ext, "link", 4);
	memset(ext + off, 0xab, 20);
	off += 20;
	off += ewah1(ext + off, del, 1);
	off += ewah1(ext + off, pos, literals);
	put32(ext + 4, (uint32_t)(off - 8));
	len = build(buf, 2, rep, pos < 0 ? 0 : 1, ext, off);
	split_len = len;
	seen = 0;
	seen_mode = 0;
	return (kept ? guard_index_from_shared : guard_index_replaced)(
		(const char *)buf, len, with_shared ? (const char *)shared : NULL, slen, 20,
		count_entry, (void *)want, &why);
}

static int split1(uint32_t mode, unsigned pos, unsigned literals, bool with_shared)
{
	return splitx(mode, (int)pos, literals, -1, with_shared, false, ".gitmodules");
}

int main(void)
{
	static const char *const bad[] = {
		".git/hooks/pre-commit",
		".GIT/hooks/x",
		"a/.Git/config",
		".git",
		"git~1/hooks/x",
		"GIT~1/config",
		".git./hooks/x",
		".git /x",
		".git::$INDEX_ALLOCATION/x",
		"a/\xe2\x80\x8c.git/hooks/x",
		".g\xe2\x80\x8dit/x",
		"../outside/x",
		"a/../../x",
		"a/./b",
		"./a",
		"/etc/passwd",
		"a//b",
		"a/",
		"",
		"a\\.git\\hooks",
	};
	static const char *const good[] = {
		"README",     "src/a.c",    ".github/workflows/ci.yml",
		".gitignore", "a/.gitkeep", "git~2x",
		"..foo",      "a...b",	    ".gitx/y",
		"my.git/x",   "a\\b",
	};
	struct ent ok3[3] = {{0100644, "a", 0}, {0100755, "b/c", 0x4000}, {0120000, "d", 0x2000}};
	struct ent unsorted[2] = {{0100644, "b", 0}, {0100644, "a", 0}};
	struct ent v4pair[2] = {{0100644, "ab", 0}, {0100644, "ac", 0}};
	struct ent dup[2] = {{0100644, "a", 0}, {0100644, "a", 0}};
	struct ent sparse[2] = {{0100644, "a", 0}, {0040000, "dir/", 0x4000}};
	struct ent split[2] = {{0100644, "", 0}, {0100644, "x", 0}};
	unsigned char ext[64];
	const char *why = NULL;
	size_t i, len;
	unsigned v;
	int rc;

	for (v = 2; v <= 4; v++) {
		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			why = NULL;
			rc = check1(v, 0100644, bad[i], &why);
			/* an empty path has its own reason; every other is verify_path's */
			tap_ok(rc < 0 && why &&
				       strstr(why, *bad[i] ? "index path git would refuse"
							   : "empty path"),
			       "v%u: path '%s' refused (%s)", v, bad[i], why ? why : "-");
		}
		for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
			why = NULL;
			rc = check1(v, 0100644, good[i], &why);
			tap_ok(rc == 0, "v%u: path '%s' allowed%s%s", v, good[i], why ? ": " : "",
			       why ? why : "");
		}
	}
	REFUSED(check1(2, 0120000, ".gitmodules", &why), "index path git would refuse",
		"symlink .gitmodules refused");
	REFUSED(check1(2, 0120000, "GITMOD~1", &why), "index path git would refuse",
		"symlink GITMOD~1 refused");
	REFUSED(check1(2, 0120000, "~1234567", &why), "index path git would refuse",
		"symlink ~1234567 (git's 8.3 rule) refused");
	REFUSED(check1(2, 0120000, "a/gi7eba~9", &why), "index path git would refuse",
		"symlink a/gi7eba~9 refused");
	tap_ok(check1(2, 0100644, "~1234567", &why) == 0, "file ~1234567 allowed");
	tap_ok(check1(2, 0100644, ".gitmodules", &why) == 0, "file .gitmodules allowed");
	tap_ok(check1(2, 0160000, "sub", &why) == 0, "gitlink allowed");
	REFUSED(check1(2, 0160000, ".git", &why), "index path git would refuse",
		"gitlink at .git refused");
	REFUSED(check1(2, 0100777, "x", &why), "a mode git does not write", "mode 100777 refused");
	REFUSED(check1(2, 0040000, "x/", &why), "a mode git does not write",
		"folder entry without sdir refused");
	REFUSED(check1(2, 0, "x", &why), "a mode git does not write", "mode 0 refused");

	len = build(buf, 3, ok3, 3, NULL, 0);
	tap_ok(guard_index_check((const char *)buf, len, &why) == 0,
	       "v3 with skip-worktree and intent-to-add allowed");
	len = build(buf, 4, ok3, 3, NULL, 0);
	tap_ok(guard_index_check((const char *)buf, len, &why) == 0, "v4 with extended flags");
	len = build(buf, 2, ok3, 3, NULL, 0);
	REFUSED(guard_index_check((const char *)buf, len, &why),
		"extended index entry in a version 2", "extended flags in a v2 index refused");
	ok3[1].xflags = 0x8000;
	len = build(buf, 3, ok3, 3, NULL, 0);
	REFUSED(guard_index_check((const char *)buf, len, &why), "unknown extended flags",
		"unknown extended flag refused");
	len = build(buf, 2, unsorted, 2, NULL, 0);
	REFUSED(guard_index_check((const char *)buf, len, &why), "out of order or repeated",
		"unsorted entries refused");
	len = build(buf, 2, dup, 2, NULL, 0);
	REFUSED(guard_index_check((const char *)buf, len, &why), "out of order or repeated",
		"repeated entry refused");

	memcpy(ext, "sdir", 4);
	put32(ext + 4, 0);
	len = build(buf, 3, sparse, 2, ext, 8);
	tap_ok(guard_index_check((const char *)buf, len, &why) == 0,
	       "sparse folder entry with sdir");
	len = build(buf, 3, split, 2, NULL, 0);
	REFUSED(guard_index_check((const char *)buf, len, &why), "empty path",
		"empty name without link refused");
	memcpy(ext, "link", 4);
	put32(ext + 4, 20);
	memset(ext + 8, 0xab, 20);
	len = build(buf, 3, split, 2, ext, 28);
	tap_ok(guard_index_check((const char *)buf, len, &why) == 0,
	       "empty name (a replaced shared entry) with link allowed");
	memcpy(ext, "ZZZZ", 4);
	put32(ext + 4, 0);
	len = build(buf, 2, ok3, 1, ext, 8);
	REFUSED(guard_index_check((const char *)buf, len, &why), "extension gitguard does not know",
		"unknown extension refused");
	memcpy(ext, "TREE", 4);
	put32(ext + 4, 100);
	len = build(buf, 2, ok3, 1, ext, 8);
	REFUSED(guard_index_check((const char *)buf, len, &why), "past the end of the file",
		"extension past the end refused");
	memcpy(ext, "REUC", 4);
	put32(ext + 4, 11);
	memcpy(ext + 8,
	       "../x\0"
	       "0\0"
	       "0\0"
	       "0\0",
	       11);
	len = build(buf, 2, ok3, 1, ext, 19);
	REFUSED(guard_index_check((const char *)buf, len, &why),
		"resolve-undo path git would refuse", "resolve-undo path '../x' refused");
	memcpy(ext + 8,
	       "ok/x\0"
	       "0\0"
	       "0\0"
	       "0\0",
	       11);
	len = build(buf, 2, ok3, 1, ext, 19);
	tap_ok(guard_index_check((const char *)buf, len, &why) == 0, "resolve-undo 'ok/x' allowed");

	len = build(buf, 5, ok3, 1, NULL, 0);
	REFUSED(guard_index_check((const char *)buf, len, &why), "version git 2.39 does not read",
		"version 5 refused");
	len = build(buf, 2, ok3, 1, NULL, 0);
	buf[11] = 9;
	REFUSED(guard_index_check((const char *)buf, len, &why), "entry count larger than the file",
		"entry count too high refused");
	len = build(buf, 2, ok3, 1, NULL, 0);
	REFUSED(guard_index_check((const char *)buf, len - 1, &why), "unterminated path",
		"truncated index refused");
	REFUSED(guard_index_check("DIRC", 4, &why), "not an index file", "header only refused");

	/* v4: a strip count larger than the previous name */
	len = build(buf, 4, v4pair, 2, NULL, 0);
	tap_ok(guard_index_check((const char *)buf, len, &why) == 0, "v4 prefix compression");
	buf[12 + 66 + 62] = 50;
	REFUSED(guard_index_check((const char *)buf, len, &why),
		"strips more than the previous path", "v4 over-long strip refused");

	tap_ok(guard_strategy_name_ok("ort") && guard_strategy_name_ok("recursive") &&
		       guard_strategy_name_ok("resolve") && guard_strategy_name_ok("octopus") &&
		       guard_strategy_name_ok("ours") && guard_strategy_name_ok("subtree") &&
		       !guard_strategy_name_ok("my_strat-2.0+x") && !guard_strategy_name_ok("Ort"),
	       "plain strategy names");
	tap_ok(!guard_strategy_name_ok("x/../tools/fmt.sh") && !guard_strategy_name_ok("/bin/sh") &&
		       !guard_strategy_name_ok("") && !guard_strategy_name_ok("a b") &&
		       !guard_strategy_name_ok("a;b"),
	       "strategy names with a path or other characters refused");
	tap_ok(guard_seq_file_check("strategy", "ort\n", 4, &why) == 0 &&
		       guard_seq_file_check("strategy", "ort", 3, &why) == 0,
	       "strategy file: 'ort\\n', 'ort'");
	tap_ok(guard_seq_file_check("strategy", "", 0, &why) < 0 &&
		       guard_seq_file_check("strategy", "\n", 1, &why) < 0 &&
		       guard_seq_file_check("strategy_opts", "", 0, &why) == 0,
	       "an empty strategy refused (git runs git-merge-), empty strategy_opts not");
	tap_ok(guard_seq_file_check("strategy", "x/../tools/fmt.sh\n", 18, &why) < 0 &&
		       guard_seq_file_check("strategy", "ort\nx\n", 6, &why) < 0 &&
		       guard_seq_file_check("strategy", "or\0t", 4, &why) < 0,
	       "strategy file with a path, two lines or a NUL refused");
	tap_ok(guard_seq_file_check("strategy_opts", " --theirs --subtree=a/b\n", 24, &why) == 0,
	       "strategy_opts with a path value allowed");
	tap_ok(guard_seq_file_check("strategy_opts", "--ours\n--theirs\n", 16, &why) < 0,
	       "strategy_opts over two lines refused");
	{
		static const char *const xok[] = {
			" --ours", " '--theirs' '--subtree=lib/x'", " --patience --renormalize",
			" --find-renames=50% --rename-threshold=30", " --diff-algorithm=histogram",
			" --ignore-space-at-eol --no-renames", " theirs", NULL};
		static const char *const xbad[] = {
			/* git-merge-resolve hands it to read-tree: an index written anywhere */
			" --index-output=/root/.ssh/authorized_keys",
			" --ours --index-output=x", " '--ours --index-output=x'", " \"--ours\"",
			" --ours\\ x", " --subtree=-x", " --find-renames=1;x", " --exclude-per-directory=x",
			" 'ours", " --recurse-submodules", " --x", NULL};
		bool all = true;
		int k;

		for (k = 0; xok[k]; k++)
			if (guard_seq_file_check("strategy_opts", xok[k], strlen(xok[k]), &why) != 0) {
				printf("# refused: [%s]: %s\n", xok[k], why);
				all = false;
			}
		tap_ok(all, "strategy_opts with git's merge options allowed, quoted or not");
		all = true;
		for (k = 0; xbad[k]; k++)
			if (guard_seq_file_check("strategy_opts", xbad[k], strlen(xbad[k]), &why) == 0) {
				printf("# allowed: [%s]\n", xbad[k]);
				all = false;
			}
		tap_ok(all, "strategy_opts with another option, a split or a quote refused (X4)");
	}
	{
		const char ok[] = "[options]\n\tstrategy = ort\n\tstrategy-option = theirs\n"
				  "\tsignoff = true\n";
		const char evil[] = "[options]\n\tstrategy = x/../tools/fmt.sh\n";
		const char evil2[] = "[OPTIONS]\nStrategy=\"a/b\"\n";
		const char broken[] = "[options\nstrategy = ort\n";
		const char evilx[] = "[options]\n\tstrategy = resolve\n"
				     "\tstrategy-option = index-output=/root/.ssh/authorized_keys\n";

		tap_ok(guard_seq_opts_check(ok, sizeof(ok) - 1, &why) == 0,
		       "sequencer/opts from git");
		tap_ok(guard_seq_opts_check(evil, sizeof(evil) - 1, &why) < 0,
		       "sequencer/opts with a path strategy refused");
		tap_ok(guard_seq_opts_check(evil2, sizeof(evil2) - 1, &why) < 0,
		       "sequencer/opts: case and quotes do not hide it");
		tap_ok(guard_seq_opts_check(broken, sizeof(broken) - 1, &why) < 0,
		       "sequencer/opts that does not parse refused");
		tap_ok(guard_seq_opts_check(evilx, sizeof(evilx) - 1, &why) < 0,
		       "sequencer/opts with a strategy-option not git's refused");
	}
	/* split index: a replacement takes the shared entry's name */
	tap_ok(split1(0100644, 0, 1, true) == 0 && seen == 1,
	       "split: a replacement is checked under the shared entry's name");
	tap_ok(split1(0120000, 0, 1, true) < 0,
	       "split: a replacement making the shared .gitmodules a symlink refused");
	tap_ok(split1(0120000, 1, 1, true) == 0 && seen == 0,
	       "split: ... making a plain file a symlink allowed");
	tap_ok(split1(0100644, 2, 1, true) < 0,
	       "split: a replaced position past the shared index refused");
	tap_ok(split1(0100644, 1, 2, true) < 0, "split: a bitmap claiming words it lacks refused");
	tap_ok(split1(0100644, 1, 1, false) < 0, "split: no shared index to match refused");
	{
		char hex[65], want[41];

		memset(want, 'a', 40);
		for (i = 1; i < 40; i += 2)
			want[i] = 'b';
		want[40] = '\0';
		split1(0100644, 1, 1, true);
		tap_ok(guard_index_base((const char *)buf, split_len, 20, hex, &why) == 1 &&
			       !strcmp(hex, want),
		       "split: the shared index's name is read from the link extension");
		splitx(0100644, -1, 1, -1, true, false, "a");
		tap_ok(guard_index_base((const char *)buf, split_len, 20, hex, &why) == 1 &&
			       !strcmp(hex, want),
		       "split: ... also of a split index that replaces nothing");
	}
	/* what git sees of the shared index: replaced entries, and those neither replaced nor deleted */
	tap_ok(splitx(0160000, 1, 1, -1, true, true, "a") == 0 && seen == 1 && seen_mode == 0160000,
	       "split: a replacement's mode under the shared name (a gitlink)");
	tap_ok(splitx(0160000, 1, 1, -1, true, true, ".gitmodules") == 0 && seen == 1 &&
		       seen_mode == 0100644,
	       "split: a shared entry kept as it is");
	tap_ok(splitx(0160000, 1, 1, 0, true, true, ".gitmodules") == 0 && seen == 0,
	       "split: ... but not one deleted");
	tap_ok(splitx(0160000, 1, 1, -1, true, false, ".gitmodules") == 0 && seen == 0,
	       "split: guard_index_replaced leaves kept entries alone");
	tap_ok(splitx(0100644, -1, 1, -1, true, true, "a") == 0 && seen == 1,
	       "split: a split index that replaces nothing keeps the shared entries");
	tap_ok(splitx(0100644, -1, 1, -1, false, true, "a") == 0 && seen == 0,
	       "split: no shared index and nothing replaced: nothing to see (git dies)");
	tap_ok(splitx(0100644, -1, 1, 5, true, true, "a") < 0,
	       "split: a deleted position past the shared index refused");
	/* each extension once: git reads the last copy, gitguard's finders the first */
	{
		static const char *const twice[] = {"TREE", "sdir", "UNTR", "FSMN"};
		struct ent one[1] = {{0100644, "a", 0}};
		size_t k;

		for (k = 0; k < sizeof(twice) / sizeof(twice[0]); k++) {
			memcpy(ext, twice[k], 4);
			put32(ext + 4, 0);
			memcpy(ext + 8, ext, 8);
			len = build(buf, 2, one, 1, ext, !strcmp(twice[k], "TREE") ? 8 : 16);
			if (!strcmp(twice[k], "TREE"))
				tap_ok(guard_index_check((const char *)buf, len, &why) == 0,
				       "an empty TREE once allowed");
			len = build(buf, 2, one, 1, ext, 16);
			REFUSED(guard_index_check((const char *)buf, len, &why), "given twice",
				"an extension given twice refused");
		}
		memcpy(ext, "link", 4);
		put32(ext + 4, 20);
		memset(ext + 8, 0xab, 20);
		memcpy(ext + 28, ext, 28);
		len = build(buf, 2, one, 1, ext, 56);
		REFUSED(guard_index_check((const char *)buf, len, &why), "given twice",
			"two link extensions refused");
	}
	return tap_done();
}

/* SPDX-License-Identifier: MIT */
/*
 * Fuzzer for gitguard's pure content checks not covered by fuzz-index: R1
 * (refs.c), X5 (seq.c guard_optfile_check), X6 (seq.c guard_todo_check),
 * X7 (guard_count_check), D10 (rerere.c) and D7 (midx.c, plain and layer).
 * agentfsd runs them as root on bytes a bot wrote, to decide whether the
 * person's git may later read them.
 *
 * The first byte picks the checker (its low 3 bits) and, for R1, the file's
 * name (the other bits); the rest is the file.  Each accepted file is
 * checked against a reference written from git's own reading of it
 * (sequencer.c parse_insn_line/is_command, refs/files-backend.c
 * parse_loose_ref_contents, packed-backend.c, quote.c sq_dequote_step,
 * rerere.c read_rr, midx.c and chunk-format.c), kept apart from gitguard's
 * code on purpose: a property restating the checker would find nothing.
 * For every checker: rc is 0 or a negative errno, *why is set iff it
 * refuses, guard_content_check() agrees, and the verdict is the same on
 * an exact-size copy (ASan sees an over-read) and on copies with bytes
 * after LEN that would change it if they were read.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gitguard/gitguard.h"
#include "tests/fuzz/fuzz.h"

enum { C_REF, C_TODO, C_COUNT, C_MERGE_RR, C_MIDX, C_MIDX_LAYER, C_APPLY_OPT, C_GPG_OPT };

/* R1 files by name: a loose ref's base name is all guard_ref_check sees */
static const char *const ref_names[] = {
	"HEAD",	       "ORIG_HEAD",   "FETCH_HEAD", "MERGE_HEAD",     "AUTO_MERGE",
	"REBASE_HEAD", "x" /* refs/heads/x */,	    "packed-refs",    "head-name",
	"update-refs", "refs-to-delete", "Packed-Refs", "CHERRY_PICK_HEAD", "main",
	"BISECT_EXPECTED_REV", "NOTES_MERGE_PARTIAL"};
#define N_REF_NAMES (sizeof(ref_names) / sizeof(ref_names[0]))

/* git's isspace (ctype.c GIT_SPACE): no \v, no \f */
static bool git_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* any of C's white space: the widest trim anyone applies */
static bool c_space(unsigned char c)
{
	return git_space(c) || c == '\v' || c == '\f';
}

static bool hexdig(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static size_t hex_run(const uint8_t *p, size_t n)
{
	size_t i = 0;

	while (i < n && hexdig(p[i]))
		i++;
	return i;
}

/* exactly a full object name (SHA-1 or SHA-256), nothing else */
static bool is_oid(const uint8_t *p, size_t n)
{
	return (n == 40 || n == 64) && hex_run(p, n) == n;
}

/*
 * A ref name that, as a path, stays under refs/ of the git folder: "refs/"
 * and then components none of which is empty, "." or "..".  (A control
 * character in it only makes git refuse the name: no property here.)
 */
static bool under_refs(const uint8_t *p, size_t n)
{
	size_t i, start;

	if (n <= 5 || memcmp(p, "refs/", 5))
		return false;
	for (start = 5, i = 5; i <= n; i++) {
		if (i < n && p[i] != '/')
			continue;
		if (i == start || (i - start == 1 && p[start] == '.') ||
		    (i - start == 2 && p[start] == '.' && p[start + 1] == '.'))
			return false;
		start = i + 1;
	}
	return true;
}

/* Lines of P (N bytes) as git's line readers split them: '\n', a final one optional */
static bool next_line(const uint8_t *p, size_t n, size_t *pos, const uint8_t **l, size_t *ln)
{
	const uint8_t *nl;

	if (*pos >= n)
		return false;
	*l = p + *pos;
	nl = memchr(*l, '\n', n - *pos);
	*ln = nl ? (size_t)(nl - *l) : n - *pos;
	*pos += *ln + (nl != NULL);
	return true;
}

/*
 * A loose ref as git reads it (files-backend.c read_ref_internal: rtrim by
 * git's isspace, then a C string): "ref:" and, after blanks, the target it
 * follows on an update; else an object name, then the end or a blank.
 */
static void prop_loose_ref(const char *name, const uint8_t *p, size_t n)
{
	size_t g = n, i, tlen;
	const uint8_t *t;

	while (g && git_space(p[g - 1]))
		g--;
	if (g >= 4 && !memcmp(p, "ref:", 4)) {
		for (i = 4; i < g && git_space(p[i]); i++)
			;
		t = p + i;
		tlen = strnlen((const char *)t, g - i);
		/* a control character: check_refname_format and refname_is_safe refuse it */
		for (i = 0; i < tlen; i++)
			if (t[i] < 0x20 || t[i] == 0x7f)
				return;
		FUZZ_CHECK((tlen == 4 && !memcmp(t, "HEAD", 4)) || under_refs(t, tlen));
		return;
	}
	for (i = 0; i < n && c_space(p[i]); i++)
		;
	if (i == n) {
		/* empty but for blanks: only a ref git writes in place starts so */
		FUZZ_CHECK(!strcasecmp(name, "FETCH_HEAD") || !strcasecmp(name, "MERGE_HEAD") ||
			   !strcasecmp(name, "AUTO_MERGE"));
		return;
	}
	i = hex_run(p, n);
	FUZZ_CHECK(i == 40 || i == 64);
	FUZZ_CHECK(i == n || c_space(p[i]));
}

/* packed-refs (packed-backend.c): header, "<oid> <ref>", "^<oid>" */
static void prop_packed_refs(const uint8_t *p, size_t n)
{
	size_t pos = 0, ln, k = 0;
	const uint8_t *l;

	while (next_line(p, n, &pos, &l, &ln)) {
		if (k++ == 0 && ln >= 17 && !memcmp(l, "# pack-refs with:", 17))
			continue;
		if (ln && l[0] == '^') {
			FUZZ_CHECK(is_oid(l + 1, ln - 1));
			continue;
		}
		if (ln > 41 && l[40] == ' ' && is_oid(l, 40) && under_refs(l + 41, ln - 41))
			continue;
		FUZZ_CHECK(ln > 65 && l[64] == ' ' && is_oid(l, 64) && under_refs(l + 65, ln - 65));
	}
}

/*
 * rebase-merge/update-refs (sequencer.c read_update_refs: strbuf_getline,
 * which also drops a CR): ref, before, after; refs-to-delete: refs.  git
 * updates each ref following symbolic refs: all must be under refs/.
 */
static void prop_ref_list(const uint8_t *p, size_t n, unsigned stride)
{
	size_t pos = 0, ln;
	const uint8_t *l;
	unsigned k = 0;

	while (next_line(p, n, &pos, &l, &ln)) {
		if (ln && l[ln - 1] == '\r')
			ln--;
		if (k++ % stride == 0)
			FUZZ_CHECK(under_refs(l, ln));
		else
			FUZZ_CHECK(is_oid(l, ln));
	}
	FUZZ_CHECK(k % stride == 0);
}

/* head-name (builtin/rebase.c read_basic_state): a branch under refs/, "detached HEAD", or empty */
static void prop_head_name(const uint8_t *p, size_t n)
{
	while (n && c_space(p[n - 1]))
		n--;
	FUZZ_CHECK(n == 0 || (n == 13 && !memcmp(p, "detached HEAD", 13)) || under_refs(p, n));
}

static void prop_ref(const char *name, const uint8_t *p, size_t n)
{
	if (!strcasecmp(name, "packed-refs"))
		prop_packed_refs(p, n);
	else if (!strcasecmp(name, "update-refs"))
		prop_ref_list(p, n, 3);
	else if (!strcasecmp(name, "refs-to-delete"))
		prop_ref_list(p, n, 1);
	else if (!strcasecmp(name, "head-name"))
		prop_head_name(p, n);
	else
		prop_loose_ref(name, p, n);
}

/*
 * X6: git's todo parser (sequencer.c todo_list_parse_insn_buffer,
 * parse_insn_line, is_command), over every line of the buffer (git stops
 * at a NUL; gitguard may not, and must refuse at least what git runs).
 * Returns whether the line [P, END) of the buffer ending at BEND is exec.
 */
static const struct {
	char c;
	const char *str;
} todo_cmds[] = {{'p', "pick"},  {0, "revert"}, {'e', "edit"},	{'r', "reword"},
		 {'f', "fixup"}, {'s', "squash"}, {'x', "exec"},	{'b', "break"},
		 {'l', "label"}, {'t', "reset"},	{'m', "merge"},	{'u', "update-ref"},
		 {0, "noop"},	 {'d', "drop"}};

static bool git_line_is_exec(const uint8_t *p, const uint8_t *bend)
{
	size_t k, sl;
	const uint8_t *q;

	while (p < bend && (*p == ' ' || *p == '\t'))
		p++;
	for (k = 0; k < sizeof(todo_cmds) / sizeof(todo_cmds[0]); k++) {
		sl = strlen(todo_cmds[k].str);
		q = p;
		if ((size_t)(bend - q) >= sl && !memcmp(q, todo_cmds[k].str, sl))
			q += sl;
		else if (todo_cmds[k].c && q < bend && *q == (uint8_t)todo_cmds[k].c)
			q++;
		else
			continue;
		/* the buffer is a strbuf: a NUL past its end */
		if (q == bend || *q == ' ' || *q == '\t' || *q == '\n' || *q == '\r' || !*q)
			return !strcmp(todo_cmds[k].str, "exec");
	}
	return false;
}

static void prop_todo(const uint8_t *p, size_t n)
{
	size_t pos = 0, ln;
	const uint8_t *l;

	while (next_line(p, n, &pos, &l, &ln))
		FUZZ_CHECK(!git_line_is_exec(l, p + n));
}

/*
 * X5 apply-opt: builtin/am.c am_load reads it with read_state_file(trim),
 * a C string, and quote.c sq_dequote_to_strvec; the words go to git apply.
 * Dequoted here as sq_dequote_step does; -1 when git would die.
 */
static int sq_words(const char *s, char words[][256], int max)
{
	int nw = 0;
	size_t w;

	if (!*s)
		return 0;
	for (;;) {
		if (*s != '\'' || nw == max)
			return -1;
		for (w = 0;;) {
			char c = *++s;

			if (!c)
				return -1;
			if (c != '\'') {
				if (w < 255)
					words[nw][w++] = c;
				continue;
			}
			if (s[1] == '\\' && (s[2] == '\'' || s[2] == '!') && s[3] == '\'') {
				if (w < 255)
					words[nw][w++] = s[2];
				s += 3;
				continue;
			}
			s++;
			break;
		}
		words[nw++][w] = '\0';
		if (!*s)
			return nw;
		if (!git_space((unsigned char)*s))
			return -1;
		while (git_space((unsigned char)*s))
			s++;
	}
}

/* A git apply option that names no path to write or read and widens no path rule */
static bool apply_word_safe(const char *w)
{
	static const char *const prefixed[] = {"--whitespace=", "--directory=", "--exclude=",
					       "--include="};
	static const char *const bare[] = {"--ignore-space-change", "--ignore-whitespace",
					   "--reject"};
	size_t i;

	/* parse-options takes any unambiguous prefix of a long option */
	if (!strncmp(w, "--b", 3) || !strncmp(w, "--u", 3))
		return false;
	for (i = 0; i < sizeof(bare) / sizeof(bare[0]); i++)
		if (!strcmp(w, bare[i]))
			return true;
	for (i = 0; i < sizeof(prefixed) / sizeof(prefixed[0]); i++)
		if (!strncmp(w, prefixed[i], strlen(prefixed[i])))
			return true;
	if (w[0] == '-' && (w[1] == 'C' || w[1] == 'p') && w[2]) {
		for (i = 2; w[i]; i++)
			if (w[i] < '0' || w[i] > '9')
				return false;
		return true;
	}
	return false;
}

static void prop_apply_opt(const uint8_t *p, size_t n)
{
	static char words[64][256];
	char *s = malloc(n + 1), *b;
	int nw, i;

	if (s == NULL)
		return;
	memcpy(s, p, n);
	s[n] = '\0';
	/* strbuf_trim: git's isspace at both ends, on the whole buffer */
	while (n && git_space((unsigned char)s[n - 1]))
		s[--n] = '\0';
	for (b = s; git_space((unsigned char)*b); b++)
		;
	nw = sq_words(b, words, 64);
	for (i = 0; i < nw; i++)
		FUZZ_CHECK(apply_word_safe(words[i]));
	free(s);
}

/*
 * X5 gpg_sign_opt: read_oneliner (one trailing LF or CRLF dropped), a C
 * string; "-S<key>" (or empty).  The key must not be a key file's path
 * (gpg-interface.c: a key that is no "key::" literal is a path for ssh),
 * which git would read with ~ expanded, nor another option.
 */
static void prop_gpg_opt(const uint8_t *p, size_t n)
{
	size_t g = n, k;

	if (g && p[g - 1] == '\n') {
		g--;
		if (g && p[g - 1] == '\r')
			g--;
	}
	g = strnlen((const char *)p, g);
	FUZZ_CHECK(!memchr(p, '\n', g) && !memchr(p, '\r', g));
	if (g == 0)
		return;
	FUZZ_CHECK(g >= 2 && p[0] == '-' && p[1] == 'S');
	p += 2;
	k = g - 2;
	if (k >= 5 && !memcmp(p, "key::", 5))
		return;
	FUZZ_CHECK(!memchr(p, '/', k));
	FUZZ_CHECK(!k || (p[0] != '~' && p[0] != '-'));
}

/* X7: git-prompt.sh puts the first line in PS1: digits and at most one LF, exactly */
static bool count_ok(const uint8_t *p, size_t n)
{
	size_t i;

	if (n && p[n - 1] == '\n')
		n--;
	for (i = 0; i < n; i++)
		if (p[i] < '0' || p[i] > '9')
			return false;
	return true;
}

static uint64_t get_be(const uint8_t *p, unsigned bytes)
{
	uint64_t v = 0;

	while (bytes--)
		v = v << 8 | *p++;
	return v;
}

/*
 * D7: a multi-pack-index as git reads it (midx.c load_multi_pack_index,
 * chunk-format.c read_table_of_contents): every pack name, read as git
 * does with strlen from the start of a PNAM chunk, is a file of
 * objects/pack (git opens objects/pack/NAME).  Every PNAM entry is looked
 * at, whichever one a git version takes.
 */
static void prop_midx(const uint8_t *p, size_t n, unsigned maxv)
{
	unsigned chunks, i;
	uint32_t packs, k;
	uint64_t off, next, pos;
	bool named = false;

	FUZZ_CHECK(n >= 12 && !memcmp(p, "MIDX", 4) && p[4] >= 1 && p[4] <= maxv);
	chunks = p[6];
	packs = (uint32_t)get_be(p + 8, 4);
	FUZZ_CHECK(n >= 12 + 12 * ((size_t)chunks + 1));
	FUZZ_CHECK(get_be(p + 12 + 12 * chunks, 4) == 0);
	for (i = 0; i < chunks; i++) {
		const uint8_t *e = p + 12 + 12 * i;

		off = get_be(e + 4, 8);
		next = get_be(e + 16, 8);
		FUZZ_CHECK(get_be(e, 4) != 0 && off <= next && next <= n);
		if (get_be(e, 4) != 0x504e414du)
			continue;
		named = true;
		for (pos = off, k = 0; k < packs; k++) {
			const uint8_t *nm = p + pos, *nul = memchr(nm, '\0', n - pos);

			FUZZ_CHECK(nul != NULL);
			FUZZ_CHECK(nul > nm && !memchr(nm, '/', (size_t)(nul - nm)));
			pos = (uint64_t)(nul - p) + 1;
			FUZZ_CHECK(pos <= next);
		}
	}
	FUZZ_CHECK(named || packs == 0);
}

/* One checker on P (N bytes, malloc'd by the caller): rc, with the common properties */
static int run(unsigned c, const char *name, size_t hashsz, const char *p, size_t n)
{
	const char *why = NULL, *why2 = NULL;
	unsigned rule = 0;
	const char *cname = name;
	int rc = -1, rc2;

	switch (c) {
	case C_REF:
		rc = guard_ref_check(name, p, n, &why);
		rule = GUARD_RULE_R1;
		break;
	case C_TODO:
		rc = guard_todo_check(p, n, &why);
		rule = GUARD_RULE_X6;
		cname = "git-rebase-todo";
		break;
	case C_COUNT:
		rc = guard_count_check(p, n, &why);
		rule = GUARD_RULE_X7;
		cname = "msgnum";
		break;
	case C_MERGE_RR:
		rc = guard_merge_rr_check(p, n, hashsz, &why);
		FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == -EROFS);
		rule = GUARD_RULE_D10;
		cname = "MERGE_RR";
		break;
	case C_MIDX:
		rc = guard_midx_check(p, n, &why);
		rule = GUARD_RULE_D7;
		cname = "multi-pack-index";
		break;
	case C_MIDX_LAYER:
		rc = guard_midx_layer_check(p, n, &why);
		rule = GUARD_RULE_D7;
		cname = "multi-pack-index-0123abcd.midx";
		break;
	case C_APPLY_OPT:
		rc = guard_optfile_check("apply-opt", p, n, &why);
		rule = GUARD_RULE_X5;
		cname = "apply-opt";
		break;
	case C_GPG_OPT:
		rc = guard_optfile_check("gpg_sign_opt", p, n, &why);
		rule = GUARD_RULE_X5;
		cname = "gpg_sign_opt";
		break;
	}
	if (c != C_MERGE_RR)
		FUZZ_CHECK(rc == 0 || rc == -EINVAL);
	FUZZ_CHECK((rc == 0) == (why == NULL));
	FUZZ_CHECK(why == NULL || *why != '\0');
	/* the dispatcher agrees, and says -EROFS */
	rc2 = guard_content_check(rule, cname, p, n, hashsz, &why2);
	FUZZ_CHECK(rc2 == 0 || rc2 == -EROFS);
	FUZZ_CHECK((rc2 == 0) == (rc == 0));
	FUZZ_CHECK(rc2 == 0 || why2 != NULL);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char pads[][8] = {{0, 0, 0, 0, 0, 0, 0, 0},
				       {'0', '/', '\n', 'e', 'x', 'e', 'c', ' '},
				       {'a', 'b', 'c', '\t', '.', 'l', 'o', '\0'}};
	const char *name = NULL;
	size_t n, hashsz, i;
	unsigned c;
	char *p, *q;
	int rc;

	if (size == 0)
		return 0;
	c = data[0] & 7;
	hashsz = data[0] & 0x80 ? 32 : 20;
	if (c == C_REF)
		name = ref_names[(data[0] >> 3) % N_REF_NAMES];
	n = size - 1;
	/* an exact-size copy: ASan reports a read past LEN */
	p = malloc(n ? n : 1);
	if (p == NULL)
		return 0;
	memcpy(p, data + 1, n);
	rc = run(c, name, hashsz, p, n);
	/* bytes after LEN change nothing */
	for (i = 0; i < sizeof(pads) / sizeof(pads[0]); i++) {
		q = malloc(n + 64);
		if (q == NULL)
			break;
		memcpy(q, p, n);
		for (size_t k = 0; k < 64; k++)
			q[n + k] = pads[i][k % 8];
		FUZZ_CHECK(run(c, name, hashsz, q, n) == rc);
		free(q);
	}
	if (rc == 0) {
		const uint8_t *u = (const uint8_t *)p;

		switch (c) {
		case C_REF:
			prop_ref(name, u, n);
			break;
		case C_TODO:
			prop_todo(u, n);
			break;
		case C_COUNT:
			break;
		case C_MERGE_RR:
			/* rerere's records are never safe: MERGE_RR may only be empty */
			FUZZ_CHECK(n == 0);
			break;
		case C_MIDX:
			prop_midx(u, n, 1);
			break;
		case C_MIDX_LAYER:
			prop_midx(u, n, 2);
			break;
		case C_APPLY_OPT:
			prop_apply_opt(u, n);
			break;
		case C_GPG_OPT:
			prop_gpg_opt(u, n);
			break;
		}
	}
	/* X7 is exact: accepted iff digits and at most one final LF */
	if (c == C_COUNT)
		FUZZ_CHECK((rc == 0) == count_ok((const uint8_t *)p, n));
	free(p);
	return 0;
}

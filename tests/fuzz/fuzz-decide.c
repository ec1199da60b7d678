/* SPDX-License-Identifier: MIT */
/*
 * Fuzzer for gitguard's decisions: guard_check() and the name stage of
 * guard_classify(), over a small real tree made once at startup (a work
 * tree with a git folder, a worktree, a submodule's git folder, a bare
 * repository, folders that are almost bare-shaped, an unsafe config, a
 * symlink into .git), without git.
 *
 * Each input is one request.  The classes in it are either real (computed by
 * guard_classify while walking the tree, with the entry's real O_PATH fd and
 * mode) or synthetic (any kind, role, flags and rule the header allows, with
 * fd -1 or a real folder fd).  Requests with only real classes go to guards
 * that saw the whole tree once at startup, and are also checked against the
 * rule table (a new .git is refused, D/config cannot be made, and so on).
 * Requests with a synthetic class get a fresh guard each time, so what they
 * teach a guard cannot leak into the next input.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/stat.h>

#include "gitguard/guard-int.h"
#include "tests/fuzz/fuzz.h"

#define MAX_ENTRIES 128

struct entry {
	char rel[PATH_MAX]; /* from the root, "" for the root */
	const char *name;   /* last component, "" for the root */
	int parent;	    /* index, -1 for the root */
	int fd;		    /* O_PATH|O_NOFOLLOW */
	struct stat st;
	struct guard_cls cls[2]; /* under guards[0] (deny) and guards[1] (allow new repos) */
};

static char top[PATH_MAX], root[PATH_MAX + 8];
static int root_fd = -1;
static struct guard *guards[2];
static struct entry entries[MAX_ENTRIES];
static int nentries;
static bool ready;

static const char *const names[] = {
	".git",	     ".GIT",	   "HEAD",	  "objects",	 "refs",      "commondir",
	"config",    "config.lock", "CONFIG",	  "config.worktree", "hooks", "worktrees",
	"modules",   "remotes",	   "branches",	  "info",	 "alternates", "http-alternates",
	"gitdir",    "locked",	   "x.git",	  "file",	 "index",     "packed-refs",
	"missing.cfg", "inc.cfg",  "hooks-here", "commondir.lock", "pre-commit", "a.c",
	"refs.lock", ".git.lock",
};
#define NNAMES (sizeof names / sizeof names[0])

static void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("fuzz-decide: ", stderr);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, ": %s\n", strerror(errno));
	va_end(ap);
	exit(99);
}

static void mkd(const char *rel)
{
	char p[PATH_MAX * 2];

	snprintf(p, sizeof p, "%s/%s", root, rel);
	if (mkdir(p, 0755) != 0)
		die("mkdir %s", p);
}

static void put(const char *rel, const char *text)
{
	char p[PATH_MAX * 2];
	FILE *f;

	snprintf(p, sizeof p, "%s/%s", root, rel);
	f = fopen(p, "w");
	if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0)
		die("write %s", p);
}

static void lnk(const char *target, const char *rel)
{
	char p[PATH_MAX * 2];

	snprintf(p, sizeof p, "%s/%s", root, rel);
	if (symlink(target, p) != 0)
		die("symlink %s", p);
}

static void make_tree(void)
{
	char cfg[PATH_MAX * 2 + 256];

	mkd("");
	mkd("plain");
	put("plain/file", "x\n");
	mkd("plain/sub");
	mkd("deep");
	mkd("deep/a");
	mkd("deep/a/b");
	put("deep/a/b/file", "x\n");

	/* repo: a work tree, its git folder with every guarded name */
	mkd("repo");
	mkd("repo/src");
	put("repo/src/a.c", "int x;\n");
	mkd("repo/hooks-here");
	put("repo/hooks-here/pre-commit", "#!/bin/sh\n");
	put("repo/inc.cfg", "[user]\n\tname = x\n");
	mkd("repo/.git");
	put("repo/.git/HEAD", "ref: refs/heads/main\n");
	snprintf(cfg, sizeof cfg,
		 "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
		 "\thooksPath = %s/repo/hooks-here\n"
		 "[include]\n\tpath = ../inc.cfg\n\tpath = ../missing.cfg\n",
		 root);
	put("repo/.git/config", cfg);
	put("repo/.git/index", "");
	put("repo/.git/packed-refs", "");
	mkd("repo/.git/objects");
	mkd("repo/.git/objects/info");
	put("repo/.git/objects/info/alternates", "/elsewhere/objects\n");
	mkd("repo/.git/objects/ab");
	put("repo/.git/objects/ab/cdef", "blob");
	mkd("repo/.git/refs");
	mkd("repo/.git/refs/heads");
	put("repo/.git/refs/heads/main", "0000000000000000000000000000000000000000\n");
	mkd("repo/.git/hooks");
	put("repo/.git/hooks/pre-commit", "#!/bin/sh\n");
	mkd("repo/.git/info");
	put("repo/.git/info/exclude", "");
	mkd("repo/.git/logs");
	put("repo/.git/logs/HEAD", "");
	mkd("repo/.git/remotes");
	put("repo/.git/remotes/origin", "URL: x\n");
	mkd("repo/.git/worktrees");
	mkd("repo/.git/worktrees/wt1");
	put("repo/.git/worktrees/wt1/HEAD", "ref: refs/heads/wt\n");
	put("repo/.git/worktrees/wt1/commondir", "../..\n");
	snprintf(cfg, sizeof cfg, "%s/wt/.git\n", root);
	put("repo/.git/worktrees/wt1/gitdir", cfg);
	mkd("repo/.git/worktrees/nocd");
	put("repo/.git/worktrees/nocd/HEAD", "ref: refs/heads/x\n");
	mkd("repo/.git/modules");
	mkd("repo/.git/modules/sub");
	put("repo/.git/modules/sub/HEAD", "ref: refs/heads/main\n");
	put("repo/.git/modules/sub/config", "[core]\n\trepositoryformatversion = 0\n");
	mkd("repo/.git/modules/sub/objects");
	mkd("repo/.git/modules/sub/refs");
	mkd("repo/sub");
	put("repo/sub/.git", "gitdir: ../.git/modules/sub\n");

	/* a linked worktree */
	mkd("wt");
	put("wt/.git", "gitdir: ../repo/.git/worktrees/wt1\n");
	put("wt/file", "x\n");

	/* a bare repository, and folders one name short of bare-shaped */
	mkd("bare.git");
	put("bare.git/HEAD", "ref: refs/heads/main\n");
	put("bare.git/config", "[core]\n\tbare = true\n");
	mkd("bare.git/objects");
	mkd("bare.git/refs");
	mkd("half");
	put("half/HEAD", "ref: refs/heads/main\n");
	mkd("half/objects");
	mkd("half2");
	mkd("half2/objects");
	mkd("half2/refs");

	/* X3: unsafe config, and a git folder without one */
	mkd("x3");
	mkd("x3/.git");
	put("x3/.git/HEAD", "ref: refs/heads/main\n");
	put("x3/.git/config", "[core]\n\trepositoryformatversion = 1\n"
			      "[extensions]\n\tworktreeConfig = true\n");
	mkd("x3/.git/objects");
	mkd("x3/.git/refs");
	mkd("nocfg");
	mkd("nocfg/.git");
	put("nocfg/.git/HEAD", "ref: refs/heads/main\n");
	mkd("nocfg/.git/objects");
	mkd("nocfg/.git/refs");

	/* links: into a git folder, and a .git symlink */
	lnk("repo/.git", "link-to-git");
	mkd("lk");
	lnk("../repo/.git", "lk/.git");
	lnk("/etc", "abs-link");
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	remove(path);
	return 0;
}

static void cleanup(void)
{
	if (top[0] != '\0')
		nftw(top, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static int add_entry(const char *rel, int parent, int fd, const struct stat *st)
{
	struct entry *e;
	const char *slash;

	if (nentries >= MAX_ENTRIES)
		die("too many entries");
	e = &entries[nentries];
	snprintf(e->rel, sizeof e->rel, "%s", rel);
	slash = strrchr(e->rel, '/');
	e->name = slash ? slash + 1 : e->rel;
	e->parent = parent;
	e->fd = fd;
	e->st = *st;
	return nentries++;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int not_dots(const struct dirent *de)
{
	return strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
}

/*
 * Classify every entry beneath entry IDX, parents first, as fusefs does on
 * lookup.  Names are sorted, so an entry's index is the same on every
 * machine and saved inputs replay the same way.
 */
static void walk_tree(int idx)
{
	char rel[PATH_MAX], path[PATH_MAX * 2];
	struct dirent **list;
	struct stat st;
	int fd, child, i, n, k;

	snprintf(path, sizeof path, "%s/%s", root, entries[idx].rel);
	n = scandir(path, &list, not_dots, by_name);
	if (n < 0)
		die("scandir %s", path);
	for (k = 0; k < n; k++) {
		const char *name = list[k]->d_name;

		fd = openat(entries[idx].fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) != 0)
			die("open %s/%s", entries[idx].rel, name);
		snprintf(rel, sizeof rel, "%s%s%s", entries[idx].rel, *entries[idx].rel ? "/" : "",
			 name);
		child = add_entry(rel, idx, fd, &st);
		for (i = 0; i < 2; i++)
			if (guard_classify(guards[i], &entries[idx].cls[i], entries[idx].fd, name,
					   &st, S_ISDIR(st.st_mode) ? fd : -1,
					   &entries[child].cls[i]) != 0)
				die("classify %s", rel);
		if (S_ISDIR(st.st_mode))
			walk_tree(child);
	}
	for (k = 0; k < n; k++)
		free(list[k]);
	free(list);
}

static struct guard *new_guard(bool allow_new)
{
	struct guard_opts o = {.root_path = root, .allow_new_repos = allow_new};
	struct guard_err err;
	struct guard *g;

	if (guard_open(root_fd, &o, &g, &err) != 0) {
		errno = -err.code;
		die("guard_open: %s", err.msg);
	}
	return g;
}

/*
 * Classes computed before a git folder was scanned may be stale (the folders
 * on the way to a hooksPath target get pinned): recompute, parents first,
 * until the generation stops moving, as fusefs does.
 */
static void classify_all(int i)
{
	uint64_t gen;
	int k, round = 0;

	do {
		if (++round > 10)
			die("generation of guard %d does not settle", i);
		gen = guard_generation(guards[i]);
		if (guard_classify_root(guards[i], &entries[0].cls[i], NULL) != 0)
			die("classify root");
		for (k = 1; k < nentries; k++) {
			struct entry *e = &entries[k];

			if (guard_classify(guards[i], &entries[e->parent].cls[i],
					   entries[e->parent].fd, e->name, &e->st,
					   S_ISDIR(e->st.st_mode) ? e->fd : -1, &e->cls[i]) != 0)
				die("classify %s", e->rel);
		}
	} while (guard_generation(guards[i]) != gen);
}

static void setup(void)
{
	char tmpl[] = "/tmp/fuzz-decide.XXXXXX";
	struct stat st;
	int i;

	if (ready)
		return;
	if (mkdtemp(tmpl) == NULL || realpath(tmpl, top) == NULL)
		die("mkdtemp");
	atexit(cleanup);
	snprintf(root, sizeof root, "%s/root", top);
	make_tree();
	root_fd = open(root, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (root_fd < 0 || fstat(root_fd, &st) != 0)
		die("open %s", root);
	for (i = 0; i < 2; i++)
		guards[i] = new_guard(i == 1);
	add_entry("", -1, root_fd, &st);
	for (i = 0; i < 2; i++)
		if (guard_classify_root(guards[i], &entries[0].cls[i], NULL) != 0)
			die("classify root");
	walk_tree(0);
	for (i = 0; i < 2; i++)
		classify_all(i);
	if (getenv("FUZZ_DECIDE_LIST") != NULL)
		for (i = 0; i < nentries; i++)
			fprintf(stderr, "%3d %-40s kind %u/%u role %u flags %x/%x rule %u/%u\n", i,
				entries[i].rel, entries[i].cls[0].kind, entries[i].cls[1].kind,
				entries[i].cls[0].role, entries[i].cls[0].flags, entries[i].cls[1].flags,
				entries[i].cls[0].rule, entries[i].cls[1].rule);
	ready = true;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	setup();
	return 0;
}

/* A cursor over the input; past its end everything reads as zero */
struct in {
	const uint8_t *p;
	size_t n;
};

static uint8_t byte(struct in *in)
{
	uint8_t b;

	if (in->n == 0)
		return 0;
	b = *in->p++;
	in->n--;
	return b;
}

/*
 * A string: a length byte, then the bytes.  A length below 32 picks a known
 * name instead.  A leading '@' in a path stands for the root's path.  As a
 * name (one component, as FUSE hands them over) it has no '/', is not empty,
 * "." or "..", and fits NAME_MAX.
 */
static void string(struct in *in, char *out, size_t outsz, bool component)
{
	uint8_t l = byte(in);
	size_t n, i, k = 0;

	if (l < 32) {
		snprintf(out, outsz, "%s", names[l % NNAMES]);
		return;
	}
	n = (size_t)(l - 32) * 4;
	if (n > in->n)
		n = in->n;
	for (i = 0; i < n && k + 1 < outsz; i++) {
		char c = (char)in->p[i];

		if (c == '\0' || (component && c == '/'))
			continue;
		out[k++] = c;
	}
	in->p += n;
	in->n -= n;
	out[k] = '\0';
	/* a path may start with the root's real path, which no input can know */
	if (!component && k > 0 && out[0] == '@' && strlen(root) + k < outsz) {
		memmove(out + strlen(root), out + 1, k);
		memcpy(out, root, strlen(root));
	}
	if (component && (k == 0 || !strcmp(out, ".") || !strcmp(out, "..")))
		snprintf(out, outsz, "%s", names[l % NNAMES]);
	if (component && strlen(out) > NAME_MAX)
		out[NAME_MAX] = '\0';
}

static const mode_t modes[] = {S_IFREG, S_IFDIR, S_IFLNK, S_IFIFO, S_IFSOCK, S_IFCHR, S_IFBLK, 0};

/*
 * A class and, where it is a folder, its fd: a real entry's (with its mode),
 * or a synthetic class.  *real gets the entry index or -1.
 */
static void pick_class(struct in *in, int gi, struct guard_cls *cls, mode_t *mode, int *fd,
		       int *real)
{
	uint8_t how = byte(in), b;
	const struct entry *e;

	e = &entries[byte(in) % nentries];
	if (!(how & 1)) {
		*cls = e->cls[gi];
		*mode = e->st.st_mode;
		*fd = S_ISDIR(e->st.st_mode) && !(how & 2) ? e->fd : -1;
		*real = (int)(e - entries);
		return;
	}
	*real = -1;
	memset(cls, 0, sizeof *cls);
	cls->dev = (how & 2) ? e->st.st_dev : byte(in);
	cls->ino = (how & 2) ? e->st.st_ino : byte(in);
	b = byte(in);
	cls->kind = b % 4;
	cls->role = (b >> 2) % (GUARD_R_MODULES + 1);
	b = byte(in);
	cls->flags = b & 0x0f;
	cls->rule = (b >> 4) % GUARD_RULE_MAX;
	*mode = modes[(how >> 2) % (sizeof modes / sizeof modes[0])];
	/* a real folder's fd, or none: never a made-up number */
	*fd = (how & 0x40) && S_ISDIR(e->st.st_mode) ? e->fd : -1;
	if (*fd >= 0 && (how & 0x80))
		*mode = S_IFDIR;
}

static void check_cls(const struct guard_cls *c)
{
	FUZZ_CHECK(c->kind <= GUARD_BOTREPO);
	FUZZ_CHECK(c->role <= GUARD_R_MIDXD); /* the last role */
	FUZZ_CHECK((c->flags & ~(GUARD_RO | GUARD_TREE | GUARD_PIN | GUARD_WT | GUARD_CHK)) == 0);
	FUZZ_CHECK(c->rule < GUARD_RULE_MAX);
	/* the content-checked rules: the index, sequencer files, refs, MERGE_RR, midx */
	if ((c->flags & GUARD_CHK) && !(c->flags & (GUARD_RO | GUARD_TREE)))
		FUZZ_CHECK(c->rule == GUARD_RULE_X2 || c->rule == GUARD_RULE_X4 ||
			   c->rule == GUARD_RULE_X5 || c->rule == GUARD_RULE_X6 ||
			   c->rule == GUARD_RULE_X7 || c->rule == GUARD_RULE_R1 ||
			   c->rule == GUARD_RULE_D10 || c->rule == GUARD_RULE_D7);
	if (c->flags & GUARD_TREE)
		FUZZ_CHECK(c->flags & GUARD_RO);
}

static bool same_cls(const struct guard_cls *a, const struct guard_cls *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->kind == b->kind && a->role == b->role &&
	       a->flags == b->flags && a->rule == b->rule;
}

static bool is_create(enum guard_op op)
{
	return op == GUARD_OP_CREATE || op == GUARD_OP_MKDIR || op == GUARD_OP_SYMLINK ||
	       op == GUARD_OP_LINK;
}

/* A name D/NAME that may never be made in a git folder D (D1-D5, D8) */
static bool gitdir_nc(const char *name)
{
	static const char *const nc[] = {"config", "config.worktree", "commondir", "hooks",
					  "modules", "remotes", "branches", "worktrees"};
	size_t i, n = strlen(name), l;

	for (i = 0; i < sizeof nc / sizeof nc[0]; i++) {
		l = strlen(nc[i]);
		if (!strcasecmp(name, nc[i]) ||
		    (n == l + 5 && !strncasecmp(name, nc[i], l) && !strcasecmp(name + l, ".lock")))
			return true;
	}
	return false;
}

/* Would NAME make the folder FD bare-shaped (git's is_git_directory)? */
static bool completes_shape(int fd, const char *name)
{
	static const char *const shape[] = {"HEAD", "objects", "refs", "commondir"};
	struct stat st;
	int has = 0, bit = 0, i;

	for (i = 0; i < 4; i++) {
		if (fstatat(fd, shape[i], &st, AT_SYMLINK_NOFOLLOW) == 0)
			has |= 1 << i;
		if (!strcasecmp(name, shape[i]))
			bit = 1 << i;
	}
#define COMPLETE(h) (((h) & 1) && (((h) & 6) == 6 || ((h) & 8)))
	return bit && !COMPLETE(has) && COMPLETE(has | bit);
#undef COMPLETE
}

/* What the rule table promises for requests made of real classes only */
static void check_rules(const struct guard_req *r, int rc, int gi, int rcls, int rparent)
{
	const struct entry *p = rparent >= 0 ? &entries[rparent] : NULL;
	const struct entry *c = rcls >= 0 ? &entries[rcls] : NULL;

	if (r->op == GUARD_OP_EXCHANGE && r->victim == NULL)
		return; /* -EINVAL: not a request */
	if (is_create(r->op) && p != NULL && p->cls[gi].kind != GUARD_BOTREPO) {
		/* G1: no new .git, unless new repositories are allowed */
		if (gi == 0 && name_is_dotgit(r->name) && rc != -EROFS)
			FUZZ_FAIL("G1: %s/%s may be made", p->rel, r->name);
		/* nothing new in an RO-tree (hooks/, modules/, X3 folders...) */
		if ((p->cls[gi].flags & GUARD_TREE) && rc != -EROFS)
			FUZZ_FAIL("RO-tree: %s/%s may be made", p->rel, r->name);
		/* D1-D5, D8: D/config and the like are never made */
		if (p->cls[gi].kind == GUARD_GITDIR && gitdir_nc(r->name) && rc != -EROFS)
			FUZZ_FAIL("D: %s/%s may be made", p->rel, r->name);
		/* G2: no name that would complete HEAD + (objects/ + refs/ | commondir) */
		if (gi == 0 && r->parent_fd >= 0 && p->cls[gi].kind != GUARD_GITDIR &&
		    completes_shape(p->fd, r->name) && rc != -EROFS)
			FUZZ_FAIL("G2: %s/%s may be made", p->rel, r->name);
		/* W3: a missing include target inside the root */
		if (!strcmp(p->rel, "repo") && !strcmp(r->name, "missing.cfg") && rc != -EROFS)
			FUZZ_FAIL("W3: %s/%s may be made", p->rel, r->name);
	}
	if (c != NULL && c->cls[gi].kind != GUARD_BOTREPO) {
		/* a protected entry is not written, moved or removed */
		if ((r->op == GUARD_OP_WRITE || r->op == GUARD_OP_CHMOD ||
		     r->op == GUARD_OP_CHOWN || r->op == GUARD_OP_UNLINK ||
		     r->op == GUARD_OP_RMDIR || r->op == GUARD_OP_RENAME) &&
		    (c->cls[gi].flags & (GUARD_RO | GUARD_TREE)) && rc != -EROFS)
			FUZZ_FAIL("%s is protected (rule %u) but op %d is allowed", c->rel,
				  c->cls[gi].rule, r->op);
		/* X2: an index is never written in place */
		if (r->op == GUARD_OP_WRITE && (c->cls[gi].flags & GUARD_CHK) &&
		    c->cls[gi].rule == GUARD_RULE_X2 && rc != -EROFS)
			FUZZ_FAIL("X2: %s may be written in place", c->rel);
		/* G3: a git folder is not removed or moved */
		if ((r->op == GUARD_OP_RMDIR || r->op == GUARD_OP_UNLINK ||
		     r->op == GUARD_OP_RENAME || r->op == GUARD_OP_EXCHANGE) &&
		    c->cls[gi].kind == GUARD_GITDIR && rc != -EROFS)
			FUZZ_FAIL("G3: git folder %s may be moved or removed (op %d)", c->rel, r->op);
		/* a folder holding a git folder is not moved as a whole */
		if (r->op == GUARD_OP_RENAME && S_ISDIR(c->st.st_mode) && r->fd >= 0 &&
		    (!strcmp(c->rel, "repo") || !strcmp(c->rel, "x3") || !strcmp(c->rel, "wt")) &&
		    rc != -EROFS)
			FUZZ_FAIL("G3: %s may be renamed with its git folder", c->rel);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = {data, size};
	struct guard_cls cls, parent, victim, src_parent, out;
	struct guard_verdict v;
	struct guard_req r;
	struct guard *g;
	char name[NAME_MAX + 64], src_name[NAME_MAX + 64];
	char target[PATH_MAX + 64], parent_path[PATH_MAX + 64];
	int rcls, rparent, rvictim, rsrc, gi, rc, fresh, junk;
	mode_t pmode, smode;
	uint8_t b0, b1;

	setup();
	b0 = byte(&in);
	b1 = byte(&in);
	gi = b1 & 1;
	memset(&r, 0, sizeof r);
	r.op = (enum guard_op)(b0 % (GUARD_OP_EXCHANGE + 1));
	pick_class(&in, gi, &cls, &r.mode, &r.fd, &rcls);
	pick_class(&in, gi, &parent, &pmode, &r.parent_fd, &rparent);
	pick_class(&in, gi, &victim, &r.victim_mode, &r.victim_fd, &rvictim);
	pick_class(&in, gi, &src_parent, &smode, &r.src_parent_fd, &rsrc);
	/* a parent is a folder: its fd is a folder's or -1 */
	if (!S_ISDIR(pmode))
		r.parent_fd = -1;
	if (!S_ISDIR(smode))
		r.src_parent_fd = -1;
	if (b1 & 2)
		r.mode = (mode_t)(modes[(b1 >> 4) % 8] | 0644);
	if (!S_ISDIR(r.mode) && r.fd >= 0)
		r.fd = -1;
	if (!S_ISDIR(r.victim_mode) && r.victim_fd >= 0)
		r.victim_fd = -1;
	string(&in, name, sizeof name, true);
	string(&in, src_name, sizeof src_name, true);
	string(&in, target, sizeof target, false);
	if ((b1 & 4) && rparent >= 0)
		snprintf(parent_path, sizeof parent_path, "%s", entries[rparent].rel);
	else
		string(&in, parent_path, sizeof parent_path, false);
	r.cls = &cls;
	r.parent = &parent;
	r.name = name;
	r.src_parent = &src_parent;
	r.src_name = src_name;
	r.victim = (b1 & 8) ? NULL : &victim;
	r.target = target;
	r.parent_path = parent_path;

	/* only real classes: the guards that saw the tree; else a fresh one */
	fresh = rcls < 0 || rparent < 0 || rvictim < 0 || rsrc < 0;
	g = fresh ? new_guard(gi == 1) : guards[gi];

	rc = guard_check(g, &r, &v);
	if (r.op == GUARD_OP_EXCHANGE && r.victim == NULL)
		FUZZ_CHECK(rc == -EINVAL);
	else if (rc != 0 && rc != -EROFS)
		FUZZ_FAIL("guard_check op %d returned %d", r.op, rc);
	if (rc == -EROFS)
		FUZZ_CHECK(v.rule != NULL && v.reason != NULL);
	if (rc == 0)
		FUZZ_CHECK(v.rule == NULL && v.reason == NULL);
	if (!fresh)
		check_rules(&r, rc, gi, rcls, rparent);

	/*
	 * allow_new_repos only lifts G1/G2: the other guard, same request with
	 * its own classes, refuses at least what the deny guard refuses.
	 */
	if (!fresh && r.op != GUARD_OP_RENAME && r.op != GUARD_OP_EXCHANGE) {
		struct guard_cls c2 = entries[rcls].cls[!gi], p2 = entries[rparent].cls[!gi];
		struct guard_cls v2 = entries[rvictim].cls[!gi], s2 = entries[rsrc].cls[!gi];
		struct guard_req r2 = r;
		int rc2;

		r2.cls = &c2;
		r2.parent = &p2;
		r2.victim = r.victim ? &v2 : NULL;
		r2.src_parent = &s2;
		rc2 = guard_check(guards[!gi], &r2, NULL);
		if (gi == 0 && rc == 0 && rc2 != 0)
			FUZZ_FAIL("op %d allowed without allow_new_repos, refused with it", r.op);
		if (gi == 1 && rc != 0 && rc2 == 0)
			FUZZ_FAIL("op %d refused with allow_new_repos, allowed without it", r.op);
	}

	/* the name stage on its own: no syscalls, any parent class */
	junk = guard_name_stage(g, &parent, name, r.mode, &out);
	FUZZ_CHECK(junk == 0 || junk == 1);
	check_cls(&out);

	/* guard_classify of a real entry in its real folder, under a real or synthetic class */
	if (rcls > 0) {
		const struct entry *e = &entries[rcls], *pe = &entries[e->parent];
		const struct guard_cls *pc = rparent >= 0 ? &pe->cls[gi] : &parent;

		rc = guard_classify(g, pc, pe->fd, e->name, &e->st,
				    S_ISDIR(e->st.st_mode) && (b1 & 0x80) ? e->fd : -1, &out);
		FUZZ_CHECK(rc <= 0);
		if (rc == 0) {
			check_cls(&out);
			FUZZ_CHECK(out.dev == (uint64_t)e->st.st_dev &&
				   out.ino == (uint64_t)e->st.st_ino);
			/* under its real parent, a real entry gets the class it had */
			if (!fresh && !same_cls(&out, &e->cls[gi]))
				FUZZ_FAIL("%s classified differently: kind %u/%u role %u/%u "
					  "flags %x/%x rule %u/%u",
					  e->rel, out.kind, e->cls[gi].kind, out.role,
					  e->cls[gi].role, out.flags,
					  e->cls[gi].flags, out.rule, e->cls[gi].rule);
		}
	}
	if (fresh)
		guard_free(g);
	return 0;
}

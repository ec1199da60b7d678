/* SPDX-License-Identifier: MIT */
/*
 * Decisions: one call per write-ish operation, from cached classes only,
 * except where the rule needs to look (a folder moved with its contents, a
 * name that would complete a bare-shaped folder, a symlink's target).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "gitguard/ggutil.h"
#include "gitguard/guard-int.h"

/* write, truncate, chmod, chown of an existing entry */
static int check_write(const struct guard_cls *c, struct guard_verdict *v)
{
	if (c->kind == GUARD_BOTREPO)
		return 0;
	if (c->flags & (GUARD_RO | GUARD_TREE))
		return guard_refuse(v, c->rule);
	return 0;
}

/* unlink, rmdir, or the source of a rename or exchange */
static int check_remove(const struct guard_cls *c, struct guard_verdict *v)
{
	if (c->kind == GUARD_BOTREPO)
		return 0;
	if (c->flags & (GUARD_RO | GUARD_TREE | GUARD_PIN))
		return guard_refuse(v, c->rule ? c->rule : GUARD_RULE_G3);
	if (c->kind == GUARD_GITDIR)
		return guard_refuse(v, GUARD_RULE_G3);
	return 0;
}

/* Bit of NAME among the names that make a folder bare-shaped, or 0 */
static int shape_bit(const char *name)
{
	if (name_is(name, "HEAD"))
		return 1;
	if (name_is(name, "objects"))
		return 2;
	if (name_is(name, "refs"))
		return 4;
	if (name_is(name, "commondir"))
		return 8;
	return 0;
}

static bool shape_complete(int has)
{
	return (has & 1) && ((has & 6) == 6 || (has & 8));
}

/* NC: may NAME of type MODE be made in PARENT (MOVE: by a rename)? */
static int check_new(struct guard *g, const struct guard_cls *parent, int parent_fd,
		     const char *parent_path, const char *name, mode_t mode, bool move,
		     struct guard_verdict *v)
{
	struct guard_cls c, now;
	int bit, has;

	if (guard_plain_now_gitdir(g, parent, parent_fd, name, &now))
		parent = &now;
	if (parent->kind == GUARD_BOTREPO)
		return 0;
	if (parent->flags & GUARD_TREE)
		return guard_refuse(v, parent->rule);
	/* nothing new in modules/ but inside a submodule's git folder (D6) */
	if (parent->role == GUARD_R_MODULES && parent->kind != GUARD_GITDIR)
		return guard_refuse(v, GUARD_RULE_D6);
	/* D12: only names git itself makes there (names.c); the rules below say more of some */
	if (!guard_git_name_ok(parent, name, mode))
		return guard_refuse(v, GUARD_RULE_D12);
	if (name_is_dotgit(name)) {
		if (!g->allow_new)
			return guard_refuse(v, GUARD_RULE_G1);
		if (S_ISLNK(mode) && guard_in_gitdir(parent))
			return guard_refuse(v, GUARD_RULE_D9);
		/* a folder a repository around it tracks as a gitlink (gitlink.c) */
		return parent_fd >= 0 ? guard_gitlink_claimed(g, parent_fd, parent_path, v) : 0;
	}
	guard_name_stage(g, parent, name, mode, &c);
	if (c.flags & (GUARD_RO | GUARD_TREE))
		return guard_refuse(v, c.rule);
	/* D9: git makes no symlink in a git folder; one there sends git's reads and writes anywhere */
	if (S_ISLNK(mode) && guard_in_gitdir(parent))
		return guard_refuse(v, GUARD_RULE_D9);
	/* H1: a folder moved in as a home's .config would bring its own config
	 * (.ssh and .gnupg are RO-tree names: nothing is moved in as them) */
	if (move && c.role == GUARD_R_HOMECFG)
		return guard_refuse_why(v, GUARD_RULE_H1, "a folder moved in as a home's .config");
	/*
	 * X2, X4, X5, R1, D10's MERGE_RR: a regular file, renamed in (the
	 * caller checks its content) or, but for X2 and D10, made empty and
	 * then written with each write checked (git writes FETCH_HEAD,
	 * MERGE_HEAD and its state files so).
	 */
	if ((c.flags & GUARD_CHK) && !S_ISREG(mode))
		return guard_refuse_why(v, c.rule, "only a regular file may be put there");
	if ((c.flags & GUARD_CHK) && !move && guard_rule_renamed_only(c.rule))
		return guard_refuse_why(v, c.rule, "made only by renaming a checked file onto it");
	if ((c.flags & GUARD_CHK) && !move && c.rule == GUARD_RULE_R1 && !guard_ref_in_place(name))
		return guard_refuse_why(v, c.rule, "a ref is made by renaming its lock onto it");
	/* X4: a symlink there would let git read strategy files from anywhere (D9 first) */
	if (c.role == GUARD_R_SEQ && !S_ISDIR(mode))
		return guard_refuse_why(v, GUARD_RULE_X4, "rebase and sequencer state is a folder");
	if (c.kind == GUARD_GITDIR) {
		if (c.flags & GUARD_WT)
			return guard_refuse_why(v, GUARD_RULE_D5, "new worktree");
		if (!g->allow_new)
			return guard_refuse(v, GUARD_RULE_G2);
	}
	bit = shape_bit(name);
	if (bit && parent->kind != GUARD_GITDIR && parent_fd >= 0) {
		guard_shape(parent_fd, &has);
		if (!shape_complete(has) && shape_complete(has | bit) && !g->allow_new)
			return guard_refuse(v, GUARD_RULE_G2);
	}
	/*
	 * A plain folder the person made a work tree's top on the host since it
	 * was classified (git init where the bot's shell sits): its .git is
	 * learnt now, so what it guards at the top (a relative core.hooksPath)
	 * is recorded before this name is judged. One fstatat when there is none.
	 */
	if (parent->kind == GUARD_PLAIN && parent_fd >= 0) {
		int rc = guard_note_top(g, parent_fd);

		if (rc)
			return guard_refuse_why(v, GUARD_RULE_G1, "a repository here cannot be read");
	}
	if (guard_rec_any(g)) {
		uint8_t rule = 0, f;

		f = guard_rec_missing(g, parent->dev, parent->ino, name, &rule);
		if (f & (GUARD_RO | GUARD_TREE))
			return guard_refuse(v, rule);
	}
	return 0;
}

/*
 * A rename or exchange moves CLS (type MODE, fd FD when a folder) from where
 * it is to NAME in PARENT, replacing VICTIM if any.
 */
static int check_move(struct guard *g, const struct guard_cls *cls, mode_t mode, int fd,
		      const struct guard_cls *parent, int parent_fd, const char *parent_path,
		      const char *name, const struct guard_cls *victim, bool moves,
		      struct guard_verdict *v)
{
	unsigned budget = GUARD_WALK_BUDGET;
	bool botrepo = cls->kind == GUARD_BOTREPO;
	struct guard_cls dc;
	struct stat st;
	int rc;

	rc = check_remove(cls, v);
	if (!rc && victim)
		rc = check_remove(victim, v);
	if (!rc)
		rc = check_new(g, parent, parent_fd, parent_path, name, mode, true, v);
	if (rc || !S_ISDIR(mode))
		return rc;
	if (!botrepo && fd < 0)
		return guard_refuse_why(v, GUARD_RULE_G3, "folder rename without its fd");
	/* G3: no git folder beneath, nor anything else protected */
	if (!botrepo)
		rc = guard_walk(g, fd, cls, &budget, moves, true, &botrepo, v);
	/* G1: a bot's repository moved into a work tree not the bot's (gitlink.c) */
	if (!rc && botrepo && moves && parent->kind != GUARD_BOTREPO)
		rc = parent_fd >= 0 ? guard_botrepo_moved_in(g, parent_fd, v)
				    : guard_refuse_why(v, GUARD_RULE_G1,
						       "a repository moved to a folder not known");
	if (rc || cls->kind == GUARD_BOTREPO || parent->kind == GUARD_PLAIN ||
	    parent->kind == GUARD_BOTREPO)
		return rc;
	/* into a git folder: what would each entry be there? */
	if (fstat(fd, &st) < 0)
		return guard_refuse_why(v, GUARD_RULE_G3, "folder cannot be checked");
	/*
	 * Judged by name and shape only: a full classification would scan the
	 * folder as the repository it would become and record it, so a refused
	 * probe would leave its folder guarded where it is (fuzz-decide).
	 */
	dc.dev = st.st_dev;
	dc.ino = st.st_ino;
	guard_name_stage(g, parent, name, mode, &dc);
	if (dc.kind != GUARD_GITDIR && guard_shape(fd, NULL))
		dc.kind = GUARD_GITDIR;
	if (guard_cls_protected(&dc))
		return guard_refuse(v, dc.kind == GUARD_GITDIR ? GUARD_RULE_G3 : dc.rule);
	budget = GUARD_WALK_BUDGET;
	return guard_walk(g, fd, &dc, &budget, false, false, NULL, v);
}

/* Does REQ's rename stay in one folder?  (Unknown: no) */
static bool same_folder(const struct guard_req *req)
{
	struct stat a, b;

	if (req->parent_fd < 0 || req->src_parent_fd < 0 || fstat(req->parent_fd, &a) < 0 ||
	    fstat(req->src_parent_fd, &b) < 0)
		return false;
	return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* X1 again for a symlink renamed or linked into REQ's parent: its target, read from there */
static int check_moved_link(struct guard *g, const struct guard_req *req, struct guard_verdict *v)
{
	if (!S_ISLNK(req->mode) || (req->cls && req->cls->kind == GUARD_BOTREPO))
		return 0;
	if (!req->target)
		return guard_refuse_why(v, GUARD_RULE_X1, "symlink moved without its target");
	return guard_check_x1(g, req->parent_path, req->parent_fd, req->parent, req->target, v);
}

/* X1 for what NAME in DFD is, a symlink moving to the folder TO_FD (TO_PATH, TO_CLS or NULL) */
static int check_link_at(struct guard *g, int dfd, const char *name, const char *to_path, int to_fd,
			 const struct guard_cls *to_cls, struct guard_verdict *v)
{
	char target[PATH_MAX];
	ssize_t n;

	n = dfd >= 0 && name ? readlinkat(dfd, name, target, sizeof(target) - 1) : -1;
	if (n <= 0)
		return guard_refuse_why(v, GUARD_RULE_X1, "symlink moved without its target");
	target[n] = '\0';
	return guard_check_x1(g, to_path, to_fd, to_cls, target, v);
}

/* X1 for an exchange across folders: each symlink judged from the other's folder */
static int check_exchanged_links(struct guard *g, const struct guard_req *req,
				 struct guard_verdict *v)
{
	int rc = 0;

	if (S_ISLNK(req->mode))
		rc = check_link_at(g, req->src_parent_fd, req->src_name, req->parent_path,
				   req->parent_fd, req->parent, v);
	if (!rc && S_ISLNK(req->victim_mode))
		rc = check_link_at(g, req->parent_fd, req->name, NULL, req->src_parent_fd,
				   req->src_parent, v);
	return rc;
}

/*
 * X8: names git's own tools write or move a file to in a work tree, taking
 * what is there as it is: git mergetool moves the conflicted file to
 * NAME_BACKUP_PID.EXT (mv into a folder a symlink there names: the bot's
 * file, with its mode, in ~/.local/bin), writes NAME_BASE_PID.EXT,
 * NAME_LOCAL_PID.EXT and NAME_REMOTE_PID.EXT (a shell redirect follows the
 * link) and keeps the backup as NAME.orig (mv again); git apply --reject
 * writes NAME.rej with fopen, git format-patch NNNN-SUBJECT.patch in the
 * folder it runs in (0000-cover-letter.patch needs no guess). The pid can be guessed or sprayed; .orig and
 * .rej need no guess. No symlink may have such a name, wherever it leads.
 */
/*
 * git format-patch's NNNN-subject.patch: four digits or more, then '-';
 * with -v N, "vN-" first, N any re-roll count (2, 2.1, rc1)
 */
static bool format_patch_name(const char *name)
{
	const char *p = name;
	size_t d;

	if (p[0] == 'v' && p[1] != '\0' && p[1] != '-') {
		for (p = strchr(p, '-'); p != NULL; p = strchr(p + 1, '-')) {
			d = strspn(p + 1, "0123456789");
			if (d >= 4 && p[1 + d] == '-')
				return true;
		}
		return false;
	}
	d = strspn(p, "0123456789");
	return d >= 4 && p[d] == '-';
}

bool guard_tool_name(const char *name)
{
	static const char *const tags[] = {"_BACKUP_", "_BASE_", "_LOCAL_", "_REMOTE_", NULL};
	size_t n = name ? strlen(name) : 0;
	const char *const *t;
	const char *p;

	if (n == 0)
		return false;
	if ((n >= 5 && !strcmp(name + n - 5, ".orig")) || (n >= 4 && !strcmp(name + n - 4, ".rej")))
		return true;
	if (n >= 6 && !strcmp(name + n - 6, ".patch") && format_patch_name(name))
		return true;
	for (t = tags; *t; t++)
		for (p = strstr(name, *t); p; p = strstr(p + 1, *t))
			if (p[strlen(*t)] >= '0' && p[strlen(*t)] <= '9')
				return true;
	return false;
}

static int check_tool_name(unsigned mode, const char *name, struct guard_verdict *v)
{
	if (!S_ISLNK(mode) || !guard_tool_name(name))
		return 0;
	return guard_refuse_why(v, GUARD_RULE_X8,
				"a symlink named as a file git mergetool or git apply --reject "
				"writes or moves there (it would follow the link)");
}

/*
 * The one symlink git makes in a git folder: HEAD as "refs/...", with
 * core.preferSymlinkRefs (refs/files-backend.c create_ref_symlink).
 */
static bool head_symlink(const struct guard_req *req)
{
	return req->parent->kind == GUARD_GITDIR && !strcmp(req->name, "HEAD") &&
	       guard_head_target_ok(req->target);
}

unsigned guard_seal_rule(const struct guard_cls *cls)
{
	return cls && (cls->flags & GUARD_CHK) && cls->rule ? cls->rule : GUARD_RULE_X2;
}

bool guard_lock_name(const char *name)
{
	size_t n;

	if (!name)
		return false;
	n = strlen(name);
	/* sharedindex_XXXXXX: the temporary git renames onto sharedindex.<hash> */
	return (n > 5 && !strcmp(name + n - 5, ".lock")) || !strncmp(name, "sharedindex_", 12);
}

/* LK: C, a lock file no mount of this server made (FOREIGN), lies in a git folder */
static bool foreign_lock(const struct guard_cls *c, bool foreign)
{
	return foreign && c && c->kind == GUARD_INGIT;
}

/*
 * The rules whose facts the caller gathered (gitguard.h, struct guard_req),
 * and the work tree's top learnt through the CHMOD's descriptor.
 */
static int check_facts(const struct guard_req *req, struct guard_verdict *v)
{
	struct stat st;

	/* renamed onto a content-checked file after its check: never written again */
	if (req->sealed && (req->op == GUARD_OP_WRITE || req->op == GUARD_OP_LINK))
		return guard_refuse_why(v, guard_seal_rule(req->cls),
					"content checked when it was renamed in");
	switch (req->op) {
	case GUARD_OP_WRITE:
	case GUARD_OP_LINK:
	case GUARD_OP_UNLINK:
		if (foreign_lock(req->cls, req->lock_foreign))
			break;
		return 0;
	case GUARD_OP_RENAME:
	case GUARD_OP_EXCHANGE:
		if (foreign_lock(req->cls, req->lock_foreign) ||
		    foreign_lock(req->victim, req->victim_lock_foreign))
			break;
		return 0;
	case GUARD_OP_CHMOD:
		/*
		 * G3 for what is made in a folder later: a default ACL giving
		 * every account write overrides the person's umask, so the git
		 * folder the person makes there (git init, a clone) has a config
		 * and hooks another account can write. Anywhere in the root.
		 */
		if (req->default_acl && (req->mode & S_IWOTH))
			return guard_refuse_why(v, GUARD_RULE_G3,
						"a default ACL that opens what is made in the folder "
						"later (a git folder) to other accounts' writes");
		/*
		 * G3 for a work tree's top (a folder holding .git): opened to
		 * every account's writes, another could put its own .git in place.
		 * Unknown (no descriptor): refused.
		 */
		if (!S_ISDIR(req->mode) || !(req->mode & S_IWOTH))
			return 0;
		if (req->fd < 0)
			return guard_refuse_why(v, GUARD_RULE_G3,
						"a folder opened to other accounts' writes, "
						"not looked at for a .git");
		if (!fstatat(req->fd, ".git", &st, AT_SYMLINK_NOFOLLOW))
			return guard_refuse_why(v, GUARD_RULE_G3,
						"a work tree's top opened to other accounts' writes");
		return 0;
	default:
		return 0;
	}
	return guard_refuse_why(v, GUARD_RULE_LK,
				"a git lock file this mount did not make: another git holds it");
}

static int check_inode_at(struct guard *g, const struct stat *st, int fd, struct guard_verdict *v);

/* HL: another name, made on the host, of a protected file is protected too */
static int check_other_name(struct guard *g, const struct guard_req *req, struct guard_verdict *v)
{
	struct stat st;

	if (req->nlink < 2 || S_ISDIR(req->mode) ||
	    (req->op != GUARD_OP_WRITE && req->op != GUARD_OP_CHMOD && req->op != GUARD_OP_CHOWN &&
	     req->op != GUARD_OP_LINK))
		return 0;
	memset(&st, 0, sizeof(st));
	st.st_dev = (dev_t)req->dev;
	st.st_ino = (ino_t)req->ino;
	st.st_mode = req->mode & S_IFMT;
	st.st_nlink = req->nlink;
	return check_inode_at(g, &st, req->fd, v);
}

static int check_op(struct guard *g, const struct guard_req *req, struct guard_verdict *v);

/*
 * The one decision: 0 if REQ may go ahead, -EROFS with V's rule and reason
 * filled if not, -ESTALE if the classes REQ carries are older than what the
 * look for host changes found (gitguard.h), or another -errno if the check
 * itself failed (refuse then).
 */
int guard_check(struct guard *g, const struct guard_req *req, struct guard_verdict *v)
{
	int rc;

	if (v) {
		v->rule = v->reason = NULL;
		v->code = GUARD_RULE_NONE;
	}
	if (req->ro_mount)
		return guard_refuse(v, GUARD_RULE_RO_MOUNT);
	if (req->ro_path)
		return guard_refuse(v, GUARD_RULE_RO_PATH);
	if (!g)
		return 0;
	/* a host change to a config first, so the classes judged are of it */
	guard_revalidate(g);
	guard_homes_revalidate(g);
	guard_root_revalidate(g);
	if (req->gen && guard_generation(g) != req->gen)
		return -ESTALE;
	rc = check_facts(req, v);
	if (!rc)
		rc = check_op(g, req, v);
	if (!rc)
		rc = check_other_name(g, req, v);
	return rc;
}

/* The rule table's decision for REQ's operation, from its classes */
static int check_op(struct guard *g, const struct guard_req *req, struct guard_verdict *v)
{
	mode_t mode;
	bool moved;
	int rc;

	switch (req->op) {
	case GUARD_OP_WRITE:
		rc = check_write(req->cls, v);
		/* X2, D10: git writes an index and MERGE_RR by renaming a lock onto them */
		if (!rc && req->cls->kind != GUARD_BOTREPO && (req->cls->flags & GUARD_CHK) &&
		    guard_rule_renamed_only(req->cls->rule))
			rc = guard_refuse_why(v, req->cls->rule,
					      req->cls->rule == GUARD_RULE_X2
						      ? "index written in place, not renamed in"
						      : "written in place, not renamed in");
		return rc;
	case GUARD_OP_CHMOD:
		/* H1: a pinned home, ~/.config or a folder above opened to others' writes */
		if (req->cls->kind != GUARD_BOTREPO && (req->cls->flags & GUARD_PIN) &&
		    req->cls->rule == GUARD_RULE_H1 && (req->mode & (S_IWGRP | S_IWOTH)))
			return guard_refuse_why(v, GUARD_RULE_H1,
						"a home's folder opened to other accounts' writes");
		/*
		 * G3: a git folder, what is in it, or a folder above one, opened to
		 * every account's writes (another account would swap its config);
		 * group write stays, git's core.sharedRepository sets it
		 */
		if ((req->mode & S_IWOTH) &&
		    (req->cls->kind == GUARD_GITDIR || req->cls->kind == GUARD_INGIT ||
		     ((req->cls->flags & GUARD_PIN) && req->cls->rule == GUARD_RULE_G3)))
			return guard_refuse_why(v, GUARD_RULE_G3,
						"a git folder opened to other accounts' writes");
		return check_write(req->cls, v);
	case GUARD_OP_CHOWN:
	case GUARD_OP_TOUCH:
		return check_write(req->cls, v);
	case GUARD_OP_CREATE:
	case GUARD_OP_MKDIR:
		return check_new(g, req->parent, req->parent_fd, req->parent_path, req->name,
				 req->op == GUARD_OP_MKDIR ? S_IFDIR : (req->mode & S_IFMT), false,
				 v);
	case GUARD_OP_SYMLINK:
		/* HEAD under core.preferSymlinkRefs: judged as the file git writes otherwise */
		mode = head_symlink(req) ? S_IFREG : S_IFLNK;
		/* its content is its target, checked there: as for a ref renamed in (R1) */
		rc = check_new(g, req->parent, req->parent_fd, req->parent_path, req->name, mode,
			       S_ISREG(mode), v);
		if (!rc)
			rc = check_tool_name(mode, req->name, v);
		if (!rc && S_ISLNK(mode))
			rc = guard_check_x1(g, req->parent_path, req->parent_fd, req->parent,
					    req->target, v);
		return rc;
	case GUARD_OP_LINK:
		/* a new name for content nobody checked, still writable by its other name */
		if (req->parent->kind != GUARD_BOTREPO &&
		    (rc = (int)guard_content_rule(req->parent, req->name)))
			return guard_refuse_why(v, (unsigned)rc,
						"hard link onto a content-checked name");
		if (req->cls->kind != GUARD_BOTREPO &&
		    (req->cls->flags & (GUARD_RO | GUARD_TREE | GUARD_PIN | GUARD_CHK)))
			return guard_refuse(v, req->cls->rule);
		rc = check_new(g, req->parent, req->parent_fd, req->parent_path, req->name,
			       req->mode & S_IFMT, false, v);
		if (!rc)
			rc = check_tool_name(req->mode, req->name, v);
		return rc ? rc : check_moved_link(g, req, v);
	case GUARD_OP_UNLINK:
	case GUARD_OP_RMDIR:
		return check_remove(req->cls, v);
	case GUARD_OP_RENAME:
		moved = !same_folder(req);
		rc = check_move(g, req->cls, req->mode, req->fd, req->parent, req->parent_fd,
				req->parent_path, req->name, req->victim, moved, v);
		if (!rc)
			rc = check_tool_name(req->mode, req->name, v);
		/* renamed in its own folder, a symlink's target leads where it led: no X1 again */
		return rc || !moved ? rc : check_moved_link(g, req, v);
	case GUARD_OP_EXCHANGE:
		if (!req->victim)
			return -EINVAL;
		rc = check_remove(req->cls, v);
		if (!rc)
			rc = check_remove(req->victim, v);
		/* X2/X4: an exchange would put unchecked content in place */
		if (!rc && (req->cls->flags & GUARD_CHK) && req->cls->kind != GUARD_BOTREPO)
			rc = guard_refuse(v, req->cls->rule);
		if (!rc && (req->victim->flags & GUARD_CHK) && req->victim->kind != GUARD_BOTREPO)
			rc = guard_refuse(v, req->victim->rule);
		if (!rc)
			rc = check_tool_name(req->mode, req->name, v);
		if (!rc)
			rc = check_tool_name(req->victim_mode, req->src_name, v);
		/* X1: a symlink's target means something else in the other folder */
		if (!rc && !same_folder(req))
			rc = check_exchanged_links(g, req, v);
		if (!rc)
			rc = check_move(g, req->cls, req->mode, req->fd, req->parent,
					req->parent_fd, req->parent_path, req->name, NULL,
					!same_folder(req), v);
		if (!rc)
			rc = check_move(g, req->victim, req->victim_mode, req->victim_fd,
					req->src_parent, req->src_parent_fd, NULL, req->src_name, NULL,
					!same_folder(req), v);
		return rc;
	}
	return -EINVAL;
}

/*
 * A write-open of an inode with several names: is it a protected file reached
 * through an ordinary name?  Cheap: nothing but a test when nothing is recorded.
 * FD, if not -1, is the inode's O_PATH descriptor: it tells a file from a gone
 * one whose number it has (guard_rec_file).
 */
static int check_inode_at(struct guard *g, const struct stat *st, int fd, struct guard_verdict *v)
{
	uint8_t rule = 0, f;

	if (S_ISDIR(st->st_mode) || st->st_nlink < 2 || !guard_rec_any(g))
		return 0;
	f = guard_rec_file(g, st, fd, -1, NULL, &rule);
	if (f & (GUARD_RO | GUARD_TREE))
		return guard_refuse(v, rule ? rule : GUARD_RULE_HL);
	return 0;
}

int guard_check_inode(struct guard *g, const struct stat *st, struct guard_verdict *v)
{
	return check_inode_at(g, st, -1, v);
}

/*
 * Records a repository the bot made (allow_new_repos), for this guard only:
 * the other roots of the view keep guarding it as any repository.  BORN is
 * its birth time (0: not known): the record covers that folder, not a later
 * one given its number once the bot removed it (guard_bot_repo).
 */
static int bot_repo_add(struct guard *g, uint64_t dev, uint64_t ino, int64_t born,
			const char *path)
{
	struct guard_bot *b = NULL;
	char *p = NULL;
	bool bot;
	size_t i;

	if (path && !(p = strdup(path)))
		return -ENOMEM;
	pthread_rwlock_wrlock(&g->lock);
	/* its number had a record: of this folder, or of one the bot removed */
	for (i = 0; i < g->nbots && !b; i++)
		if (g->bots[i].dev == dev && g->bots[i].ino == ino)
			b = &g->bots[i];
	if (b) {
		b->born = born;
		if (p) {
			free(b->path);
			b->path = p;
		}
		pthread_rwlock_unlock(&g->lock);
		return 0;
	}
	pthread_rwlock_unlock(&g->lock);
	/* known before as someone else's (through any root of the view): it stays guarded */
	if (guard_repo_known(g, dev, ino, -1, &bot)) {
		free(p);
		return 0;
	}
	pthread_rwlock_wrlock(&g->lock);
	if (gg_grow(&g->bots, &g->abots, g->nbots + 1, sizeof(*g->bots), 8)) {
		pthread_rwlock_unlock(&g->lock);
		free(p);
		return -ENOMEM;
	}
	b = &g->bots[g->nbots++];
	b->dev = dev;
	b->ino = ino;
	b->born = born;
	b->path = p;
	atomic_store(&g->has_bots, true);
	pthread_rwlock_unlock(&g->lock);
	guard_botmade_add(g, dev, ino);
	guard_logf(g, "gitguard: new repository made by the bot: %s",
		   path ? path : "(path unknown)");
	return 0;
}

/*
 * A repository the bot made, given back after a restart: PATH (from the
 * root) tells its birth time if it still leads to it.
 */
int guard_add_bot_repo(struct guard *g, uint64_t dev, uint64_t ino, const char *path)
{
	const char *rel = path;
	int64_t born = 0;
	int fd;

	while (rel && *rel == '/')
		rel++;
	if (rel) {
		fd = gg_open_nofollow(g->root_fd, *rel ? rel : ".", O_PATH | O_DIRECTORY, true);
		if (fd >= 0) {
			born = guard_born_at(fd, "", dev, ino);
			close(fd);
		}
	}
	return bot_repo_add(g, dev, ino, born, path);
}

/* The path of the folder holding PATH, in BUF */
static const char *dirname_of(const char *path, char *buf, size_t sz)
{
	const char *slash;

	if (!path)
		return NULL;
	slash = strrchr(path, '/');
	if (!slash)
		return ".";
	snprintf(buf, sz, "%.*s", (int)(slash - path), path);
	return buf;
}

/*
 * After a change succeeded: returns true when classes computed before may be
 * wrong now (then the generation has moved too).  Cheap for ordinary changes.
 */
bool guard_notify(struct guard *g, const struct guard_event *ev)
{
	const struct guard_cls *p = ev->parent;
	char buf[PATH_MAX];
	struct guard_cls c;
	bool changed = false;
	int has;

	if (ev->op == GUARD_OP_WRITE) {
		if (ev->cls && ev->cls->role == GUARD_R_CONFIG && p && p->kind == GUARD_GITDIR &&
		    ev->parent_fd >= 0)
			return guard_repo_rescan(g, p->dev, p->ino, ev->parent_fd);
		return false;
	}
	if (!p || !ev->name || p->kind == GUARD_BOTREPO)
		return false;
	if (ev->st && g->allow_new) {
		bool isdir = S_ISDIR(ev->st->st_mode);

		if ((name_is_dotgit(ev->name) && isdir) ||
		    (isdir && name_is_bare(ev->name) && p->kind != GUARD_GITDIR)) {
			changed = !bot_repo_add(g, ev->st->st_dev, ev->st->st_ino,
						guard_born_at(ev->parent_fd, ev->name,
							      ev->st->st_dev, ev->st->st_ino),
						ev->path);
		} else if (name_is_dotgit(ev->name)) {
			pthread_rwlock_wrlock(&g->lock);
			if (!recs_add_file(&g->botrecs, ev->parent_fd, ev->name, ev->st, REC_BOT,
					   GUARD_RULE_W1))
				guard_own_rebuild(g);
			pthread_rwlock_unlock(&g->lock);
			guard_botmade_add(g, ev->st->st_dev, ev->st->st_ino);
			changed = true;
		} else if (shape_bit(ev->name) && p->kind != GUARD_GITDIR && ev->parent_fd >= 0 &&
			   guard_shape(ev->parent_fd, &has)) {
			changed = !bot_repo_add(g, p->dev, p->ino,
						guard_born_at(ev->parent_fd, "", p->dev, p->ino),
						dirname_of(ev->path, buf, sizeof(buf)));
		}
	}
	if (p->kind == GUARD_GITDIR && ev->parent_fd >= 0) {
		guard_name_stage(g, p, ev->name, ev->st ? ev->st->st_mode : 0, &c);
		/* an index renamed in (every git add) changes no repository layout */
		if ((c.flags & ~GUARD_CHK) || c.role == GUARD_R_WORKTREES)
			changed |= guard_repo_rescan(g, p->dev, p->ino, ev->parent_fd);
	}
	/* a folder moved: what lies beneath it now hangs from another class */
	if (ev->op == GUARD_OP_RENAME && ev->st && S_ISDIR(ev->st->st_mode))
		changed = true;
	if (changed)
		guard_bump(g);
	return changed;
}

/* SPDX-License-Identifier: MIT */
/*
 * H1 (gitguard/home.c): a person's git configuration in a writable root.  The
 * homes are given with guard_opts.extra_homes (the host's own, from
 * getpwent, are guarded too but not touched here).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gitguard/gitguard.h"
#include "gitguard/guard-int.h" /* guard_homes_taken */
#include "tests/guard-tap.h"

#include "tests/guard-unit.h"

static char homep[PATH_MAX];	/* the test's home folder */
static char home2p[PATH_MAX];	/* a home not made yet */
static char home3p[PATH_MAX];	/* a home outside the root */
static const char *homes[4] = {homep, home2p, home3p, NULL};

/* chmod of REL to MODE (the permission bits), with its descriptor as fusefs's */
static const char *chmod_to(const char *rel, mode_t mode)
{
	struct guard_req r = {.op = GUARD_OP_CHMOD, .fd = -1, .parent_fd = -1,
			      .src_parent_fd = -1, .victim_fd = -1};
	struct guard_cls c;
	const char *res;
	struct stat st;

	if (walk_to(rel, &c, &r.fd, &st))
		return "ERR";
	r.cls = &c;
	r.mode = (st.st_mode & S_IFMT) | mode;
	res = result(guard_check(g, &r, &v));
	close(r.fd);
	return res;
}

static void test_home_names(void)
{
	struct guard_cls c;

	new_root("r", false);
	snprintf(homep, sizeof(homep), "%s/r/home/u", top);
	snprintf(home2p, sizeof(home2p), "%s/r/home/later", top);
	sh("mkdir -p home/u/.config/git home/u/proj other/.config/git && "
	   "printf '[user]\\n\\tname = u\\n[include]\\n\\tpath = inc/extra.cfg\\n"
	   "\\tpath = inc/missing.cfg\\n[core]\\n\\thooksPath = %s/r/gh\\n' >home/u/.gitconfig && "
	   "mkdir home/u/inc && echo '[x]' >home/u/inc/extra.cfg && "
	   "echo '[core]' >home/u/.config/git/config && echo '*.x diff' "
	   ">home/u/.config/git/attributes && echo hi >other/.gitconfig && "
	   "echo hi >home/u/proj/a.txt",
	   top);
	open_root(false);
	guard_scan_tree(g, 0, NULL);
	IS(try_write("home/u/.gitconfig"), "H1", "~/.gitconfig RO");
	IS(try_remove("home/u/.gitconfig"), "H1", "~/.gitconfig not removable");
	IS(try_rename("home/u/.gitconfig", "home/u/old"), "H1", "~/.gitconfig not renamed away");
	IS(try_write("home/u/.config/git/config"), "H1", "~/.config/git/config RO");
	IS(try_create("home/u/.config/git/hooks"), "H1", "nothing new in ~/.config/git");
	IS(try_write("home/u/.config/git/attributes"), "H1", "~/.config/git/attributes RO");
	IS(try_rename("home/u/.config", "home/u/cfg-old"), "H1", "~/.config not renamed away");
	IS(try_remove("home/u/.config/git"), "H1", "~/.config/git not removable");
	IS(try_rename("home/u/.config/git", "home/u/.config/g2"), "H1", "~/.config/git pinned");
	IS(try_rename("home/u", "home/v"), "H1", "a home inside the root is pinned");
	IS(try_rename("home", "home2"), "H1", "the folders above a home are pinned");
	IS(try_write("home/u/inc/extra.cfg"), "W3", "an include of ~/.gitconfig RO");
	IS(try_create("home/u/inc/missing.cfg"), "W3", "a missing include of ~/.gitconfig NC");
	IS(try_mkdir("gh"), "W2", "an absolute hooksPath of ~/.gitconfig NC");
	IS(try_mkdir("home/later"), "H1", "a home not made yet may not be made");
	IS(try_create("home/u/.config/other"), "", "other files in ~/.config writable");
	IS(try_write("home/u/proj/a.txt"), "", "other files in a home writable");
	/* H-b: the home, ~/.config and the folders above not opened to other accounts */
	IS(chmod_to("home/u", 0777), "H1", "a home: chmod 0777 refused");
	IS(chmod_to("home/u", 0757), "H1", "a home: chmod o+w refused");
	IS(chmod_to("home/u", 0700), "", "a home: chmod 0700 allowed");
	IS(chmod_to("home/u/.config", 0775), "H1", "~/.config: chmod g+w refused");
	IS(chmod_to("home/u/.config", 0755), "", "~/.config: chmod 0755 allowed");
	IS(chmod_to("home", 0777), "H1", "the folder above a home: chmod 0777 refused");
	IS(chmod_to("home/u/proj", 0777), "", "other folders in a home: chmod 0777 allowed");
	IS(chmod_to("other", 0777), "", "folders outside a home: chmod 0777 allowed");
	IS(try_create("home/u/.bashrc.x"), "", "other names in a home can be made");
	/* no false positives outside a home */
	IS(try_write("other/.gitconfig"), "", ".gitconfig outside a home writable");
	IS(try_remove("other/.gitconfig"), "", ".gitconfig outside a home removable");
	IS(try_write("other/.config/git"), "", ".config/git outside a home writable");
	IS(try_rename("other/.config", "other/c2"), "", ".config outside a home can move");
	c = cls_of("other/.config");
	tap_ok(c.flags == 0 && c.role == 0, "no class for .config outside a home");
	/* with .gitconfig and .config gone, they still cannot be made */
	sh("rm -rf home/u/.gitconfig home/u/.config");
	open_root(false);
	IS(try_create("home/u/.gitconfig"), "H1", "~/.gitconfig NC");
	IS(try_symlink("home/u/.gitconfig", "../../evil"), "H1", "~/.gitconfig no symlink");
	IS(try_mkdir("home/u/.gitconfig"), "H1", "~/.gitconfig no folder");
	IS(try_symlink("home/u/.config", "../../other/.config"), "H1", "~/.config no symlink");
	IS(try_rename("other/.config", "home/u/.config"), "H1", "no folder moved in as ~/.config");
	IS(try_link("other/.gitconfig", "home/u/.gitconfig"), "H1", "no link as ~/.gitconfig");
	IS(try_mkdir("home/u/.config"), "", "~/.config may be made");
	sh("mkdir home/u/.config");
	IS(try_mkdir("home/u/.config/git"), "H1", "~/.config/git NC");
	IS(try_create("home/u/.config/git"), "H1", "~/.config/git NC as a file");
	IS(try_remove("home/u/.config"), "H1", "a new ~/.config is pinned too");
	/* ~/.ssh: git over ssh runs what its config and the files it Includes name */
	IS(try_symlink("home/u/.ssh", "../../other"), "H1", "~/.ssh no symlink");
	IS(try_mkdir("home/u/.ssh"), "H1", "~/.ssh may not be made by the bot (H-c)");
	IS(try_mkdir("home/u/.gnupg"), "H1", "~/.gnupg may not be made by the bot (H-c)");
	sh("mkdir home/u/.ssh && echo x >home/u/.ssh/known_hosts");
	IS(try_write("home/u/.ssh"), "H1", "~/.ssh itself read-only: no chmod (H-b)");
	IS(try_create("home/u/.ssh/config"), "H1", "~/.ssh/config NC");
	IS(try_write("home/u/.ssh/known_hosts"), "H1", "~/.ssh/known_hosts read-only (all of ~/.ssh)");
	IS(try_mkdir("home/u/.ssh/config.d"), "H1", "~/.ssh: no folder made (an Include target)");
	sh("mkdir home/u/.gnupg && touch home/u/.gnupg/gpg.conf");
	IS(try_write("home/u/.gnupg"), "H1", "~/.gnupg itself read-only: no chmod (H-b)");
	IS(try_create("home/u/.gnupg/gpg-agent.conf"), "H1", "~/.gnupg/gpg-agent.conf NC (its pinentry runs)");
	IS(try_write("home/u/.gnupg/gpg.conf"), "H1", "~/.gnupg/gpg.conf read-only");
	IS(try_rename("home/u/.gnupg", "home/u/gnupg-old"), "H1", "~/.gnupg pinned");
	IS(try_rename("home/u/.ssh", "home/u/ssh-old"), "H1", "~/.ssh pinned");
	sh("mkdir -p other/.ssh && touch other/.ssh/config");
	IS(try_write("other/.ssh/config"), "", ".ssh/config outside a home writable");
	sh("touch home/u/.ssh/config");
	IS(try_write("home/u/.ssh/config"), "H1", "~/.ssh/config RO");
}

/* a dotfiles manager: ~/.gitconfig and ~/.config/git are symlinks into the root */
static void test_home_links(void)
{
	new_root("s", false);
	snprintf(homep, sizeof(homep), "%s/s/u", top);
	snprintf(home2p, sizeof(home2p), "%s/s/none", top);
	sh("mkdir -p u dots/git-xdg && echo '[include]' >dots/gitconfig && "
	   "echo '  path = ../inc2.cfg' >>dots/gitconfig && echo '[x]' >inc2.cfg && "
	   "echo '[core]' >dots/git-xdg/config && ln -s ../dots/gitconfig u/.gitconfig && "
	   "mkdir u/.config && ln -s ../../dots/git-xdg u/.config/git && "
	   "echo 'Host *' >dots/ssh_config && mkdir u/.ssh && ln -s ../../dots/ssh_config u/.ssh/config");
	open_root(false);
	IS(try_write("dots/gitconfig"), "H1", "target of a ~/.gitconfig symlink RO");
	IS(try_write("inc2.cfg"), "W3", "include of a symlinked ~/.gitconfig RO");
	IS(try_write("dots/git-xdg/config"), "H1", "target of a ~/.config/git symlink RO");
	IS(try_create("dots/git-xdg/hooks"), "H1", "target of ~/.config/git RO-tree");
	IS(try_rename("dots", "dots2"), "H1", "folders on the way pinned");
	IS(try_create("dots/other"), "", "other files beside them writable");
	IS(try_write("dots/ssh_config"), "H1", "target of a ~/.ssh/config symlink RO");
}

/* GNU stow: ~/.ssh/config.d and ~/.gnupg are symlinks into a dotfiles folder in the root (H-a) */
static void test_home_stow(void)
{
	new_root("w", false);
	snprintf(homep, sizeof(homep), "%s/w/u", top);
	snprintf(home2p, sizeof(home2p), "%s/w/none", top);
	sh("mkdir -p u/.ssh dots/ssh/config.d dots/ssh/deep dots/gnupg dots/keys && "
	   "echo 'Include config.d/*' >u/.ssh/config && echo 'Host x' >dots/ssh/config.d/a && "
	   "ln -s ../../dots/ssh/config.d u/.ssh/config.d && "
	   "ln -s ../../dots/keys/ak u/.ssh/authorized_keys && "
	   "ln -s ../../dots/ssh/deep u/.ssh/deep && ln -s ../../keys/kh dots/ssh/deep/kh && "
	   "ln -s ../dots/gnupg u/.gnupg && echo x >dots/gnupg/gpg.conf && echo x >dots/other && "
	   "mkdir -p u/.config/git && echo '[core]' >dots/gitcfg && "
	   "ln -s ../../../dots/gitcfg u/.config/git/config");
	open_root(false);
	IS(try_create("dots/ssh/config.d/bot"), "H1", "a folder ~/.ssh/config.d links to: RO-tree");
	IS(try_write("dots/ssh/config.d/a"), "H1", "... and the file in it RO");
	IS(try_create("dots/keys/ak"), "H1", "a missing authorized_keys a link names: NC");
	IS(try_create("dots/keys/kh"), "H1", "a link in a linked folder is followed too");
	IS(try_create("dots/gnupg/gpg-agent.conf"), "H1", "the folder a ~/.gnupg symlink names: RO-tree");
	IS(try_write("dots/gnupg"), "H1", "... and it cannot be chmodded");
	IS(try_rename("dots/ssh", "dots/ssh2"), "H1", "folders on the way pinned");
	IS(try_write("dots/other"), "", "other files beside them writable");
	IS(try_create("dots/keys/other"), "", "other names beside a named link target can be made");
	IS(try_write("dots/gitcfg"), "H1", "where a link as ~/.config/git/config leads: RO");
}

/* a home outside the root whose dotfiles (stow) are inside it: ~/src/dotfiles, the bot given ~/src */
static void test_home_out_links(void)
{
	new_root("o", false);
	snprintf(homep, sizeof(homep), "%s/ohome", top);
	snprintf(home2p, sizeof(home2p), "%s/o/none", top);
	sh("mkdir -p dots/ssh/config.d dots/gnupg dots/git ../ohome/.ssh ../ohome/.config && "
	   "echo '[core]' >dots/gitconfig && echo '[core]' >dots/git/config && "
	   "echo 'Host x' >dots/ssh/config.d/a && echo x >dots/gnupg/gpg.conf && "
	   "ln -s ../o/dots/gitconfig ../ohome/.gitconfig && "
	   "ln -s ../../o/dots/git ../ohome/.config/git && "
	   "ln -s ../../o/dots/ssh/config.d ../ohome/.ssh/config.d && "
	   "ln -s ../o/dots/gnupg ../ohome/.gnupg && echo x >dots/other");
	open_root(false);
	IS(try_write("dots/gitconfig"), "H1", "outside home: the ~/.gitconfig a link names RO");
	IS(try_write("dots/git/config"), "H1", "outside home: the ~/.config/git a link names RO");
	IS(try_create("dots/ssh/config.d/bot"), "H1", "outside home: a ~/.ssh/config.d link names RO-tree");
	IS(try_create("dots/gnupg/gpg-agent.conf"), "H1", "outside home: the ~/.gnupg a link names RO-tree");
	IS(try_write("dots/other"), "", "outside home: other files beside them writable");
	homep[0] = '\0';
}

/* H-d: what ~/.ssh/config Includes elsewhere in the root (absolute, ~, globs, nested) */
static void test_ssh_include(void)
{
	new_root("i", false);
	snprintf(homep, sizeof(homep), "%s/i/u", top);
	snprintf(home2p, sizeof(home2p), "%s/i/none", top);
	snprintf(home3p, sizeof(home3p), "%s/ihome", top);
	sh("mkdir -p u/.ssh x/d ../ihome/.ssh && "
	   "printf 'Host y\n  Include %s/i/x/one.conf\n"
	   "Include ~/../x/d/*.conf \"%s/i/x/missing.conf\"\nInclude=rel.conf\n' >u/.ssh/config && "
	   "echo 'Include %s/i/x/two.conf' >x/one.conf && echo x >x/two.conf && "
	   "echo x >x/d/a.conf && echo x >x/other && echo x >x/three.conf && "
	   "echo 'include %s/i/x/three.conf' >../ihome/.ssh/config",
	   top, top, top, top);
	open_root(false);
	IS(try_write("x/one.conf"), "H1", "ssh Include by absolute path: RO");
	IS(try_write("x/two.conf"), "H1", "... and what it Includes in turn");
	IS(try_write("x/d/a.conf"), "H1", "ssh Include by ~ and a glob: the match RO");
	IS(try_create("x/d/b.conf"), "H1", "... and no new file in the pattern's folder");
	IS(try_create("x/missing.conf"), "H1", "a quoted ssh Include not made yet: NC");
	IS(try_write("x/three.conf"), "H1", "an Include of a home's ssh config outside the root: RO");
	IS(try_write("x/other"), "", "other files beside them writable");
	home3p[0] = '\0';
}

/* a person changes their configuration on the host while mounted; a home outside the root */
static void test_home_changes(void)
{
	new_root("c", false);
	snprintf(homep, sizeof(homep), "%s/c/u", top);
	snprintf(home2p, sizeof(home2p), "%s/c/none", top);
	snprintf(home3p, sizeof(home3p), "%s/outhome", top);
	sh("mkdir -p u ../outhome/.config/git && echo '[user]' >u/.gitconfig && "
	   "printf '[include]\\n\\tpath = %s/c/team.cfg\\n' >../outhome/.gitconfig && "
	   "echo '[x]' >team.cfg && "
	   "printf '[include]\\n\\tpath = ~/.gitconfig.local\\n' >>../outhome/.gitconfig && "
	   "printf '[include]\\n\\tpath = sub/two.cfg\\n' >../outhome/.gitconfig.local && "
	   "mkdir ../outhome/sub && "
	   "printf '[includeIf \"gitdir:~/w/\"]\\n\\tpath = %s/c/deep.cfg\\n' "
	   ">../outhome/sub/two.cfg && echo '[x]' >deep.cfg",
	   top, top);
	open_root(false);
	IS(try_write("team.cfg"), "W3", "an include of a home's config outside the root");
	IS(try_write("deep.cfg"), "W3", "... and one two includes down, outside the root");
	IS(try_create("later.cfg"), "", "a file no config names is writable");
	IS(try_create("hooks-later"), "", "a folder no config names may be made");
	sh("printf '[include]\\n\\tpath = ../later.cfg\\n' >>u/.gitconfig");
	usleep(60 * 1000);
	IS(try_create("later.cfg"), "W3", "an include added on the host is guarded next");
	sh("printf '[core]\\n\\thooksPath = %s/c/hooks-later\\n' "
	   ">>../outhome/.config/git/config",
	   top);
	usleep(60 * 1000);
	IS(try_mkdir("hooks-later"), "W2", "a hooksPath added outside the root is guarded next");
	home3p[0] = '\0';
}

/* a home named through a host symlink that leads into the root */
static void test_home_alias(void)
{
	new_root("a", false);
	snprintf(homep, sizeof(homep), "%s/alias-u", top);
	snprintf(home2p, sizeof(home2p), "%s/a/none", top);
	sh("mkdir -p real/u && echo '[core]' >real/u/.gitconfig && ln -s a/real/u ../alias-u");
	open_root(false);
	IS(try_write("real/u/.gitconfig"), "H1", "a home reached through a host symlink");
	IS(try_rename("real/u", "real/v"), "H1", "... is pinned");
	IS(try_create("real/.gitconfig"), "", "the folder above it is no home");
}

/* the root is the home itself */
static void test_root_is_home(void)
{
	snprintf(rootp, sizeof(rootp), "%s/h", top);
	snprintf(homep, sizeof(homep), "%s", rootp);
	snprintf(home2p, sizeof(home2p), "%s/none", top);
	if (mkdir(rootp, 0755) < 0)
		die(rootp);
	sh("echo '[core]' >.gitconfig");
	open_root(false);
	IS(try_write(".gitconfig"), "H1", "root is a home: .gitconfig RO");
	IS(try_mkdir(".config"), "", "root is a home: .config may be made");
	sh("mkdir .config");
	IS(try_mkdir(".config/git"), "H1", "root is a home: .config/git NC");
	/* the root is a home's .config */
	snprintf(rootp, sizeof(rootp), "%s/h/.config", top);
	open_root(false);
	IS(try_mkdir("git"), "H1", "root is ~/.config: git NC");
	IS(try_mkdir("other"), "", "root is ~/.config: other folders may be made");
}

/*
 * A guard_open takes the view's last home scan over (home-reuse.c) only
 * when the new root played no part in it, nothing it read changed, it is
 * recent and of the same homes: else the root would miss what a scan of its
 * own finds.
 */
static void test_home_reuse(void)
{
	struct guard_view *view;
	unsigned long n;

	if (guard_view_new(&view))
		die("guard_view_new");
	guard_unit_view = view;
	snprintf(homep, sizeof(homep), "%s/reuse-home", top);
	home2p[0] = home3p[0] = '\0';
	snprintf(rootp, sizeof(rootp), "%s", top);
	sh("mkdir ra rb rc reuse-home && echo '[x]' >rb/inc.cfg && echo '[x]' >rc/inc.cfg"
	   " && printf '[include]\\n\\tpath = %s/rb/inc.cfg\\n' >reuse-home/.gitconfig",
	   top);
	usleep(1100 * 1000); /* a second on: not racy, so a scan of them may be taken over */
	snprintf(rootp, sizeof(rootp), "%s/ra", top);
	open_root(false);
	n = guard_homes_taken(view);
	IS(try_create("inc.cfg"), "", "a root beside the one a home's config includes from");
	snprintf(rootp, sizeof(rootp), "%s/rb", top);
	open_root(false);
	tap_ok(guard_homes_taken(view) == n, "a root the last scan walked through: scanned afresh");
	IS(try_write("inc.cfg"), "W3", "... and what a home's config includes there is guarded");
	snprintf(rootp, sizeof(rootp), "%s/rc", top);
	open_root(false);
	tap_ok(guard_homes_taken(view) == n + 1, "a root the last scan never met takes it over");
	IS(try_write("inc.cfg"), "", "... and nothing there is guarded that a scan would not");
	sh("printf '[include]\\n\\tpath = %s/rc/inc.cfg\\n' >>../reuse-home/.gitconfig", top);
	usleep(1100 * 1000);
	open_root(false);
	tap_ok(guard_homes_taken(view) == n + 1, "a config changed on the host: scanned afresh");
	IS(try_write("inc.cfg"), "W3", "... and its new include is guarded");
	snprintf(home2p, sizeof(home2p), "%s/reuse-other", top);
	open_root(false);
	tap_ok(guard_homes_taken(view) == n + 1,
	       "other homes than the last scan's: scanned afresh");
	usleep(2100 * 1000);
	open_root(false);
	tap_ok(guard_homes_taken(view) == n + 1, "a scan older than 2 s: scanned afresh");
	IS(try_write("inc.cfg"), "W3", "... with what it guards");
	open_root(false);
	tap_ok(guard_homes_taken(view) == n + 1,
	       "a root its own scan walked through: afresh again");
	snprintf(rootp, sizeof(rootp), "%s/ra", top);
	open_root(false);
	tap_ok(guard_homes_taken(view) == n + 2, "another root takes the new one over");
	guard_unit_view = NULL;
	guard_view_put(view); /* the guard holds it now */
	homep[0] = home2p[0] = '\0';
}

int main(void)
{
	char tmpl[] = "/tmp/unit-guard-home.XXXXXX";
	char cmd[PATH_MAX + 16];
	char *t = mkdtemp(tmpl);

	guard_unit_homes = homes;

	if (!t)
		die("mkdtemp");
	if (!realpath(t, top))
		die("realpath");
	test_home_names();
	test_home_links();
	test_home_stow();
	test_home_out_links();
	test_ssh_include();
	test_home_changes();
	test_home_alias();
	test_root_is_home();
	test_home_reuse();
	guard_free(g);
	close(rootfd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	if (system(cmd) != 0)
		fprintf(stderr, "# could not remove %s\n", top);
	return tap_done();
}

# SPDX-License-Identifier: MIT
# src: agentfs (the CLI, src/cli/), agentfs-local (its mount, umount and
# audit, src/local/), agentfsd (the daemon, src/daemon/), agentfs-enter
# (src/enter/) and what agentfs and agentfsd share (src/common/). The programs are built here in src/, where tests, bench,
# .ci and the packaging find them.
noinst_LIBRARIES += src/libagentfs-common.a
src_libagentfs_common_a_SOURCES = src/common/agentfs.h src/common/util.c src/common/log.c \
	src/common/fdpass.c src/common/mounts.c
src_libagentfs_common_a_CFLAGS = $(AM_CFLAGS) $(CJSON_CFLAGS)

# agentfs links neither libfuse3 nor libgit2: of the two libraries' code it
# takes only what calls neither (fusefs/ids.c, gitguard's gg_escape), and a
# link that needed them would fail here. mount, umount and audit, which do
# need them, are agentfs-local's (below), which agentfs runs for them.
bin_PROGRAMS += src/agentfs
src_agentfs_SOURCES = src/cli/agentfs.c src/cli/say.c src/cli/client.c \
	src/cli/cmd-bots.c src/cli/cmd-ps.c src/cli/cmd-log.c \
	src/cli/cmd-exec.c src/cli/exec.h src/cli/exec-as.c src/cli/exec-bwrap.c \
	src/cli/exec-env.c src/cli/exec-guard.c src/cli/exec-user.c src/cli/exec-tty.c
src_agentfs_CFLAGS = $(AM_CFLAGS) $(FUSE_CFLAGS) $(CJSON_CFLAGS)
src_agentfs_CPPFLAGS = $(AM_CPPFLAGS) -DAGENTFS_LOCAL='"$(pkglibexecdir)/agentfs-local"'
src_agentfs_LDADD = src/libagentfs-common.a fusefs/libfusefs.a gitguard/libgitguard.a \
	$(CJSON_LIBS) -lutil -lpthread

# agentfs mount, umount and audit (src/local/local.c): the FUSE server and
# the repository readers, with libfuse3 and libgit2.
pkglibexec_PROGRAMS = src/agentfs-local
src_agentfs_local_SOURCES = src/local/local.c src/cli/say.c src/cli/client.c \
	src/cli/cmd-mount.c src/cli/cmd-audit.c
src_agentfs_local_CFLAGS = $(AM_CFLAGS) $(FUSE_CFLAGS) $(CJSON_CFLAGS)
src_agentfs_local_LDADD = src/libagentfs-common.a fusefs/libfusefs.a gitguard/libgitguard.a \
	$(FUSE_LIBS) $(CJSON_LIBS) $(GIT2_LIBS) -lpthread

# The sandbox's first program (src/enter/enter.c): the in-sandbox step of
# agentfs exec, linked with the C library alone, statically where configure
# found that works (ENTER_LDFLAGS).  What it shares with agentfs is
# compiled here a function to a section, and the linker keeps only what it
# calls (the outer exec's functions in the same files are dropped).
pkglibexec_PROGRAMS += src/agentfs-enter
src_agentfs_enter_SOURCES = src/enter/enter.c src/cli/exec-as.c src/cli/exec-user.c \
	src/cli/exec-env.c src/common/fdpass.c fusefs/ids.c
src_agentfs_enter_CFLAGS = $(AM_CFLAGS) $(FUSE_CFLAGS) $(CJSON_CFLAGS) -ffunction-sections \
	-fdata-sections
src_agentfs_enter_LDFLAGS = -Wl,--gc-sections $(ENTER_LDFLAGS)

sbin_PROGRAMS += src/agentfsd
src_agentfsd_SOURCES = src/daemon/agentfsd.c src/daemon/conffile.h src/daemon/conffile.c \
	src/daemon/server-int.h src/daemon/server.c \
	src/daemon/listen.c src/daemon/proto.c \
	src/daemon/bots-int.h src/daemon/bots.c src/daemon/authority.c src/daemon/configure.c \
	src/daemon/queries.c src/daemon/plan.c src/daemon/roots.c src/daemon/jobs.c \
	src/daemon/sandbox-int.h src/daemon/sandbox.c src/daemon/sandbox-disk.c \
	src/daemon/sandbox-ops.c \
	src/daemon/cgroup.h src/daemon/cgroup.c src/daemon/restart.c src/daemon/state.c \
	src/daemon/events.c src/daemon/changes-int.h src/daemon/changes.c src/daemon/ctree.c \
	src/daemon/ctree-read.c \
	src/daemon/accounts.c src/daemon/fdstore.c src/daemon/keeper.c
src_agentfsd_CFLAGS = $(AM_CFLAGS) $(FUSE_CFLAGS) $(CJSON_CFLAGS) $(EVENT_CFLAGS)
src_agentfsd_LDADD = src/libagentfs-common.a fusefs/libfusefs.a gitguard/libgitguard.a \
	$(FUSE_LIBS) $(CJSON_LIBS) $(EVENT_LIBS) $(GIT2_LIBS)
src_agentfsd_CPPFLAGS = $(AM_CPPFLAGS) -DAGENTFSD_CONFIG='"$(agentfsconfdir)/agentfsd.json"' \
	-DAGENTFS_ENTER='"$(pkglibexecdir)/agentfs-enter"'

# What a packager installs besides the programs: the systemd unit, the
# tmpfiles.d entry for /run/agentfs, the example configuration (installed
# where agentfsd reads it, never over one that exists), the bash completion
# and mount(8)'s helper for `mount -t fuse.agentfs`. Paths from configure.
agentfsconfdir = $(sysconfdir)/agentfs
dist_doc_DATA = README.md LICENSE src/agentfsd.json.example
EXTRA_DIST += src/README src/common/README src/cli/README src/local/README src/enter/README \
	src/daemon/README src/agentfsd.service.in src/agentfs.tmpfiles src/agentfs.bash-completion \
	src/mount.fuse.agentfs.in
CLEANFILES += src/agentfsd.service src/mount.fuse.agentfs

# Substituted by make, not configure, so ${prefix} and DESTDIR-free paths expand.
edit = sed -e 's|@sbindir[@]|$(sbindir)|g' -e 's|@bindir[@]|$(bindir)|g'

src/agentfsd.service: $(srcdir)/src/agentfsd.service.in Makefile
	$(AM_V_GEN)$(MKDIR_P) src && $(edit) $(srcdir)/src/agentfsd.service.in > $@.tmp && mv $@.tmp $@

src/mount.fuse.agentfs: $(srcdir)/src/mount.fuse.agentfs.in Makefile
	$(AM_V_GEN)$(MKDIR_P) src && $(edit) $(srcdir)/src/mount.fuse.agentfs.in > $@.tmp && \
		chmod 755 $@.tmp && mv $@.tmp $@

if HAVE_SYSTEMD_UNIT
systemdsystemunit_DATA = src/agentfsd.service
endif
if HAVE_MOUNT_HELPER
mounthelper_SCRIPTS = src/mount.fuse.agentfs
endif
noinst_DATA = src/agentfsd.service src/mount.fuse.agentfs

install-data-local:
if HAVE_TMPFILES
	$(MKDIR_P) '$(DESTDIR)$(tmpfilesdir)'
	$(INSTALL_DATA) $(srcdir)/src/agentfs.tmpfiles '$(DESTDIR)$(tmpfilesdir)/agentfs.conf'
endif
if HAVE_BASH_COMPLETION
	$(MKDIR_P) '$(DESTDIR)$(bashcompletiondir)'
	$(INSTALL_DATA) $(srcdir)/src/agentfs.bash-completion '$(DESTDIR)$(bashcompletiondir)/agentfs'
	cd '$(DESTDIR)$(bashcompletiondir)' && rm -f agentfsd && $(LN_S) agentfs agentfsd
endif
	$(MKDIR_P) '$(DESTDIR)$(agentfsconfdir)'
	@if test -e '$(DESTDIR)$(agentfsconfdir)/agentfsd.json'; then \
		echo "keeping the existing $(DESTDIR)$(agentfsconfdir)/agentfsd.json"; \
	else \
		echo " $(INSTALL_DATA) $(srcdir)/src/agentfsd.json.example '$(DESTDIR)$(agentfsconfdir)/agentfsd.json'"; \
		$(INSTALL_DATA) $(srcdir)/src/agentfsd.json.example '$(DESTDIR)$(agentfsconfdir)/agentfsd.json'; \
	fi

# The configuration goes only if it is still the example: edits are kept.
uninstall-local:
if HAVE_TMPFILES
	rm -f '$(DESTDIR)$(tmpfilesdir)/agentfs.conf'
endif
if HAVE_BASH_COMPLETION
	rm -f '$(DESTDIR)$(bashcompletiondir)/agentfs' '$(DESTDIR)$(bashcompletiondir)/agentfsd'
endif
	@if cmp -s $(srcdir)/src/agentfsd.json.example '$(DESTDIR)$(agentfsconfdir)/agentfsd.json'; then \
		echo " rm -f '$(DESTDIR)$(agentfsconfdir)/agentfsd.json'"; \
		rm -f '$(DESTDIR)$(agentfsconfdir)/agentfsd.json'; \
		rmdir '$(DESTDIR)$(agentfsconfdir)' 2>/dev/null || :; \
	else \
		echo "keeping $(DESTDIR)$(agentfsconfdir)/agentfsd.json: it was changed"; \
	fi

# SPDX-License-Identifier: MIT
# tests: TAP tests run by make check.

# The filesystem core: shell tests driving `agentfs mount`, and the C helpers
# they run inside the mounts.  Each test needs root and /dev/fuse, and skips
# (exit 77) without them.
check_PROGRAMS += tests/fsops tests/fs-tryop tests/fs-racer tests/fs-lock
tests_fsops_SOURCES = tests/fsops.c
tests_fs_tryop_SOURCES = tests/fs-tryop.c
tests_fs_racer_SOURCES = tests/fs-racer.c
tests_fs_racer_LDADD = $(PTHREAD_LIBS)
tests_fs_lock_SOURCES = tests/fs-lock.c

FS_TESTS = \
	tests/fs-cli.sh \
	tests/fs-posix.sh \
	tests/fs-privs.sh \
	tests/fs-acl.sh \
	tests/fs-ro.sh \
	tests/fs-race.sh \
	tests/fs-locks.sh \
	tests/fs-coherence.sh \
	tests/fs-fdlimit.sh \
	tests/fs-identity.sh \
	tests/fs-mountid.sh \
	tests/fs-passthrough.sh \
	tests/fs-uring.sh \
	tests/fs-mount-helper.sh
TESTS += $(FS_TESTS)
EXTRA_DIST += tests/lib.sh tests/complete-lib.sh tests/docs-lib.sh tests/README.md $(FS_TESTS)

# The manual against every --help, the mount -o options and the completion;
# README's Installing section (make check-readme-install only: a whole build).
TESTS += tests/cli-docs.sh
EXTRA_DIST += tests/cli-docs.sh tests/readme-install.sh

# The test wrapper ends a test that hangs (tests/tap-skip.sh).
TESTS += tests/tap-timeout.sh
EXTRA_DIST += tests/tap-timeout.sh

# The differential tester: a short run in make check, a long one by hand.
check_PROGRAMS += tests/fs-diff
tests_fs_diff_SOURCES = tests/fs-diff.c
TESTS += tests/fs-diff.sh
EXTRA_DIST += tests/fs-diff.sh

# The daemon's authority (src/daemon/authority.c): pure functions, no root needed.
check_PROGRAMS += tests/unit-authority
TESTS += tests/unit-authority
tests_unit_authority_SOURCES = tests/unit-authority.c tests/guard-tap.h src/daemon/authority.c
tests_unit_authority_CFLAGS = $(AM_CFLAGS) $(CJSON_CFLAGS)
tests_unit_authority_LDADD = src/libagentfs-common.a gitguard/libgitguard.a $(CJSON_LIBS)

# keeper_start (src/daemon/keeper.c) with descriptor 3 free or taken: the
# keeper it starts listens on 3. Root (the keeper serves root only) and a
# built src/agentfsd (it is the keeper).
check_PROGRAMS += tests/unit-keeper
TESTS += tests/unit-keeper
tests_unit_keeper_SOURCES = tests/unit-keeper.c tests/guard-tap.h src/daemon/keeper.c
tests_unit_keeper_LDADD = src/libagentfs-common.a

# The node records of a mount's table memfd (fusefs/noderec.c): a version 1 table
# converted, a live record's switch, the overflow free list. No root needed.
check_PROGRAMS += tests/unit-noderec
TESTS += tests/unit-noderec
tests_unit_noderec_SOURCES = tests/unit-noderec.c tests/guard-tap.h fusefs/noderec.c
tests_unit_noderec_CFLAGS = $(AM_CFLAGS) $(FUSE_CFLAGS)

# gitguard's layout questions (gitguard/layout.c), in a temporary folder.
check_PROGRAMS += tests/unit-guard-layout
TESTS += tests/unit-guard-layout
tests_unit_guard_layout_SOURCES = tests/unit-guard-layout.c tests/guard-tap.h
tests_unit_guard_layout_LDADD = gitguard/libgitguard.a

# The table of a bot's changes (src/daemon/ctree.c, ctree-read.c): merge rules, bounds,
# pages.
check_PROGRAMS += tests/unit-ctree
TESTS += tests/unit-ctree
tests_unit_ctree_SOURCES = tests/unit-ctree.c tests/guard-tap.h src/daemon/ctree.c \
	src/daemon/ctree-read.c src/daemon/changes-int.h
tests_unit_ctree_CFLAGS = $(AM_CFLAGS) $(CJSON_CFLAGS)
tests_unit_ctree_LDADD = $(CJSON_LIBS)

# SPDX-License-Identifier: MIT
# gitguard: git folder discovery and the rule table (owner: gitguard/).
noinst_LIBRARIES += gitguard/libgitguard.a
gitguard_libgitguard_a_SOURCES = \
	gitguard/gitguard.h \
	gitguard/guard-int.h \
	gitguard/ggutil.h \
	gitguard/path.c \
	gitguard/fdio.c \
	gitguard/grow.c \
	gitguard/guard.c \
	gitguard/classify.c \
	gitguard/check.c gitguard/x1.c \
	gitguard/walk.c \
	gitguard/content.c gitguard/wt.c gitguard/wt-int.h \
	gitguard/repo.c \
	gitguard/reposcan.c \
	gitguard/cfgscan.c \
	gitguard/resolve.c \
	gitguard/parse.c \
	gitguard/index.c \
	gitguard/index-split.c \
	gitguard/index-tree.c \
	gitguard/index-int.h \
	gitguard/seq.c \
	gitguard/rerere.c \
	gitguard/midx.c \
	gitguard/refs.c \
	gitguard/names.c \
	gitguard/rules.c \
	gitguard/gitlink.c \
	gitguard/lg2.c \
	gitguard/sha1.c \
	gitguard/audit.c gitguard/audit-git.c gitguard/audit-int.h \
	gitguard/home.c gitguard/home-reuse.c gitguard/home-ssh.c gitguard/home-int.h \
	gitguard/scan.c
gitguard_libgitguard_a_CFLAGS = $(AM_CFLAGS) $(GIT2_CFLAGS)
EXTRA_DIST += gitguard/README

check_PROGRAMS += tests/unit-guard tests/unit-guard-parse tests/unit-guard-index
TESTS += tests/unit-guard tests/unit-guard-parse tests/unit-guard-index
tests_unit_guard_SOURCES = tests/unit-guard.c tests/guard-tap.h tests/guard-unit.h
tests_unit_guard_LDADD = gitguard/libgitguard.a $(GIT2_LIBS)
tests_unit_guard_parse_SOURCES = tests/unit-guard-parse.c tests/guard-tap.h
tests_unit_guard_parse_LDADD = gitguard/libgitguard.a
tests_unit_guard_index_SOURCES = tests/unit-guard-index.c tests/guard-tap.h
tests_unit_guard_index_LDADD = gitguard/libgitguard.a
check_PROGRAMS += tests/unit-guard-home
TESTS += tests/unit-guard-home
tests_unit_guard_home_SOURCES = tests/unit-guard-home.c tests/guard-tap.h tests/guard-unit.h
tests_unit_guard_home_LDADD = gitguard/libgitguard.a $(GIT2_LIBS)
check_PROGRAMS += tests/unit-guard-view
TESTS += tests/unit-guard-view
tests_unit_guard_view_SOURCES = tests/unit-guard-view.c tests/guard-tap.h tests/guard-unit.h
tests_unit_guard_view_LDADD = gitguard/libgitguard.a $(GIT2_LIBS) -lpthread
# The facts the caller gathers (read-only, seal, LK, HL) and the G3 top, judged by guard_check.
check_PROGRAMS += tests/unit-guard-facts
TESTS += tests/unit-guard-facts
tests_unit_guard_facts_SOURCES = tests/unit-guard-facts.c tests/guard-tap.h tests/guard-unit.h
tests_unit_guard_facts_LDADD = gitguard/libgitguard.a $(GIT2_LIBS)
check_PROGRAMS += tests/unit-path
TESTS += tests/unit-path
tests_unit_path_SOURCES = tests/unit-path.c tests/guard-tap.h
tests_unit_path_LDADD = gitguard/libgitguard.a
check_PROGRAMS += tests/unit-ggutil
TESTS += tests/unit-ggutil
tests_unit_ggutil_SOURCES = tests/unit-ggutil.c tests/guard-tap.h
tests_unit_ggutil_LDADD = gitguard/libgitguard.a
check_PROGRAMS += tests/guard-idx
tests_guard_idx_SOURCES = tests/guard-idx.c
tests_guard_idx_LDADD = gitguard/libgitguard.a
# The layout questions of a caller that mounts tree roots (agentfsd).
gitguard_libgitguard_a_SOURCES += gitguard/layout.c
# R1, X5 and D12: refs, option files and the names git makes (pure checks).
check_PROGRAMS += tests/unit-guard-refs
TESTS += tests/unit-guard-refs
tests_unit_guard_refs_SOURCES = tests/unit-guard-refs.c tests/guard-tap.h
tests_unit_guard_refs_LDADD = gitguard/libgitguard.a $(GIT2_LIBS)
# The design ships: doc/DESIGN.md, the rule table in agentfs(1), the folders' maps.
TESTS += tests/docs-map.sh
EXTRA_DIST += tests/docs-map.sh doc/DESIGN.md doc/URING.md

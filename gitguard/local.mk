# gitguard: git folder discovery and the rule table (owner: gitguard/).
noinst_LIBRARIES += gitguard/libgitguard.a
gitguard_libgitguard_a_SOURCES = \
	gitguard/gitguard.h \
	gitguard/guard-int.h \
	gitguard/guard.c \
	gitguard/classify.c \
	gitguard/check.c \
	gitguard/repo.c \
	gitguard/resolve.c \
	gitguard/parse.c \
	gitguard/lg2.c \
	gitguard/scan.c
gitguard_libgitguard_a_CFLAGS = $(AM_CFLAGS) $(GIT2_CFLAGS)
EXTRA_DIST += gitguard/README

check_PROGRAMS += tests/unit-guard tests/unit-guard-parse
TESTS += tests/unit-guard tests/unit-guard-parse
tests_unit_guard_SOURCES = tests/unit-guard.c tests/guard-tap.h
tests_unit_guard_LDADD = gitguard/libgitguard.a $(GIT2_LIBS)
tests_unit_guard_parse_SOURCES = tests/unit-guard-parse.c tests/guard-tap.h
tests_unit_guard_parse_LDADD = gitguard/libgitguard.a

# SPDX-License-Identifier: MIT
# tests/fuzz.mk: libFuzzer targets for the protocol layer and gitguard's
# parsers and decisions (tests/fuzz/), and the replay of saved inputs.
#
#   make fuzz            build tests/fuzz/fuzz-{proto,gitparse,decide,index,content} with clang
#   make fuzz-run        run each for FUZZ_SECONDS (600) under nice, one at a time
#   make check           replays tests/fuzz/regress-*/ and corpus-*/ (gcc is enough)
#
# The fuzzers compile the sources they test themselves, with the sanitizers;
# fuzz-proto links src/daemon/proto.c and src/common/util.c over fakes of the daemon.
CLANG = clang
FUZZ_SECONDS = 600
FUZZ_FLAGS = -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined
FUZZ_CPPFLAGS = -I$(top_srcdir) -I$(top_builddir) -include $(top_builddir)/config.h
FUZZ_BINS = tests/fuzz/fuzz-proto tests/fuzz/fuzz-gitparse tests/fuzz/fuzz-decide \
	tests/fuzz/fuzz-index tests/fuzz/fuzz-content
FUZZ_TARGETS = proto gitparse decide index content
# gitguard's fuzzers build the whole library from its own source list
# (gitguard/local.mk), so a file added there is never missing here.
FUZZ_GITGUARD_C = `for f in $(gitguard_libgitguard_a_SOURCES); do \
	case $$f in *.c) printf '%s ' "$(top_srcdir)/$$f" ;; esac; done`

fuzz: $(FUZZ_BINS)

fuzz-clang:
	@command -v $(CLANG) >/dev/null 2>&1 || { \
		echo "make fuzz: '$(CLANG)' not found: the fuzzers need clang with libFuzzer" \
			"(Debian: apt-get install clang), or name it: make fuzz CLANG=clang-14" >&2; \
		exit 1; }

$(FUZZ_BINS): | fuzz-clang

FUZZ_PROTO_SRC = $(top_srcdir)/tests/fuzz/fuzz-proto.c $(top_srcdir)/src/daemon/proto.c \
	$(top_srcdir)/src/common/util.c $(top_srcdir)/gitguard/path.c
tests/fuzz/fuzz-proto: $(FUZZ_PROTO_SRC) $(top_srcdir)/src/common/agentfs.h $(top_srcdir)/tests/fuzz/fuzz.h
	@$(MKDIR_P) tests/fuzz
	$(AM_V_CCLD)$(CLANG) $(FUZZ_CPPFLAGS) $(CJSON_CFLAGS) $(FUZZ_FLAGS) -o $@ \
		$(FUZZ_PROTO_SRC) $(CJSON_LIBS)

tests/fuzz/fuzz-gitparse tests/fuzz/fuzz-decide tests/fuzz/fuzz-index tests/fuzz/fuzz-content: \
		$(gitguard_libgitguard_a_SOURCES) $(top_srcdir)/tests/fuzz/fuzz.h
tests/fuzz/fuzz-gitparse: $(top_srcdir)/tests/fuzz/fuzz-gitparse.c
tests/fuzz/fuzz-decide: $(top_srcdir)/tests/fuzz/fuzz-decide.c
tests/fuzz/fuzz-index: $(top_srcdir)/tests/fuzz/fuzz-index.c
tests/fuzz/fuzz-content: $(top_srcdir)/tests/fuzz/fuzz-content.c
tests/fuzz/fuzz-gitparse tests/fuzz/fuzz-decide tests/fuzz/fuzz-index tests/fuzz/fuzz-content:
	@$(MKDIR_P) tests/fuzz
	$(AM_V_CCLD)$(CLANG) $(FUZZ_CPPFLAGS) $(GIT2_CFLAGS) $(FUZZ_FLAGS) -pthread -o $@ \
		$(top_srcdir)/$@.c $(FUZZ_GITGUARD_C) $(GIT2_LIBS)

# New inputs go to tests/fuzz/work-TARGET/ (not committed); the seeds in
# corpus-TARGET/ are read, never grown.  Crashes land in tests/fuzz/crash-*.
fuzz-run: fuzz
	@for t in $(FUZZ_TARGETS); do \
		opts=; \
		test $$t = proto && opts="-max_len=1048576 -dict=$(top_srcdir)/tests/fuzz/proto.dict"; \
		$(MKDIR_P) tests/fuzz/work-$$t || exit 1; \
		echo "fuzz-$$t: $(FUZZ_SECONDS) seconds"; \
		nice -n 19 tests/fuzz/fuzz-$$t -max_total_time=$(FUZZ_SECONDS) -timeout=25 $$opts \
			-artifact_prefix=tests/fuzz/crash-$$t- \
			tests/fuzz/work-$$t $(top_srcdir)/tests/fuzz/corpus-$$t || exit 1; \
	done

.PHONY: fuzz fuzz-run fuzz-clang
CLEANFILES += $(FUZZ_BINS)

# make check: every saved input replayed through the same entry points,
# built with the ordinary compiler and without libFuzzer (TAP, one per input).
FUZZ_REPLAYS = tests/fuzz/replay-proto tests/fuzz/replay-gitparse tests/fuzz/replay-decide \
	tests/fuzz/replay-index tests/fuzz/replay-content
check_PROGRAMS += $(FUZZ_REPLAYS)
TESTS += $(FUZZ_REPLAYS)

tests_fuzz_replay_proto_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz.h \
	tests/fuzz/fuzz-proto.c src/daemon/proto.c
tests_fuzz_replay_proto_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_TARGET='"proto"'
tests_fuzz_replay_proto_CFLAGS = $(AM_CFLAGS) $(CJSON_CFLAGS)
tests_fuzz_replay_proto_LDADD = src/libagentfs-common.a gitguard/libgitguard.a $(CJSON_LIBS)

tests_fuzz_replay_gitparse_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz.h \
	tests/fuzz/fuzz-gitparse.c
tests_fuzz_replay_gitparse_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_TARGET='"gitparse"'
tests_fuzz_replay_gitparse_LDADD = gitguard/libgitguard.a

tests_fuzz_replay_decide_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz.h \
	tests/fuzz/fuzz-decide.c
tests_fuzz_replay_decide_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_TARGET='"decide"'
tests_fuzz_replay_decide_LDADD = gitguard/libgitguard.a $(GIT2_LIBS)

tests_fuzz_replay_index_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz.h \
	tests/fuzz/fuzz-index.c
tests_fuzz_replay_index_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_TARGET='"index"'
tests_fuzz_replay_index_LDADD = gitguard/libgitguard.a

tests_fuzz_replay_content_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz.h \
	tests/fuzz/fuzz-content.c
tests_fuzz_replay_content_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_TARGET='"content"'
tests_fuzz_replay_content_LDADD = gitguard/libgitguard.a $(GIT2_LIBS)

EXTRA_DIST += tests/fuzz/README tests/fuzz/proto.dict tests/fuzz/corpus-index \
	tests/fuzz/corpus-proto tests/fuzz/corpus-gitparse tests/fuzz/corpus-decide \
	tests/fuzz/corpus-content \
	tests/fuzz/regress-proto tests/fuzz/regress-gitparse tests/fuzz/regress-decide

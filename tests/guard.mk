# SPDX-License-Identifier: MIT
# tests/guard.mk: end-to-end tests of gitguard through `agentfs mount`:
# ordinary git keeps working in a writable mount (guard-git.sh), and every
# way of planting code that git runs later is refused (guard-attack.sh, with
# its attacker helper guard-tryop).  Each needs root and /dev/fuse and skips
# (exit 77) without them.
check_PROGRAMS += tests/guard-tryop
tests_guard_tryop_SOURCES = tests/guard-tryop.c
tests_guard_tryop_LDADD = $(PTHREAD_LIBS)

GUARD_TESTS = \
	tests/guard-git.sh \
	tests/guard-attack.sh \
	tests/guard-layout.sh \
	tests/guard-reference.sh \
	tests/guard-index.sh \
	tests/guard-strategy.sh \
	tests/guard-todo.sh \
	tests/guard-hooklink.sh \
	tests/guard-lock.sh \
	tests/guard-index-hooks.sh \
	tests/guard-host-init.sh \
	tests/guard-audit.sh \
	tests/guard-home.sh \
	tests/guard-stamp.sh \
	tests/guard-refs.sh \
	tests/guard-optfile.sh \
	tests/guard-names.sh \
	tests/guard-gitlink.sh \
	tests/guard-index-chain.sh \
	tests/guard-rerere.sh \
	tests/guard-midx.sh \
	tests/guard-prompt.sh \
	tests/guard-mergetool.sh \
	tests/guard-matrix.sh
TESTS += $(GUARD_TESTS)
EXTRA_DIST += $(GUARD_TESTS) tests/guard-lib.sh tests/guard-forge.py tests/guard-workflows.sh

# SPDX-License-Identifier: MIT
# tests/exec.mk: the `agentfs exec` tests: bubblewrap sandboxes run over a
# private agentfsd's mounts.  They need root, /dev/fuse and bwrap (they skip,
# exit 77, without them), python3 for the terminal and network parts, and
# tests/daemon-client and tests/daemon-lib.sh from tests/daemon.mk.
EXEC_TESTS = \
	tests/exec-basic.sh \
	tests/exec-git.sh \
	tests/exec-status.sh \
	tests/exec-tty.sh \
	tests/exec-modes.sh \
	tests/exec-user.sh \
	tests/exec-sockets.sh \
	tests/exec-lost.sh \
	tests/exec-force.sh \
	tests/exec-unsure.sh \
	tests/exec-keys.sh \
	tests/exec-operator.sh \
	tests/exec-linkedwt.sh \
	tests/exec-cgroup.sh \
	tests/exec-rootlink.sh \
	tests/exec-cgsweep.sh \
	tests/exec-walks.sh
TESTS += $(EXEC_TESTS)
EXTRA_DIST += tests/exec-lib.sh $(EXEC_TESTS)

# The kernel keyring calls of exec-keys.sh (keyutils is not a dependency).
check_PROGRAMS += tests/keyring
tests_keyring_SOURCES = tests/keyring.c

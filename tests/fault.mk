# SPDX-License-Identifier: MIT
# tests/fault.mk: fault-injection tests for agentfsd and agentfs mount
# (SIGKILL mid-stream, hostile client floods, descriptor exhaustion, a full
# disk, valgrind on the daemon).  Each needs root and /dev/fuse and skips
# (exit 77) without them or without the tools it uses (mkfs.ext4, loop
# devices, valgrind, prlimit).  fault-client holds the misbehaving clients.
check_PROGRAMS += tests/fault-client
tests_fault_client_SOURCES = tests/fault-client.c tests/sockclient.c tests/sockclient.h

FAULT_TESTS = \
	tests/fault-kill.sh \
	tests/fault-flood.sh \
	tests/fault-fds.sh \
	tests/fault-errpaths.sh \
	tests/fault-detach.sh \
	tests/fault-enospc.sh \
	tests/fault-valgrind.sh
TESTS += $(FAULT_TESTS)
EXTRA_DIST += $(FAULT_TESTS)

# SPDX-License-Identifier: MIT
# tests/daemon.mk: the agentfsd tests (the daemon, its protocol, bots'
# authority, restarts and hostile clients).  Each needs root and /dev/fuse
# and skips (exit 77) without them.  daemon-client is their raw socket and
# JSON helper, so they need neither python nor jq; it shares tests/sockclient.c
# (connect, send, read a reply line) with tests/fault-client.
check_PROGRAMS += tests/daemon-client
tests_daemon_client_SOURCES = tests/daemon-client.c tests/sockclient.c tests/sockclient.h
tests_daemon_client_CFLAGS = $(AM_CFLAGS) $(CJSON_CFLAGS)
tests_daemon_client_LDADD = $(CJSON_LIBS)

# restart-client: a bot's work, held files, mount ids and a stand-in for
# systemd's notify socket and fd store, around restarts (daemon-handover.sh)
check_PROGRAMS += tests/restart-client
tests_restart_client_SOURCES = tests/restart-client.c

DAEMON_TESTS = \
	tests/daemon-basic.sh \
	tests/daemon-authority.sh \
	tests/daemon-restart.sh \
	tests/daemon-hostile.sh \
	tests/daemon-race.sh \
	tests/daemon-fifo.sh \
	tests/daemon-shares.sh \
	tests/daemon-floods.sh \
	tests/daemon-state.sh \
	tests/daemon-jobs.sh \
	tests/daemon-events.sh \
	tests/daemon-changes.sh \
	tests/daemon-progress.sh \
	tests/cli-conv.sh \
	tests/daemon-operators.sh \
	tests/daemon-roots.sh \
	tests/daemon-excl.sh \
	tests/cli-gone.sh \
	tests/cli-escape.sh \
	tests/daemon-log.sh \
	tests/daemon-handover.sh \
	tests/daemon-handover-uring.sh \
	tests/daemon-keeper.sh \
	tests/daemon-upgrade.sh \
	tests/daemon-systemd.sh
TESTS += $(DAEMON_TESTS)
EXTRA_DIST += tests/daemon-lib.sh tests/handover-lib.sh $(DAEMON_TESTS)

# make install into a DESTDIR, the unit's ExecStart line, the completion.
TESTS += tests/install.sh
EXTRA_DIST += tests/install.sh

# The unit's hardening: its systemd-analyze score, and agentfsd's system calls
# against its filter.
TESTS += tests/service.sh
EXTRA_DIST += tests/service.sh

# The README's quick start: .ci/demo end to end on a private daemon.
TESTS += tests/demo.sh
EXTRA_DIST += tests/demo.sh

# Fail-closed checks under fault injection: tests/fault-inject.so (an
# LD_PRELOAD library) fails setgroups or one allocation of agentfsd's own.
# Built without the sanitizers: it is preloaded before them.
check_PROGRAMS += tests/fault-inject.so
tests_fault_inject_so_SOURCES = tests/fault-inject.c
tests_fault_inject_so_CFLAGS = $(WARN_CFLAGS) -fPIC
tests_fault_inject_so_LDFLAGS = -shared
tests_fault_inject_so_LDADD = -ldl
TESTS += tests/daemon-failclosed.sh tests/daemon-gitroots.sh tests/daemon-view.sh
EXTRA_DIST += tests/daemon-failclosed.sh tests/daemon-gitroots.sh tests/daemon-view.sh

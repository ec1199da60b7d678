# src: agentfs (the CLI) and agentfsd (the daemon).
noinst_LIBRARIES += src/libagentfs-common.a
src_libagentfs_common_a_SOURCES = src/agentfs.h src/util.c
src_libagentfs_common_a_CFLAGS = $(AM_CFLAGS) $(CJSON_CFLAGS)

bin_PROGRAMS += src/agentfs
src_agentfs_SOURCES = src/agentfs.c src/cmd-mount.c src/client.c src/cmd-exec.c \
	src/cmd-audit.c src/cmd-log.c
src_agentfs_CFLAGS = $(AM_CFLAGS) $(FUSE_CFLAGS) $(CJSON_CFLAGS)
src_agentfs_LDADD = src/libagentfs-common.a fusefs/libfusefs.a gitguard/libgitguard.a \
	$(FUSE_LIBS) $(CJSON_LIBS) $(GIT2_LIBS) -lutil

sbin_PROGRAMS += src/agentfsd
src_agentfsd_SOURCES = src/agentfsd.c src/server.c src/proto.c src/bots.c src/state.c \
	src/events.c src/changes.c
src_agentfsd_CFLAGS = $(AM_CFLAGS) $(FUSE_CFLAGS) $(CJSON_CFLAGS) $(EVENT_CFLAGS)
src_agentfsd_LDADD = src/libagentfs-common.a fusefs/libfusefs.a gitguard/libgitguard.a \
	$(FUSE_LIBS) $(CJSON_LIBS) $(EVENT_LIBS) $(GIT2_LIBS)

# src: agentfs (the CLI) and, later, agentfsd.
bin_PROGRAMS += src/agentfs
src_agentfs_SOURCES = src/agentfs.h src/agentfs.c src/cmd-mount.c
src_agentfs_CFLAGS = $(AM_CFLAGS) $(FUSE_CFLAGS)
src_agentfs_LDADD = fusefs/libfusefs.a $(FUSE_LIBS)

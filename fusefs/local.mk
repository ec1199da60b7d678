# SPDX-License-Identifier: MIT
# fusefs: the libfuse3 low-level passthrough (static library, one header).
noinst_LIBRARIES += fusefs/libfusefs.a
fusefs_libfusefs_a_SOURCES = \
	fusefs/fusefs.h fusefs/fs-int.h \
	fusefs/decide.c fusefs/fs.c fusefs/inode.c fusefs/mount.c fusefs/ops.c \
	fusefs/policy.c fusefs/seal.c fusefs/wire.c
fusefs_libfusefs_a_SOURCES += fusefs/ids.c
fusefs_libfusefs_a_CFLAGS = $(AM_CFLAGS) $(FUSE_CFLAGS)

# SPDX-License-Identifier: MIT
# fusefs: the libfuse3 low-level passthrough (static library, one header).
noinst_LIBRARIES += fusefs/libfusefs.a
fusefs_libfusefs_a_SOURCES = \
	fusefs/fusefs.h fusefs/fs-int.h fusefs/table.h fusefs/table-rec.h fusefs/uring.h \
	fusefs/backing.c fusefs/closer.c fusefs/decide.c fusefs/excl.c fusefs/fs.c fusefs/ids.c fusefs/inode.c fusefs/lock.c \
	fusefs/mount.c fusefs/mount-kernel.c fusefs/mount-opts.c fusefs/mount-ro.c fusefs/notify.c \
	fusefs/ops.h fusefs/ops.c fusefs/ops-dir.c fusefs/ops-file.c fusefs/ops-lock.c \
	fusefs/ops-name.c fusefs/ops-xattr.c \
	fusefs/policy.c fusefs/reader.c fusefs/seal.c fusefs/gitlock.c fusefs/share.c fusefs/table.c fusefs/noderec.c fusefs/keep.c fusefs/restore.c fusefs/journal.c fusefs/uring.c fusefs/uring-keep.c
# libfuse before 3.17 only: passthrough on the wire (configure's probe)
if FUSE_WIRE
fusefs_libfusefs_a_SOURCES += fusefs/wire.c
endif
fusefs_libfusefs_a_CFLAGS = $(AM_CFLAGS) $(FUSE_CFLAGS)

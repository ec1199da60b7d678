/*
 * The one decision every write-ish operation goes through. It reads only
 * the classes cached on inodes: no path walk, no syscall.
 */
#include "fusefs/fs-int.h"

#include <errno.h>
#include <stdlib.h>

static const char *op_names[] = {
	[OP_WRITE] = "write", [OP_ATTR] = "chmod/chown", [OP_XATTR] = "xattr",
	[OP_CREATE] = "create", [OP_LINK] = "link", [OP_REMOVE] = "remove",
	[OP_RENAME] = "rename",
};

unsigned policy_classify(struct fs_mount *m, struct inode *parent, const struct stat *st)
{
	size_t i;

	if (parent != NULL && (parent->cls & CLS_RO_TREE))
		return CLS_RO_TREE;
	for (i = 0; i < m->n_ro; i++)
		if (m->ro_dev[i] == st->st_dev && m->ro_ino[i] == st->st_ino)
			return CLS_RO_TREE;
	return 0;
}

static int refuse(struct fs_mount *m, enum fs_op op, struct inode *ino, struct inode *parent,
		  const char *name, const char *why)
{
	char *path = inode_path(m, name != NULL ? parent : ino, name);

	fs_log(m->fs, FS_LOG_INFO, "%s: refused %s of %s: %s", m->mountpoint, op_names[op],
	       path != NULL ? path : "?", why);
	free(path);
	return -EROFS;
}

/*
 * ino: the existing entry acted on (may be NULL for a create); parent/name:
 * the name made, removed or renamed from; parent2/name2: a rename's or
 * link's destination.
 */
int policy_check(struct fs_mount *m, enum fs_op op, struct inode *ino, struct inode *parent,
		 const char *name, struct inode *parent2, const char *name2)
{
	if (atomic_load_explicit(&m->readonly, memory_order_relaxed))
		return refuse(m, op, ino, parent, name, "read-only mount");
	if (ino != NULL && (ino->cls & CLS_RO_TREE))
		return refuse(m, op, ino, parent, name, "read-only path");
	if (parent != NULL && (parent->cls & CLS_RO_TREE))
		return refuse(m, op, ino, parent, name, "read-only path");
	if (parent2 != NULL && (parent2->cls & CLS_RO_TREE))
		return refuse(m, op, NULL, parent2, name2, "read-only path");
	return 0;
}

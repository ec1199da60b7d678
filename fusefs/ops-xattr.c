/* SPDX-License-Identifier: MIT */
/* Extended attributes: setxattr, removexattr, getxattr, listxattr. */
#include "fusefs/fs-int.h"
#include "fusefs/ops.h"

#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

static bool xattr_privileged(const char *name)
{
	return strncmp(name, "security.", 9) == 0;
}

/*
 * A POSIX ACL is a chmod by other means: the access ACL rewrites the mode's
 * bits and may grant write to named users and groups, a folder's default
 * ACL does the same for everything made in it later.  Setting one is judged
 * as a chmod to the bits it grants (H1 refuses one that adds a write bit on
 * a home, ~/.config and the folders above, G3 one that opens a git folder's
 * file to others, and a default ACL that gives others write anywhere: a
 * git folder made there later would have it; the RO rules everywhere they
 * refuse a chmod).
 */
static bool xattr_is_acl(const char *name)
{
	return strcmp(name, "system.posix_acl_access") == 0 ||
	       strcmp(name, "system.posix_acl_default") == 0;
}

#define ACL_XATTR_VERSION 2 /* the kernel's posix_acl_xattr header */
#define ACL_USER_OBJ 0x01
#define ACL_GROUP_OBJ 0x04
#define ACL_OTHER 0x20

/*
 * The permission bits ACL (SIZE bytes, as setxattr carries it) grants: a
 * minimal one (owner, group, others, once each: what `cp -p` and `sed -i`
 * copy from a file with no ACL) is the mode it stands for; anything else
 * (named users or groups, a mask, a form not understood) is taken as every
 * bit, as if it granted write to all.
 */
static mode_t acl_mode(const char *acl, size_t size)
{
	uint32_t version;
	uint16_t tag, perm;
	mode_t mode = 0;
	unsigned seen = 0, bit;
	size_t k;

	if (size != 4 + 3 * 8)
		return 0777;
	memcpy(&version, acl, 4);
	if (le32toh(version) != ACL_XATTR_VERSION)
		return 0777;
	for (k = 0; k < 3; k++) {
		memcpy(&tag, acl + 4 + 8 * k, 2);
		memcpy(&perm, acl + 4 + 8 * k + 2, 2);
		tag = le16toh(tag);
		perm = le16toh(perm);
		if (perm > 7)
			return 0777;
		bit = tag == ACL_USER_OBJ ? 6 : tag == ACL_GROUP_OBJ ? 3 : tag == ACL_OTHER ? 0 : 9;
		if (bit == 9 || (seen & (1u << bit)))
			return 0777;
		seen |= 1u << bit;
		mode |= (mode_t)perm << bit;
	}
	return mode;
}

/*
 * xattrs go through /proc/self/fd/N, which reaches the inode itself. There
 * is no race-free way to do that for a symlink, so those get ENOTSUP.
 */
static int xattr_fd(fuse_req_t req, fuse_ino_t ino, struct inode **ip, char *path)
{
	struct fs_mount *m = req_mount(req);
	struct inode *i = ino_of(m, ino);
	int fd;

	*ip = i;
	if (S_ISLNK(i->type))
		return -ENOTSUP;
	fd = inode_fd_get(m, i);
	if (fd >= 0)
		fsop_proc_path(path, fd);
	return fd;
}

/* setxattr and removexattr: a write of the inode, then the change itself. */
static void xattr_change(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			 size_t size, int flags)
{
	struct fs_mount *m = req_mount(req);
	char path[PROC_FD_MAX];
	struct inode *i;
	int fd, r;

	/*
	 * Removing security.capability lowers privilege, and the kernel does it
	 * itself when a file with one is written: it stays allowed.
	 */
	if (xattr_privileged(name) && (value != NULL || strcmp(name, "security.capability") != 0))
		r = -EPERM;
	else if (value != NULL && xattr_is_acl(name)) {
		struct preq pr = PREQ_INODE(req, GUARD_OP_CHMOD, ino_of(m, ino),
					    (ino_of(m, ino)->type & S_IFMT) | acl_mode(value, size));

		pr.g.default_acl = strcmp(name, "system.posix_acl_default") == 0;
		r = policy_check(m, &pr);
	}
	else
		r = policy_check(
			m, &PREQ_INODE(req, GUARD_OP_WRITE, ino_of(m, ino), ino_of(m, ino)->type));
	if (r == 0 && (fd = xattr_fd(req, ino, &i, path)) < 0) {
		r = fd;
	} else if (r == 0) {
		if (value != NULL)
			r = setxattr(path, name, value, size, flags);
		else
			r = removexattr(path, name);
		r = r == 0 ? 0 : -errno;
		inode_fd_put(m, i);
		if (r == 0)
			fs_invalidate(m, i, NULL, NULL);
	}
	fuse_reply_err(req, -r);
}

void fsop_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size,
		   int flags)
{
	xattr_change(req, ino, name, value != NULL ? value : "", size, flags);
}

void fsop_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	xattr_change(req, ino, name, NULL, 0, 0);
}

static void xattr_reply(fuse_req_t req, ssize_t n, const char *buf, size_t size)
{
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
}

/*
 * getxattr (name set) and listxattr (name NULL). A symlink's xattrs cannot be
 * reached race-free: it has none as far as the mount tells.
 */
static void xattr_query(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct fs_mount *m = req_mount(req);
	char path[PROC_FD_MAX], *buf = NULL;
	struct inode *i;
	ssize_t n;
	int fd;

	fd = xattr_fd(req, ino, &i, path);
	if (fd == -ENOTSUP) {
		if (name != NULL)
			fuse_reply_err(req, ENODATA);
		else
			xattr_reply(req, 0, "", size);
		return;
	}
	if (fd < 0 || (size > 0 && (buf = malloc(size)) == NULL)) {
		if (fd >= 0)
			inode_fd_put(m, i);
		fuse_reply_err(req, fd < 0 ? -fd : ENOMEM);
		return;
	}
	n = name != NULL ? getxattr(path, name, buf, size) : listxattr(path, buf, size);
	if (n < 0)
		n = -errno;
	inode_fd_put(m, i);
	xattr_reply(req, n, buf, size);
	free(buf);
}

void fsop_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	xattr_query(req, ino, name, size);
}

void fsop_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	xattr_query(req, ino, NULL, size);
}

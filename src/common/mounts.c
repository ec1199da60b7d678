/* SPDX-License-Identifier: MIT */
/*
 * The mount a descriptor is on, found by its mount id (statx) in
 * /proc/self/mountinfo (fusefs's fs_mountinfo_each), never by a path a
 * caller could have swapped: agentfsd's roots and agentfs-csi's targets.
 * A file of its own in libagentfs-common.a, so the programs that do not
 * call it (tests linking the library without fusefs/) do not link it.
 */
#include "src/common/agentfs.h"
#include "fusefs/fusefs.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

struct mounts_query {
	uint64_t id;
	char fstype[64];
};

static int mounts_match(void *arg, uint64_t id, const char *mp, const char *fstype)
{
	struct mounts_query *q = arg;

	if (id != q->id)
		return 0;
	snprintf(q->fstype, sizeof q->fstype, "%s", fstype);
	return 1;
}

void mounts_fstype(int fd, char *out, size_t len)
{
	struct mounts_query q = {0, ""};
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_MNT_ID, &stx) == 0 &&
	    (stx.stx_mask & STATX_MNT_ID)) {
		q.id = stx.stx_mnt_id;
		fs_mountinfo_each(mounts_match, &q);
	}
	snprintf(out, len, "%s", q.fstype);
}

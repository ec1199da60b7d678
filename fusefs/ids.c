/* SPDX-License-Identifier: MIT */
/*
 * This thread's filesystem identity: the one place that switches it, for
 * the workers serving a caller (fs_as_caller, fs_as_root) and for agentfsd's
 * access checks on behalf of an operator. setfsuid and setfsgid are per
 * thread; glibc's setgroups() changes every thread, so the raw syscall is
 * used, which changes only this one.
 */
#include "fusefs/fusefs.h"

#include <errno.h>
#include <unistd.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>

/*
 * Take uid, gid and the ngroups groups (ngroups < 0: keep this thread's
 * groups) as this thread's filesystem identity; root is uid 0, gid 0 and
 * root's groups. Fails closed: -errno (-EPERM if an id did not take) when
 * any step failed, and the thread may then be part-way between the two, so
 * the caller refuses what it was about to do and switches back to root.
 */
int fs_set_ids(uid_t uid, gid_t gid, const gid_t *groups, int ngroups)
{
	if (ngroups >= 0 && syscall(SYS_setgroups, (size_t)ngroups, groups) != 0)
		return -errno;
	setfsgid(gid);
	setfsuid(uid);
	/* setfs*id answer the previous id: asking again shows whether it took */
	if ((gid_t)setfsgid((gid_t)-1) != gid || (uid_t)setfsuid((uid_t)-1) != uid)
		return -EPERM;
	return 0;
}

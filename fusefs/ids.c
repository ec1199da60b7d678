/* SPDX-License-Identifier: MIT */
/*
 * Identity switches, the one place that makes them: this thread's
 * filesystem identity for the workers serving a caller (fs_as_caller,
 * fs_as_root) and for agentfsd's access checks on behalf of an operator
 * (fs_set_ids), and a whole identity for good, for the processes of
 * `agentfs exec` that run or act as a bot's user (fs_become). setfsuid and
 * setfsgid are per thread; glibc's setgroups() and setres*id() change every
 * thread, so the raw syscalls are used, which change only this one.
 */
#include "fusefs/fusefs.h"

#include <errno.h>
#include <stdlib.h>
#include <stdbool.h>
#include <unistd.h>
#include <linux/capability.h>
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

/*
 * Become uid, gid and the ngroups groups for good, from root: real,
 * effective, saved and filesystem ids. For a thread of its own or a process
 * with one thread (the raw calls change only the calling thread). Fails
 * closed: -errno, or -EPERM if an id did not take or root could be taken
 * back; the caller must then end without running anything. A uid change
 * from root clears every capability (no SECBIT_KEEP_CAPS is ever set here).
 */
int fs_become(uid_t uid, gid_t gid, const gid_t *groups, int ngroups)
{
	uid_t r, e, s;
	gid_t rg, eg, sg;
	bool ok;

	if (syscall(SYS_setgroups, (size_t)ngroups, groups) != 0 ||
	    syscall(SYS_setresgid, gid, gid, gid) != 0 || syscall(SYS_setresuid, uid, uid, uid) != 0)
		return -errno;
	ok = syscall(SYS_getresuid, &r, &e, &s) == 0 && r == uid && e == uid && s == uid &&
	     syscall(SYS_getresgid, &rg, &eg, &sg) == 0 && rg == gid && eg == gid && sg == gid &&
	     (uid_t)setfsuid((uid_t)-1) == uid && (gid_t)setfsgid((gid_t)-1) == gid;
	/* the way back must be shut: a uid that can take root again did not drop it */
	if (ok && uid != 0 && syscall(SYS_setresuid, 0, 0, 0) == 0)
		ok = false;
	return ok ? 0 : -EPERM;
}

/*
 * A write made for a caller who is not root must not keep what only root's
 * writes keep: CAP_FSETID (a write by anyone else clears setuid, and
 * setgid with group execute) and CAP_SYS_RESOURCE (the blocks a file system
 * keeps for root, to a writer with either). Both leave this thread's
 * effective set until fs_write_caps_restore; the permitted set keeps them.
 * The writes also take the caller's ids (fs_write_begin), as ext4 gives
 * the reserve to the root uid too, and a setgid file keeps its bit for a
 * writer in its group. Without capget/capset nothing changes.
 */
#define WRITE_CAPS ((1u << CAP_FSETID) | (1u << CAP_SYS_RESOURCE))

static int caps_set(uint32_t clear, uint32_t raise, struct fs_caps *saved)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];

	saved->dropped = false;
	if (syscall(SYS_capget, &h, d) != 0)
		return -errno;
	saved->effective = d[0].effective;
	d[0].effective = (d[0].effective & ~clear) | (raise & d[0].permitted);
	if (d[0].effective == saved->effective)
		return 0;
	if (syscall(SYS_capset, &h, d) != 0)
		return -errno;
	saved->dropped = true;
	return 0;
}

/*
 * A thread serving requests (fs.c, reader.c, uring.c) drops CAP_FSETID
 * from its effective set for good: whatever it writes for a caller, and
 * the passthrough backing files it makes (the kernel writes through one
 * with the credentials it was made with), then clear setuid as a user's
 * write does, at no cost a request. do_setattr takes it back for a chmod or
 * chown made on a caller's behalf (fs_fsetid_raise).
 */
void fs_thread_no_fsetid(void)
{
	struct fs_caps saved;

	caps_set(1u << CAP_FSETID, 0, &saved);
}

void fs_fsetid_raise(struct fs_caps *saved)
{
	caps_set(0, 1u << CAP_FSETID, saved);
}

bool fs_write_caps_drop(struct fs_caps *saved)
{
	return caps_set(WRITE_CAPS, 0, saved) == 0 && saved->dropped;
}

void fs_write_caps_restore(const struct fs_caps *saved)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];

	if (!saved->dropped || syscall(SYS_capget, &h, d) != 0)
		return;
	d[0].effective = saved->effective;
	if (syscall(SYS_capset, &h, d) != 0)
		abort(); /* a worker without root's writes would serve root wrongly: stop */
}

/* SPDX-License-Identifier: MIT */
/*
 * agentfs-csi's files between themselves (csi.h is what main.cc sees):
 *
 *   target.c   a target folder: open it, see what is mounted there and
 *              whether it is ours, clear it; unpublish; the sweep at start
 *   publish.c  NodePublishVolume: the volume's attributes, agentfsd's plan,
 *              and the mount
 *
 * The threat, argued where each check is made: the pod's author writes the
 * volume's attributes (which bot, which root), and whoever can write under
 * kubelet's folder (a pod with a hostPath, a compromised runtime) may plant
 * symbolic links on the way to a target. So
 *   - who may have a bot is agentfsd's decision (exec_plan with the pod
 *     kubelet names), from the bot's record, never from an attribute;
 *   - the pod's identity must come from kubelet: its uid must be the one in
 *     the target's path, which kubelet makes and a pod's author cannot know
 *     before the pod exists (a CSIDriver without podInfoOnMount, where the
 *     author could write those keys, publishes nothing);
 *   - what is bound is only what agentfsd mounted (a fuse.agentfs mount's
 *     root at the plan's mount point) or the bot's socket, never a path an
 *     attribute names;
 *   - the target is reached from --kubelet-dir by openat2 without following
 *     any symbolic link (gg_open_nofollow, beneath), and mounted onto that
 *     descriptor (move_mount): no path is walked twice;
 *   - a mount is built detached and attached last, already read-only when it
 *     should be: a failed publish leaves nothing mounted.
 */
#ifndef AGENTFS_CSI_INT_H
#define AGENTFS_CSI_INT_H

#include "csi/csi.h"

#include <limits.h>
#include <stdint.h>

/* A target: kubelet's folder for one volume of one pod. */
struct target {
	char rel_parent[PATH_MAX]; /* pods/UID/volumes/kubernetes.io~csi/NAME, from kubelet_dir */
	char uid[128];		   /* the pod's uid, from the path */
	int kfd, pfd;		   /* kubelet_dir and rel_parent, O_PATH; -1 when not open */
};

/* target.c */
int csi_say(char *msg, size_t len, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
bool target_uid_ok(const char *s);
int target_open(const struct csi_conf *c, const char *path, struct target *t, char *msg,
		size_t len);
void target_close(struct target *t);
bool target_mnt_id(int fd, uint64_t *id, bool *root);
bool target_is_mount(int fd);
bool target_ours(int tfd);
int target_clear(struct target *t, char *msg, size_t len);

#endif

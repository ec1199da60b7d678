/* SPDX-License-Identifier: MIT */
/*
 * A target: kubelet's folder for one CSI volume of one pod, reached from
 * --kubelet-dir without following any symbolic link; what is mounted
 * there, whether it is ours, and taking it away (NodeUnpublishVolume, and
 * the sweep at start of targets whose pod is gone). csi-int.h says why.
 */
#include "csi/csi-int.h"
#include "fusefs/fusefs.h"
#include "gitguard/ggutil.h"
#include "src/common/agentfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

int csi_say(char *msg, size_t len, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, len, fmt, ap);
	va_end(ap);
	return code;
}

/* A pod uid as kubelet writes it in paths: a UUID; no '/', no "..". */
bool target_uid_ok(const char *s)
{
	size_t n = strlen(s), i;

	if (n == 0 || n >= sizeof(((struct target *)0)->uid))
		return false;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '_'))
			return false;
	return true;
}

void target_close(struct target *t)
{
	if (t->pfd >= 0)
		close(t->pfd);
	if (t->kfd >= 0)
		close(t->kfd);
	t->pfd = t->kfd = -1;
}

/*
 * Split target_path into kubelet's shape for a pod's CSI volume,
 * KUBELET/pods/UID/volumes/kubernetes.io~csi/NAME/mount, and open the
 * folder that holds it without following a symbolic link anywhere.
 */
int target_open(const struct csi_conf *c, const char *path, struct target *t, char *msg,
		       size_t len)
{
	cleanup_free char *norm = NULL;
	const char *rel, *comp[7];
	char buf[PATH_MAX], *save = NULL, *s;
	int n = 0, e;

	t->kfd = t->pfd = -1;
	if (path_normalise(path, &norm) != 0 || strcmp(norm, path) != 0 ||
	    !path_within(norm, c->kubelet_dir) || strcmp(norm, c->kubelet_dir) == 0)
		return csi_say(msg, len, CSI_INVALID_ARGUMENT,
			   "target %.256s is not a normalised path under the kubelet folder %s", path,
			   c->kubelet_dir);
	rel = norm + strlen(c->kubelet_dir) + (strcmp(c->kubelet_dir, "/") != 0);
	snprintf(buf, sizeof buf, "%s", rel);
	for (s = strtok_r(buf, "/", &save); s != NULL && n < 7; s = strtok_r(NULL, "/", &save))
		comp[n++] = s;
	if (n != 6 || strcmp(comp[0], "pods") != 0 || !target_uid_ok(comp[1]) ||
	    strcmp(comp[2], "volumes") != 0 || strcmp(comp[3], "kubernetes.io~csi") != 0 ||
	    strcmp(comp[5], "mount") != 0)
		return csi_say(msg, len, CSI_INVALID_ARGUMENT,
			   "target %.256s is not a pod's CSI volume: "
			   "%s/pods/UID/volumes/kubernetes.io~csi/NAME/mount",
			   path, c->kubelet_dir);
	snprintf(t->uid, sizeof t->uid, "%s", comp[1]);
	snprintf(t->rel_parent, sizeof t->rel_parent, "pods/%s/volumes/kubernetes.io~csi/%s",
		 comp[1], comp[4]);
	t->kfd = gg_open_nofollow(AT_FDCWD, c->kubelet_dir, O_PATH | O_DIRECTORY, false);
	if (t->kfd >= 0)
		t->pfd = gg_open_nofollow(t->kfd, t->rel_parent, O_PATH | O_DIRECTORY, true);
	if (t->kfd < 0 || t->pfd < 0) {
		e = errno;
		target_close(t);
		return csi_say(msg, len, e == ENOENT ? CSI_NOT_FOUND : CSI_INVALID_ARGUMENT,
			   "%s/%s: %s", c->kubelet_dir, t->rel_parent,
			   e == ELOOP ? "a component is a symbolic link: refused"
				      : strerror(e));
	}
	return CSI_OK;
}

bool target_mnt_id(int fd, uint64_t *id, bool *root)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_MNT_ID, &stx) != 0 ||
	    !(stx.stx_mask & STATX_MNT_ID))
		return false;
	*id = stx.stx_mnt_id;
	if (root != NULL)
		*root = (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
			(stx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
	return true;
}

/* Is fd a mount's root: is something mounted at the target? */
bool target_is_mount(int fd)
{
	uint64_t id;
	bool root = false;

	return target_mnt_id(fd, &id, &root) && root;
}

/*
 * Is the mount at the target one of ours: a bind of a bot's root
 * (fuse.agentfs; nothing else binds agentfs mounts into kubelet's
 * volumes) or a socket volume (a tmpfs holding agent.sock, itself a
 * mount of the bot's socket)?
 */
bool target_ours(int tfd)
{
	char fstype[64];
	int sfd;
	bool r;

	mounts_fstype(tfd, fstype, sizeof fstype);
	if (strcmp(fstype, "fuse.agentfs") == 0)
		return true;
	if (strcmp(fstype, "tmpfs") != 0)
		return false;
	sfd = openat(tfd, "agent.sock", O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (sfd < 0)
		return false;
	r = target_is_mount(sfd);
	close(sfd);
	return r;
}

/*
 * Unmount what is at the target, the top mount each time, while it is
 * ours, then remove the folder (the plugin made it). Lazy: a process
 * still inside keeps what it holds, and the target is free at once.
 */
int target_clear(struct target *t, char *msg, size_t len)
{
	char proc[64];
	int tfd, i;

	for (i = 0; i < 16; i++) {
		tfd = gg_open_nofollow(t->pfd, "mount", O_PATH | O_DIRECTORY, true);
		if (tfd < 0 && errno == ENOENT)
			return CSI_OK;
		if (tfd < 0)
			return csi_say(msg, len, CSI_INTERNAL, "%s/mount: %s", t->rel_parent,
				   strerror(errno));
		if (!target_is_mount(tfd))
			break;
		if (!target_ours(tfd)) {
			close(tfd);
			return csi_say(msg, len, CSI_FAILED_PRECONDITION,
				   "%s/mount holds a mount agentfs-csi did not make: left alone",
				   t->rel_parent);
		}
		snprintf(proc, sizeof proc, "/proc/self/fd/%d", tfd);
		if (umount2(proc, MNT_DETACH) != 0) {
			int e = errno;

			close(tfd);
			return csi_say(msg, len, CSI_INTERNAL, "unmounting %s/mount: %s",
				   t->rel_parent, strerror(e));
		}
		close(tfd);
	}
	if (i == 16) {
		close(tfd);
		return csi_say(msg, len, CSI_INTERNAL, "%s/mount: still mounted after 16 unmounts",
			   t->rel_parent);
	}
	close(tfd);
	if (unlinkat(t->pfd, "mount", AT_REMOVEDIR) != 0 && errno != ENOENT)
		log_msg(LOG_WARNING, "%s/mount is unmounted but stays: %s", t->rel_parent,
			strerror(errno));
	return CSI_OK;
}

int csi_unpublish(const struct csi_conf *c, const char *volume_id, const char *target, char *msg,
		  size_t len)
{
	struct target t;
	int r;

	if (volume_id == NULL || volume_id[0] == '\0')
		return csi_say(msg, len, CSI_INVALID_ARGUMENT, "volume_id is missing");
	if (target == NULL || target[0] == '\0')
		return csi_say(msg, len, CSI_INVALID_ARGUMENT, "target_path is missing");
	r = target_open(c, target, &t, msg, len);
	if (r == CSI_NOT_FOUND) /* nothing there: already unpublished */
		return csi_say(msg, len, CSI_OK, "not published");
	if (r != CSI_OK)
		return r;
	r = target_clear(&t, msg, len);
	target_close(&t);
	if (r == CSI_OK)
		log_msg(LOG_INFO, "unpublished %s (volume %s)", target, volume_id);
	return r;
}


struct sweep {
	const char *kubelet_dir;
	struct paths found; /* mount points under kubelet_dir that may be ours */
};

static int sweep_collect(void *arg, uint64_t id, const char *mp, const char *fstype)
{
	struct sweep *s = arg;

	if ((strcmp(fstype, "fuse.agentfs") == 0 || strcmp(fstype, "tmpfs") == 0) &&
	    path_within(mp, s->kubelet_dir) && !paths_contains(&s->found, mp))
		paths_add(&s->found, mp);
	return 0;
}

/* Does kubelet still keep the volume (its vol_data.json next to the target)? */
static bool kubelet_keeps(const struct target *t)
{
	int fd = gg_open_nofollow(t->pfd, "vol_data.json", O_PATH, true);

	if (fd >= 0) {
		close(fd);
		return true;
	}
	return errno != ENOENT;
}

/*
 * At start: drop the targets we published whose pod is gone. Ours: a
 * mount in our mount table at kubelet's shape for a CSI volume that
 * target_ours recognises. Gone: kubelet no longer keeps the volume's
 * vol_data.json beside it. kubelet writes that file before it asks to
 * publish and removes it only once the volume is torn down, so a mount
 * without it is one no kubelet will ever ask us to unpublish (its pod was
 * deleted while we could not answer, and kubelet's record went). One that
 * kubelet still keeps is left for kubelet's own NodeUnpublishVolume, which
 * it repeats until it succeeds. Answers how many were dropped.
 */
unsigned csi_sweep(const struct csi_conf *c)
{
	struct sweep s = {c->kubelet_dir, {NULL, 0}};
	char msg[512];
	unsigned dropped = 0;
	struct target t;
	size_t i;
	int tfd;

	fs_mountinfo_each(sweep_collect, &s);
	for (i = 0; i < s.found.n; i++) {
		const char *mp = s.found.v[i];

		if (target_open(c, mp, &t, msg, sizeof msg) != CSI_OK)
			continue;
		tfd = gg_open_nofollow(t.pfd, "mount", O_PATH | O_DIRECTORY, true);
		if (tfd >= 0 && target_is_mount(tfd) && target_ours(tfd) && !kubelet_keeps(&t)) {
			if (target_clear(&t, msg, sizeof msg) == CSI_OK) {
				log_msg(LOG_NOTICE, "dropped %s: its pod is gone (kubelet keeps no "
						    "vol_data.json for it)",
					mp);
				dropped++;
			} else {
				log_msg(LOG_WARNING, "cannot drop %s, whose pod is gone: %s", mp, msg);
			}
		}
		if (tfd >= 0)
			close(tfd);
		target_close(&t);
	}
	paths_free(&s.found);
	return dropped;
}

/* SPDX-License-Identifier: MIT */
/*
 * NodePublishVolume: check the volume's attributes, ask agentfsd for the
 * bot's plan for this pod (agentfsd decides whether the pod may have the
 * bot), then bind the root agentfsd mounted, or a folder holding the bot's
 * socket, at the target. csi-int.h argues the threat.
 */
#include "csi/csi-int.h"
#include "gitguard/ggutil.h"
#include "src/common/agentfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#define ATTR_PREFIX "csi.storage.k8s.io/"

/* A volume as its attributes describe it. */
struct vol {
	const char *bot, *ns, *sa, *pod_uid, *pod_name;
	unsigned root;
	bool socket, readonly;
};

static bool bool_attr(const char *v, bool *out)
{
	if (strcmp(v, "true") == 0 || strcmp(v, "false") == 0) {
		*out = v[0] == 't';
		return true;
	}
	return false;
}

/* The pod's own attribute: bot, root, socket or readonly. */
static int pod_attr(struct vol *v, const char *k, const char *val, char *msg, size_t len)
{
	char *end;
	unsigned long n;

	if (strcmp(k, "bot") == 0) {
		v->bot = val;
	} else if (strcmp(k, "root") == 0) {
		errno = 0;
		n = strtoul(val, &end, 10);
		if (val[0] < '0' || val[0] > '9' || *end != '\0' || errno != 0 || n > 999)
			return csi_say(msg, len, CSI_INVALID_ARGUMENT,
				   "volume attribute root must be a number from 0 (the bot's "
				   "folder) to 999, not \"%.64s\"",
				   val);
		v->root = (unsigned)n;
	} else if (strcmp(k, "socket") == 0 || strcmp(k, "readonly") == 0) {
		if (!bool_attr(val, k[0] == 's' ? &v->socket : &v->readonly))
			return csi_say(msg, len, CSI_INVALID_ARGUMENT,
				   "volume attribute %s must be \"true\" or \"false\", not \"%.64s\"",
				   k, val);
	} else {
		return csi_say(msg, len, CSI_INVALID_ARGUMENT,
			   "unknown volume attribute \"%.64s\": agentfs-csi takes bot, root, "
			   "socket and readonly",
			   k);
	}
	return CSI_OK;
}

/* volume_context: kubelet's keys and the pod author's. */
static int parse_attrs(const struct csi_publish_req *p, struct vol *v, char *msg, size_t len)
{
	static const char *const need[] = {"ephemeral", "pod.namespace", "serviceAccount.name",
					   "pod.uid", "pod.name"};
	const char *got[5] = {NULL, NULL, NULL, NULL, NULL};
	bool has_root = false;
	size_t i, k;
	int r;

	for (i = 0; i < p->nattrs; i++) {
		const char *key = p->attrs[i].key, *val = p->attrs[i].value;

		if (strncmp(key, ATTR_PREFIX, strlen(ATTR_PREFIX)) == 0) {
			/* kubelet's; others it may add (tokens) are not used */
			for (k = 0; k < 5; k++)
				if (strcmp(key + strlen(ATTR_PREFIX), need[k]) == 0)
					got[k] = val;
			continue;
		}
		has_root |= strcmp(key, "root") == 0;
		if ((r = pod_attr(v, key, val, msg, len)) != CSI_OK)
			return r;
	}
	if (got[0] == NULL || strcmp(got[0], "true") != 0)
		return csi_say(msg, len, CSI_INVALID_ARGUMENT,
			   "agentfs-csi serves only ephemeral inline volumes "
			   "(" ATTR_PREFIX "ephemeral is not \"true\"): use a csi: volume in the "
			   "pod, not a PersistentVolume");
	for (k = 1; k < 5; k++)
		if (got[k] == NULL || got[k][0] == '\0')
			return csi_say(msg, len, CSI_INVALID_ARGUMENT,
				   "no " ATTR_PREFIX "%s in the volume's context: the CSIDriver "
				   "object must have podInfoOnMount: true",
				   need[k]);
	v->ns = got[1];
	v->sa = got[2];
	v->pod_uid = got[3];
	v->pod_name = got[4];
	if (v->bot == NULL)
		return csi_say(msg, len, CSI_INVALID_ARGUMENT,
			   "volume attribute bot is missing: name the agentfs bot");
	if (!bot_name_ok(v->bot))
		return csi_say(msg, len, CSI_INVALID_ARGUMENT,
			   "volume attribute bot \"%.80s\" is not a bot name", v->bot);
	if (v->socket && has_root)
		return csi_say(msg, len, CSI_INVALID_ARGUMENT,
			   "volume attributes root and socket exclude each other: "
			   "a volume holds a root or the bot's socket");
	if (!target_uid_ok(v->pod_uid))
		return csi_say(msg, len, CSI_INVALID_ARGUMENT, "pod uid \"%.64s\" is malformed",
			   v->pod_uid);
	return CSI_OK;
}

/* Answer agentfsd's error as the CSI code kubelet acts on. */
static int plan_error(const cJSON *rep, const char *bot, char *msg, size_t len)
{
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(rep, "error");
	const char *code = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "code"));
	const char *m = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "message"));
	int r = CSI_INTERNAL;

	if (code == NULL)
		code = "?";
	if (strcmp(code, "not_found") == 0)
		r = CSI_NOT_FOUND;
	else if (strcmp(code, "forbidden") == 0)
		r = CSI_PERMISSION_DENIED;
	else if (strcmp(code, "busy") == 0)
		r = CSI_UNAVAILABLE;
	else if (strcmp(code, "mount_lost") == 0 || strcmp(code, "mount_failed") == 0)
		r = CSI_FAILED_PRECONDITION;
	else if (strncmp(code, "bad_", 4) == 0)
		r = CSI_INVALID_ARGUMENT;
	return csi_say(msg, len, r, "agentfsd, for bot %s: %s (%s)", bot, m != NULL ? m : "?",
		       code);
}

/* agentfsd's plan for the bot, given only if the pod is one of the bot's pods. */
static int ask_plan(const struct csi_conf *c, const struct vol *v, cJSON **plan, char *msg,
		    size_t len)
{
	cJSON *req, *rep = NULL;
	char pod[320];
	int r;

	*plan = NULL;
	snprintf(pod, sizeof pod, "%s/%s", v->ns, v->sa);
	if (!pod_name_ok(pod))
		return csi_say(msg, len, CSI_INVALID_ARGUMENT,
			       "the pod's namespace and service account, %.200s, are malformed", pod);
	req = cJSON_CreateObject();
	if (req == NULL || cJSON_AddStringToObject(req, "op", "exec_plan") == NULL ||
	    cJSON_AddStringToObject(req, "name", v->bot) == NULL ||
	    cJSON_AddStringToObject(req, "pod", pod) == NULL) {
		cJSON_Delete(req);
		return csi_say(msg, len, CSI_INTERNAL, "out of memory");
	}
	r = csi_afsd_request(c, req, &rep, msg, len);
	cJSON_Delete(req);
	if (r != CSI_OK)
		return r;
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "ok"))) {
		r = plan_error(rep, v->bot, msg, len);
		cJSON_Delete(rep);
		return r;
	}
	*plan = rep;
	return CSI_OK;
}

/*
 * What to bind, from the plan: the bot's socket, or the root-th of its
 * roots as agentfsd mounted it, opened without following links and
 * checked to be what the plan says (a socket; the root of a fuse.agentfs
 * mount: a root unmounted meanwhile leaves only agentfsd's empty folder,
 * which is never bound). *writable: whether the plan binds it writable.
 */
static int plan_source(const cJSON *plan, const struct vol *v, int *sfd, bool *writable,
		       char *msg, size_t len)
{
	const cJSON *binds = cJSON_GetObjectItemCaseSensitive(plan, "binds"), *b;
	const char *src;
	char fstype[64];
	struct stat st;
	int n = cJSON_GetArraySize(binds);

	*writable = false;
	if (v->socket) {
		src = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(plan, "socket"));
		if (src == NULL || src[0] == '\0')
			return csi_say(msg, len, CSI_FAILED_PRECONDITION, "bot %s has no socket",
				       v->bot);
		*sfd = gg_open_nofollow(AT_FDCWD, src, O_PATH, false);
		if (*sfd < 0 || fstat(*sfd, &st) != 0 || !S_ISSOCK(st.st_mode))
			goto bad;
		return CSI_OK;
	}
	if ((int)v->root >= n)
		return csi_say(msg, len, CSI_INVALID_ARGUMENT,
			       "bot %s has %d root%s (0 to %d): there is no root %u", v->bot, n,
			       n == 1 ? "" : "s", n - 1, v->root);
	b = cJSON_GetArrayItem(binds, (int)v->root);
	src = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b, "source"));
	*writable = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(b, "writable"));
	if (src == NULL)
		return csi_say(msg, len, CSI_INTERNAL, "agentfsd's plan has no source for root %u",
			       v->root);
	*sfd = gg_open_nofollow(AT_FDCWD, src, O_PATH | O_DIRECTORY, false);
	if (*sfd < 0)
		goto bad;
	mounts_fstype(*sfd, fstype, sizeof fstype);
	if (target_is_mount(*sfd) && strcmp(fstype, "fuse.agentfs") == 0)
		return CSI_OK;
	errno = ENXIO;
bad:
	if (*sfd >= 0)
		close(*sfd);
	*sfd = -1;
	return csi_say(msg, len, CSI_FAILED_PRECONDITION, "bot %s's %s %s: %s", v->bot,
		       v->socket ? "socket" : "mount", src,
		       errno == ENXIO ? "not mounted (see agentfs show)" : strerror(errno));
}

/* The target is mounted already: the same volume (OK) or another (ALREADY_EXISTS)? */
static int published_already(int tfd, int sfd, const struct vol *v, bool ro, char *msg,
			     size_t len)
{
	struct stat ts, ss;
	struct statvfs vs;
	char fstype[64];
	bool same;

	if (fstat(sfd, &ss) != 0)
		return csi_say(msg, len, CSI_INTERNAL, "stat: %s", strerror(errno));
	if (v->socket) {
		mounts_fstype(tfd, fstype, sizeof fstype);
		same = strcmp(fstype, "tmpfs") == 0 &&
		       fstatat(tfd, "agent.sock", &ts, AT_SYMLINK_NOFOLLOW) == 0;
	} else {
		same = fstat(tfd, &ts) == 0 && fstatvfs(tfd, &vs) == 0 &&
		       !!(vs.f_flag & ST_RDONLY) == ro;
	}
	if (same && ts.st_dev == ss.st_dev && ts.st_ino == ss.st_ino)
		return csi_say(msg, len, CSI_OK, "already published");
	return csi_say(msg, len, CSI_ALREADY_EXISTS,
		       "the target holds another volume, or this one %s: unpublish it first",
		       ro ? "writable" : "read-only");
}

/* Bind the root at sfd onto tfd: built detached, made read-only, attached last. */
static int bind_root(int sfd, int tfd, bool ro, char *msg, size_t len)
{
	struct mount_attr attr = {
		.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (ro ? MOUNT_ATTR_RDONLY : 0),
	};
	int tree = open_tree(sfd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH), e;

	if (tree < 0)
		return csi_say(msg, len, CSI_INTERNAL, "open_tree: %s", strerror(errno));
	if (mount_setattr(tree, "", AT_EMPTY_PATH, &attr, sizeof attr) != 0 ||
	    move_mount(tree, "", tfd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0) {
		e = errno;
		close(tree); /* never attached: closing it unmounts the clone */
		return csi_say(msg, len, CSI_INTERNAL, "binding the root: %s", strerror(e));
	}
	close(tree);
	return CSI_OK;
}

/* A small read-only tmpfs, detached, holding an empty agent.sock; -1 on error. */
static int socket_folder(void)
{
	int fsfd = fsopen("tmpfs", FSOPEN_CLOEXEC), mfd = -1, fd, e;

	if (fsfd < 0)
		return -1;
	if (fsconfig(fsfd, FSCONFIG_SET_STRING, "source", "agentfs-csi", 0) == 0 &&
	    fsconfig(fsfd, FSCONFIG_SET_STRING, "mode", "0755", 0) == 0 &&
	    fsconfig(fsfd, FSCONFIG_SET_STRING, "size", "16k", 0) == 0 &&
	    fsconfig(fsfd, FSCONFIG_SET_STRING, "nr_inodes", "4", 0) == 0 &&
	    fsconfig(fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0)
		mfd = fsmount(fsfd, FSMOUNT_CLOEXEC,
			      MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	e = errno;
	close(fsfd);
	if (mfd < 0) {
		errno = e;
		return -1;
	}
	fd = openat(mfd, "agent.sock", O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		e = errno;
		close(mfd);
		errno = e;
		return -1;
	}
	close(fd);
	return mfd;
}

/*
 * The socket volume: a tmpfs at the target holding the bot's socket bound
 * as agent.sock, then made read-only (the pod makes nothing there). A
 * mount cannot be made inside a detached one on every kernel we run on,
 * so the tmpfs is attached first, and taken away again if a later step
 * fails.
 */
static int bind_socket(int sfd, int tfd, char *msg, size_t len)
{
	struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY};
	int mfd = socket_folder(), tree = -1, ph = -1, e = 0;
	char proc[64];

	if (mfd < 0)
		return csi_say(msg, len, CSI_INTERNAL, "making the socket's folder: %s",
			       strerror(errno));
	if (move_mount(mfd, "", tfd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0) {
		e = errno;
		close(mfd);
		return csi_say(msg, len, CSI_INTERNAL, "mounting the socket's folder: %s",
			       strerror(e));
	}
	tree = open_tree(sfd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
	ph = openat(mfd, "agent.sock", O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (tree < 0 || ph < 0 ||
	    move_mount(tree, "", ph, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0 ||
	    mount_setattr(mfd, "", AT_EMPTY_PATH, &ro, sizeof ro) != 0) {
		e = errno;
		snprintf(proc, sizeof proc, "/proc/self/fd/%d", mfd);
		if (umount2(proc, MNT_DETACH) != 0)
			log_msg(LOG_ERR, "a failed socket volume stays mounted: %s",
				strerror(errno));
	}
	if (tree >= 0)
		close(tree);
	if (ph >= 0)
		close(ph);
	close(mfd);
	if (e != 0)
		return csi_say(msg, len, CSI_INTERNAL, "binding the bot's socket: %s",
			       strerror(e));
	return CSI_OK;
}

static int check_request(const struct csi_publish_req *p, char *msg, size_t len)
{
	if (p->volume_id == NULL || p->volume_id[0] == '\0')
		return csi_say(msg, len, CSI_INVALID_ARGUMENT, "volume_id is missing");
	if (p->target_path == NULL || p->target_path[0] == '\0')
		return csi_say(msg, len, CSI_INVALID_ARGUMENT, "target_path is missing");
	if (!p->has_capability)
		return csi_say(msg, len, CSI_INVALID_ARGUMENT, "volume_capability is missing");
	if (p->block)
		return csi_say(msg, len, CSI_INVALID_ARGUMENT,
			       "block volumes are not served: agentfs-csi gives folders");
	if (p->nmount_flags > 0)
		return csi_say(msg, len, CSI_INVALID_ARGUMENT,
			       "mount flags are not served (use readOnly for a read-only volume)");
	return CSI_OK;
}

/* Mount at the target (made if missing, removed again if we made it and fail). */
static int publish_at(struct target *t, int sfd, const struct vol *v, bool ro, char *msg,
		      size_t len)
{
	bool made = mkdirat(t->pfd, "mount", 0750) == 0;
	int tfd = gg_open_nofollow(t->pfd, "mount", O_PATH | O_DIRECTORY, true), r;

	if (tfd < 0)
		r = csi_say(msg, len, CSI_INVALID_ARGUMENT, "%s/mount: %s", t->rel_parent,
			    errno == ELOOP ? "a symbolic link: refused" : strerror(errno));
	else if (target_is_mount(tfd))
		r = published_already(tfd, sfd, v, ro, msg, len);
	else if (v->socket)
		r = bind_socket(sfd, tfd, msg, len);
	else
		r = bind_root(sfd, tfd, ro, msg, len);
	if (tfd >= 0)
		close(tfd);
	if (r != CSI_OK && made)
		unlinkat(t->pfd, "mount", AT_REMOVEDIR);
	return r;
}

int csi_publish(const struct csi_conf *c, const struct csi_publish_req *p, char *msg, size_t len)
{
	struct vol v = {0};
	struct target t = {.kfd = -1, .pfd = -1};
	cJSON *plan = NULL;
	bool writable, ro;
	int r, sfd = -1;

	msg[0] = '\0';
	if ((r = check_request(p, msg, len)) != CSI_OK || (r = parse_attrs(p, &v, msg, len)) != 0)
		return r;
	r = target_open(c, p->target_path, &t, msg, len);
	if (r == CSI_NOT_FOUND) /* kubelet makes the folder above the target first */
		return csi_say(msg, len, CSI_INVALID_ARGUMENT, "%s", msg);
	if (r != CSI_OK)
		return r;
	if (strcmp(t.uid, v.pod_uid) != 0) {
		r = csi_say(msg, len, CSI_PERMISSION_DENIED,
			    "the target is pod %s's, not pod %s's: the pod's information does not "
			    "come from kubelet (the CSIDriver must have podInfoOnMount: true)",
			    t.uid, v.pod_uid);
		goto out;
	}
	if ((r = ask_plan(c, &v, &plan, msg, len)) != CSI_OK ||
	    (r = plan_source(plan, &v, &sfd, &writable, msg, len)) != CSI_OK)
		goto out;
	ro = p->readonly || p->reader_only || v.readonly || !writable;
	r = publish_at(&t, sfd, &v, ro, msg, len);
	if (r == CSI_OK && msg[0] == '\0') {
		if (v.socket)
			log_msg(LOG_INFO, "published bot %s's socket for pod %s/%s (%s) at %s",
				v.bot, v.ns, v.pod_name, v.sa, p->target_path);
		else
			log_msg(LOG_INFO, "published bot %s's root %u %s for pod %s/%s (%s) at %s",
				v.bot, v.root, ro ? "read-only" : "writable", v.ns, v.pod_name,
				v.sa, p->target_path);
	}
out:
	if (sfd >= 0)
		close(sfd);
	cJSON_Delete(plan);
	target_close(&t);
	return r;
}

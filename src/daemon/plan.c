/* SPDX-License-Identifier: MIT */
/*
 * The exec plan: what `agentfs exec` may run for a bot, and how, decided
 * here rather than in the client: a confined bot never runs as root, its
 * roots are the live mounts this daemon made, the bwrap to run is one no
 * bot could have written, and the agentfs that asks (bound into the
 * sandbox and run there first) lies in none of the bot's writable roots.
 * The client runs bwrap with what the plan says; the daemon starts no
 * process.
 */
#include "src/daemon/bots-int.h"
#include "fusefs/fusefs.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

/* The most groups a plan gives: what agentfs exec sets at most (MAX_GROUPS). */
#define PLAN_GROUPS 256

/*
 * The config fields that are the plan's: "bwrap", the bwrap to run (an
 * absolute path; default: the first in agentfsd's PATH). 1 if field v was
 * one of them, 0 if not, -errno (err filled) if it was bad.
 */
int plan_config(struct config *cfg, const cJSON *v, char *err, size_t len)
{
	if (strcmp(v->string, "cgroup") == 0) {
		if (!cJSON_IsString(v) || strlen(v->valuestring) >= PATH_MAX / 2 ||
		    strstr(v->valuestring, "..") != NULL) {
			snprintf(
				err, len,
				"config field \"cgroup\" must be a cgroup path (absolute: from the "
				"top of each hierarchy; relative: from agentfsd's own), or \"\"");
			return -EINVAL;
		}
		free(cfg->cgroup);
		cfg->cgroup = strdup(v->valuestring);
		return cfg->cgroup != NULL ? 1 : -ENOMEM;
	}
	if (strcmp(v->string, "default_memory_max") == 0) {
		if (!cJSON_IsNumber(v) || v->valuedouble < MEMORY_MIN ||
		    v->valuedouble > MEMORY_MAX ||
		    v->valuedouble != (double)(uint64_t)v->valuedouble) {
			snprintf(err, len,
				 "config field \"default_memory_max\" must be whole bytes from "
				 "%llu (16 MiB) to 2^50",
				 (unsigned long long)MEMORY_MIN);
			return -EINVAL;
		}
		cfg->default_memory_max = (uint64_t)v->valuedouble;
		return 1;
	}
	if (strcmp(v->string, "default_pids_max") == 0) {
		if (!cJSON_IsNumber(v) || v->valuedouble < PIDS_MIN || v->valuedouble > PIDS_MAX ||
		    v->valuedouble != (double)(uint64_t)v->valuedouble) {
			snprintf(err, len,
				 "config field \"default_pids_max\" must be a whole number from %d "
				 "to %d",
				 PIDS_MIN, PIDS_MAX);
			return -EINVAL;
		}
		cfg->default_pids_max = (uint64_t)v->valuedouble;
		return 1;
	}
	if (strcmp(v->string, "bwrap") == 0) {
		if (!cJSON_IsString(v) || v->valuestring[0] != '/' ||
		    strlen(v->valuestring) >= PATH_MAX) {
			snprintf(err, len, "config field \"bwrap\" must be an absolute path");
			return -EINVAL;
		}
		free(cfg->bwrap);
		cfg->bwrap = strdup(v->valuestring);
		return cfg->bwrap != NULL ? 1 : -ENOMEM;
	}
	return 0;
}

/* One string more in the array arr; false when out of memory. */
static bool add_string(cJSON *arr, const char *s)
{
	cJSON *v = cJSON_CreateString(s);

	if (v == NULL || !cJSON_AddItemToArray(arr, v)) {
		cJSON_Delete(v);
		return false;
	}
	return true;
}

/* One bind of the plan: where b's root rt is mounted and where it goes. */
static bool add_bind(cJSON *binds, const struct root *rt)
{
	cJSON *o = cJSON_CreateObject();

	if (o == NULL || !cJSON_AddItemToArray(binds, o)) {
		cJSON_Delete(o);
		return false;
	}
	return cJSON_AddStringToObject(o, "source", rt->mountpoint) != NULL &&
	       cJSON_AddStringToObject(o, "path", rt->path) != NULL &&
	       cJSON_AddBoolToObject(o, "writable", rt->writable) != NULL;
}

/*
 * The users of the last plans, kept USER_KEEP_MS while /etc/passwd and
 * /etc/group stay as they were: looking a user and its groups up through
 * NSS (nss-systemd searches six userdb folders) is most of agentfsd's
 * share of a sandbox start here, a plan taking 0.88 ms without it kept
 * and 0.15 ms with it (bench/README.md). A change to either file is seen
 * at the next plan; one in another NSS source (userdb, a directory
 * service) within USER_KEEP_MS, where nscd or sssd would keep it minutes.
 */
#define USER_KEEP_MS 10000
#define USERS_KEPT 8

struct file_stamp {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
};

static struct kept_user {
	cJSON *user; /* NULL: a free slot */
	uid_t uid;
	int64_t at_ms;
	struct file_stamp pw, gr;
} kept_users[USERS_KEPT];

static bool stamp_of(const char *path, struct file_stamp *s)
{
	struct stat st;

	memset(s, 0, sizeof *s);
	if (stat(path, &st) != 0)
		return false;
	*s = (struct file_stamp){st.st_dev, st.st_ino, st.st_size, st.st_mtim, st.st_ctim};
	return true;
}

static bool same_stamp(const struct file_stamp *a, const struct file_stamp *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec &&
	       a->ctime.tv_sec == b->ctime.tv_sec && a->ctime.tv_nsec == b->ctime.tv_nsec;
}

/* uid's user, kept and still good (a copy, the caller's); NULL if none. */
static cJSON *user_kept(uid_t uid, const struct file_stamp *pw, const struct file_stamp *gr)
{
	size_t i;

	for (i = 0; i < USERS_KEPT; i++) {
		struct kept_user *k = &kept_users[i];

		if (k->user == NULL || k->uid != uid)
			continue;
		if (mono_ms() - k->at_ms < USER_KEEP_MS && same_stamp(&k->pw, pw) &&
		    same_stamp(&k->gr, gr))
			return cJSON_Duplicate(k->user, true);
		cJSON_Delete(k->user);
		k->user = NULL;
	}
	return NULL;
}

/* Keep a copy of uid's user u, in a free slot or the oldest one's. */
static void user_keep(uid_t uid, const cJSON *u, const struct file_stamp *pw,
		      const struct file_stamp *gr)
{
	struct kept_user *k = &kept_users[0];
	size_t i;

	for (i = 0; i < USERS_KEPT && kept_users[i].user != NULL; i++)
		if (kept_users[i].at_ms < k->at_ms)
			k = &kept_users[i];
	if (i < USERS_KEPT)
		k = &kept_users[i];
	cJSON_Delete(k->user);
	*k = (struct kept_user){cJSON_Duplicate(u, true), uid, mono_ms(), *pw, *gr};
}

/*
 * The bot's user as this daemon's user database has it, for the client to
 * become: its name and home (the command's USER, LOGNAME and HOME), its
 * group and its groups. The client looked them up itself before, loading
 * the host's NSS modules at every exec (2-8 ms with nss-systemd here,
 * bench/README.md); ours are loaded once, and what they said is kept a
 * moment (kept_users). Left out for a uid without an entry or with more
 * groups than a client sets: the client looks it up itself then, and says
 * so. False when out of memory.
 */
static bool plan_user(cJSON *body, uid_t uid)
{
	struct passwd pw, *pwp = NULL;
	struct file_stamp pws, grs;
	char buf[16384];
	gid_t groups[PLAN_GROUPS];
	int n = PLAN_GROUPS, i;
	bool stamped;
	cJSON *u, *g, *v;

	stamped = stamp_of("/etc/passwd", &pws) && stamp_of("/etc/group", &grs);
	if (stamped && (u = user_kept(uid, &pws, &grs)) != NULL) {
		if (cJSON_AddItemToObject(body, "user", u))
			return true;
		cJSON_Delete(u);
		return false;
	}
	if (getpwuid_r(uid, &pw, buf, sizeof buf, &pwp) != 0 || pwp == NULL ||
	    getgrouplist(pw.pw_name, pw.pw_gid, groups, &n) < 0)
		return true;
	u = cJSON_AddObjectToObject(body, "user");
	g = u != NULL ? cJSON_AddArrayToObject(u, "groups") : NULL;
	if (g == NULL || cJSON_AddStringToObject(u, "name", pw.pw_name) == NULL ||
	    cJSON_AddStringToObject(u, "home", pw.pw_dir) == NULL ||
	    cJSON_AddNumberToObject(u, "gid", pw.pw_gid) == NULL)
		return false;
	for (i = 0; i < n; i++) {
		v = cJSON_CreateNumber(groups[i]);
		if (v == NULL || !cJSON_AddItemToArray(g, v)) {
			cJSON_Delete(v);
			return false;
		}
	}
	if (stamped)
		user_keep(uid, u, &pws, &grs);
	return true;
}

/*
 * The exec plan of b, whole or not at all (NULL: out of memory): a plan
 * missing a bind or a folder to hide would confine the bot less. bwrap and
 * enter: NULL for danger-full-access, which runs neither.
 */
static cJSON *plan_json(const struct bot *b, const char *bwrap, const char *enter, bool userns)
{
	cJSON *body = cJSON_CreateObject(), *binds, *hide;
	const char *sock = b->sock != NULL ? server_listener_path(b->sock) : "";
	char *sd = NULL;
	bool ok;
	size_t i;

	ok = body != NULL && cJSON_AddStringToObject(body, "name", b->name) != NULL &&
	     cJSON_AddStringToObject(body, "sandbox", sandbox_name(b->sandbox)) != NULL &&
	     cJSON_AddBoolToObject(body, "network", b->network) != NULL &&
	     cJSON_AddNumberToObject(body, "uid", b->uid) != NULL &&
	     cJSON_AddStringToObject(body, "folder", b->folder) != NULL &&
	     cJSON_AddStringToObject(body, "socket", sock) != NULL &&
	     cJSON_AddStringToObject(body, "control_socket", bots_state.cfg->socket_path) != NULL &&
	     (bwrap == NULL || cJSON_AddStringToObject(body, "bwrap", bwrap) != NULL) &&
	     (enter == NULL || cJSON_AddStringToObject(body, "enter", enter) != NULL) &&
	     cJSON_AddBoolToObject(body, "user_namespace", userns) != NULL &&
	     plan_user(body, b->uid);
	binds = ok ? cJSON_AddArrayToObject(body, "binds") : NULL;
	for (i = 0, ok = binds != NULL; ok && i < b->nroots; i++)
		ok = add_bind(binds, &b->roots[i]);
	hide = ok ? cJSON_AddArrayToObject(body, "hide") : NULL;
	if (asprintf(&sd, "%s.d", bots_state.cfg->socket_path) < 0)
		sd = NULL;
	ok = hide != NULL && sd != NULL && add_string(hide, bots_state.cfg->state_dir) &&
	     add_string(hide, sd);
	free(sd);
	if (!ok) {
		cJSON_Delete(body);
		return NULL;
	}
	return body;
}

/* The topmost mount at a mountpoint, as the mount table lists it (later entries on top). */
struct top_mount {
	const char *mp;
	uint64_t id;
	bool agentfs;
};

static int top_match(void *arg, uint64_t id, const char *mp, const char *fstype)
{
	struct top_mount *t = arg;

	if (strcmp(mp, t->mp) == 0) {
		t->id = id;
		t->agentfs = strcmp(fstype, "fuse.agentfs") == 0;
	}
	return 0;
}

/*
 * Does rt's mount point show rt's own mount (fs_mount_is_at: no request to
 * the FUSE server, and no reading of the whole mount table)? Not by the
 * mount id alone: unmounted from outside while a sandbox keeps its
 * connection, rt's mount is gone and its id may be another's. False also
 * when it cannot be told.
 */
static bool root_shown(const struct root *rt)
{
	return rt->m != NULL && !rt->lost && fs_mount_is_at(rt->m, rt->mountpoint);
}

/*
 * Every root is mounted, by this daemon, and what its mount point shows is
 * that mount: a root unmounted from outside leaves the bare folder, and
 * binding it would let the command write there, unguarded; another mount
 * put over it would be bound instead. Asked of each mount point first
 * (root_shown); only when one fails is the mount table read, to mark what
 * was lost and say why. False after failing the request.
 */
static bool roots_live(struct request *r, struct bot *b)
{
	struct top_mount t;
	size_t i;

	for (i = 0; i < b->nroots && root_shown(&b->roots[i]); i++)
		;
	if (i == b->nroots)
		return true;
	restart_check_lost(b);
	for (i = 0; i < b->nroots; i++) {
		struct root *rt = &b->roots[i];

		if (rt->lost) {
			bots_fail(r, "mount_lost",
				  "%s was unmounted from outside (its mount %s): nothing was run; "
				  "`agentfs configure %s` (or restarting agentfsd) mounts it again",
				  rt->path, rt->mountpoint, b->name);
			return false;
		}
		if (rt->m == NULL) {
			bots_fail(r, "mount_failed", "%s is not mounted: %s", rt->path,
				  rt->error != NULL ? rt->error : "unknown reason");
			return false;
		}
		t = (struct top_mount){rt->mountpoint, 0, false};
		if (fs_mountinfo_each(top_match, &t) != 0 || !t.agentfs ||
		    t.id != fs_mount_id(rt->m) || !fs_mount_is_at(rt->m, rt->mountpoint)) {
			bots_fail(r, "mount_lost",
				  "%s of bot %s is not mounted (its mount %s was unmounted or "
				  "covered "
				  "from outside); nothing was run. `agentfs configure %s` (or "
				  "restarting agentfsd) mounts it again",
				  rt->path, b->name, rt->mountpoint, b->name);
			return false;
		}
	}
	return true;
}

/*
 * A program run in the sandbox before the bot's confinement is complete
 * (WHAT, at PATH) must lie in none of b's writable roots: the bot could
 * change it. False after failing the request with HINT.
 */
static bool outside_writable_roots(struct request *r, const struct bot *b, const char *what,
				   const char *path, const char *hint)
{
	size_t i;

	for (i = 0; i < b->nroots; i++)
		if (b->roots[i].writable && path_within(path, b->roots[i].path)) {
			bots_fail(r, "forbidden",
				  "%s (%s) is inside the bot's writable root %s: the bot could "
				  "change "
				  "it, and it runs in the sandbox before the bot's confinement is "
				  "complete; %s",
				  what, path, b->roots[i].path, hint);
			return false;
		}
	return true;
}

/*
 * The agentfs that asks is bound into the sandbox and runs there first, as
 * root until it becomes the bot's user: never a copy in a root the bot
 * writes. Read from the client's /proc/PID/exe. False after failing.
 */
static bool client_outside_roots(struct request *r, struct bot *b)
{
	char path[64], exe[PATH_MAX];
	ssize_t n;

	if (r->peer == NULL)
		return true;
	snprintf(path, sizeof path, "/proc/%d/exe", (int)server_peer_pid(r->peer));
	n = readlink(path, exe, sizeof exe - 1);
	if (n <= 0) {
		bots_fail(r, "forbidden", "cannot tell which program asks (%s): nothing was run",
			  strerror(errno));
		return false;
	}
	exe[n] = '\0';
	return outside_writable_roots(r, b, "agentfs itself", exe, "run an installed agentfs");
}

/*
 * The bwrap to run: the configured one, or the first in agentfsd's PATH;
 * one no one but root could have written (prog_trusted), as bwrap runs as
 * root, or as the operator the bot runs as, outside the sandbox. NULL after
 * failing the request.
 */
static char *plan_bwrap(struct request *r)
{
	char why[PATH_MAX + 256], *bwrap;

	bwrap = bots_state.cfg->bwrap != NULL
			? prog_trusted(bots_state.cfg->bwrap, why, sizeof why)
			: prog_find_trusted("bwrap", getenv("PATH"), why, sizeof why);
	if (bwrap == NULL)
		bots_fail(
			r, "no_bwrap",
			"%s: agentfsd runs no bot confined without a bwrap (bubblewrap) it trusts "
			"(apt-get install bubblewrap, or the config's \"bwrap\"); agentfs never "
			"runs "
			"a bot unconfined",
			why);
	return bwrap;
}

/*
 * The sandbox's first program, agentfs-enter: the one beside agentfsd if
 * there is one (a build tree, or both installed in one folder), else the
 * one installed with it (AGENTFS_ENTER).  It runs inside the sandbox with
 * CAP_SETUID until it becomes the bot's user, so it must be a program no
 * bot could have written (prog_trusted) and in none of this bot's writable
 * roots.  The resolved path, or NULL after failing the request.
 */
static char *plan_enter(struct request *r, const struct bot *b)
{
	char why[PATH_MAX + 256], self[PATH_MAX], *enter;
	const char *path = prog_beside_self("agentfs-enter", self) ? self : AGENTFS_ENTER;

	enter = prog_trusted(path, why, sizeof why);
	if (enter == NULL) {
		bots_fail(
			r, "no_enter",
			"%s: agentfs exec starts every sandbox with agentfs-enter, installed with "
			"agentfsd (make install puts it in %s); nothing was run",
			why, AGENTFS_ENTER);
		return NULL;
	}
	if (!outside_writable_roots(r, b, "agentfs-enter", enter, "nothing was run")) {
		free(enter);
		return NULL;
	}
	return enter;
}

/*
 * What `agentfs exec` needs to confine a bot with bwrap: each root's mount
 * and the path to bind it at, the bot's socket, the daemon's own paths to
 * hide, the bwrap to run, and whether the client, not being root, runs it
 * in a user namespace of its own. Refused: a confined bot whose user is
 * root; one asked for by a bot (a sandbox cannot make another; a bot runs
 * its danger-full-access bots itself, unconfined, as its user); one whose
 * user is not the asking operator's own (agentfsd gives an operator's bots
 * its user, so this is a second lock). A confined bot's plan that brings a
 * "child" registers it too (sandbox_plan_register), last, once all else
 * was decided.
 */
void bots_exec_plan(struct request *r, const cJSON *req, const char *pod)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(req, "name");
	uid_t op = bots_operator_uid(r);
	cleanup_free char *bwrap = NULL, *enter = NULL;
	char owner[PATH_MAX + 16];
	bool confined, registered = false;
	struct bot *b;
	cJSON *body;

	if ((b = bot_find_visible(r, cJSON_IsString(name) ? name->valuestring : NULL)) == NULL)
		return;
	/*
	 * pod (agentfs-csi, publishing the bot's roots into a pod): the pod as
	 * kubelet named it, which must be one the operator listed in the bot's
	 * pods. Decided here, from the bot's record, never from what the pod's
	 * author wrote in its volume's attributes. Nothing is run for it: the
	 * checks of what exec runs do not apply.
	 */
	if (pod != NULL && !auth_pod_allowed(b, pod)) {
		if (b->pods.n == 0)
			bots_fail(r, "forbidden",
				  "bot %s names no pods: `agentfs configure %s --pod "
				  "NAMESPACE/SERVICEACCOUNT`",
				  b->name, b->name);
		else
			bots_fail(r, "forbidden", "pod %s is not one of bot %s's pods", pod,
				  b->name);
		return;
	}
	if (b->busy) {
		bots_fail(r, "busy", "bot %s is being changed; ask again", b->name);
		return;
	}
	confined = pod == NULL && b->sandbox != SANDBOX_DANGER_FULL_ACCESS;
	/* create refuses such a bot; one from an older state file is refused here */
	if (confined && b->uid == 0) {
		snprintf(owner, sizeof owner, "the owner of %s", b->folder);
		bots_fail(r, "root_bot", ROOT_BOT_REFUSED, b->name, owner);
		return;
	}
	if (confined && bots_caller(r) != NULL) {
		bots_fail(r, "forbidden",
			  "a bot cannot run a confined bot's commands (its sandbox cannot make "
			  "another); whoever runs it runs them, or make %s danger-full-access",
			  b->name);
		return;
	}
	if (confined && op != 0 && b->uid != op) {
		bots_fail(r, "forbidden", "bot %s runs as uid %u, not as you (uid %u)", b->name,
			  (unsigned)b->uid, (unsigned)op);
		return;
	}
	if (!roots_live(r, b))
		return;
	if (confined && (!client_outside_roots(r, b) || (bwrap = plan_bwrap(r)) == NULL ||
			 (enter = plan_enter(r, b)) == NULL))
		return;
	body = plan_json(b, bwrap, enter,
			 confined && r->peer != NULL && server_peer_uid(r->peer) != 0);
	if (body == NULL) {
		bots_fail(r, "internal", "out of memory: no plan was made, nothing was run");
		return;
	}
	if (confined && !sandbox_plan_register(r, b, req, &registered)) {
		cJSON_Delete(body);
		return;
	}
	if (registered && !cJSON_AddTrueToObject(body, "registered")) {
		cJSON_Delete(body);
		bots_fail(r, "internal", "out of memory: nothing was run");
		return;
	}
	request_reply(r, body);
}

/* dir's mode, set through a descriptor: a symbolic link put in its place is refused. */
static int dir_mode(const char *dir, mode_t mode, char *err, size_t len)
{
	struct stat st;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) != 0 || st.st_uid != 0 ||
	    ((st.st_mode & 07777) != mode && fchmod(fd, mode) != 0)) {
		snprintf(err, len, "%s: %s", dir,
			 fd >= 0 && st.st_uid != 0 ? "not owned by root" : strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/*
 * The state folder and its mnt: an operator who is not root runs bwrap as
 * itself, and bwrap reaches a root's mount by its path, STATE/mnt/BOT/N. So
 * where there are operators (the group exists) both are 0711: anyone may
 * pass through, no one but root may list or change them (a bot's name is
 * not shown; what a mount serves is checked with the caller's own rights,
 * default_permissions, as the host folder is). Without operators, the
 * state folder is 0700, as it always was.
 */
int plan_dirs(const struct config *cfg, char *err, size_t len)
{
	if (dir_mode(cfg->state_dir, cfg->group_found ? 0711 : 0700, err, len) != 0)
		return -1;
	return dir_mode(cfg->mount_dir, cfg->group_found ? 0711 : 0755, err, len);
}

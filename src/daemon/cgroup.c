/* SPDX-License-Identifier: MIT */
/*
 * Each sandbox in a cgroup of its own, with its bot's memory and pids
 * limits: what a bot's commands take is bounded per sandbox, not only per
 * user (the kernel's per-uid counts are shared by every bot of a user and
 * the user's own programs: agentfsd(8), Per-user kernel resources).
 *
 * cgroup v2 (a Debian 12 host with systemd: memory.max, pids.max) or the
 * v1 memory and pids hierarchies (a hybrid host without systemd:
 * memory.limit_in_bytes, pids.max). The sandboxes' cgroups go under a base
 * (config "cgroup"): an absolute path is taken from the top of each
 * hierarchy, a relative one from agentfsd's own cgroup there; "" makes
 * none. The default, /agentfs, is outside agentfsd's own (systemd's unit)
 * cgroup, so a restart of the service, which ends every process in that
 * cgroup, leaves the sandboxes running; on v2 it needs no Delegate=.
 *
 * Every path is walked by descriptor from the hierarchy's root, one name at
 * a time without following symbolic links. The state (the bases' descriptors,
 * the mode) is set once at start and only read after, on the loop.
 */
#include "src/common/agentfs.h"
#include "src/daemon/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif
#ifndef CGROUP_SUPER_MAGIC
#define CGROUP_SUPER_MAGIC 0x27e0eb
#endif

#define CG_ROOT "/sys/fs/cgroup"

static struct {
	enum cg_mode mode;
	int base[2];		  /* v2: [0]; v1: [0] memory, [1] pids; -1: none */
	char where[2][PATH_MAX];  /* the bases, for messages */
	char why[PATH_MAX + 256]; /* CG_BROKEN: why */
	int lock;		  /* the first base, for flock (cgroup_sweep); -1: none */
} cg = {CG_OFF, {-1, -1}, {"", ""}, "", -1};

static const char *const v1_names[2] = {"memory", "pids"};

enum cg_mode cgroup_mode(void)
{
	return cg.mode;
}

const char *cgroup_why(void)
{
	return cg.why;
}

const char *cgroup_where(void)
{
	return cg.where[0];
}

static int write_at(int dir, const char *file, const char *text)
{
	int fd = openat(dir, file, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	size_t n = strlen(text);
	ssize_t w;
	int e;

	if (fd < 0)
		return -errno;
	w = write(fd, text, n);
	e = errno;
	close(fd);
	return w == (ssize_t)n ? 0 : w < 0 ? -e : -EIO;
}

/* Where agentfsd itself is in hierarchy name ("" for v2), from /proc/self/cgroup. */
static int own_cgroup(const char *name, char *out, size_t len)
{
	char buf[8192], *line, *save = NULL, *c1, *c2;

	if (read_text(AT_FDCWD, "/proc/self/cgroup", buf, sizeof buf) <= 0)
		return -errno;
	for (line = strtok_r(buf, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		/* ID:CONTROLLERS:PATH; v2 is 0::PATH */
		if ((c1 = strchr(line, ':')) == NULL || (c2 = strchr(c1 + 1, ':')) == NULL)
			continue;
		*c2 = '\0';
		if (*name == '\0' ? (strcmp(line, "0") == 0 && c1[1] == '\0')
				  : strstr(c1 + 1, name) != NULL) {
			snprintf(out, len, "%s", c2 + 1);
			return 0;
		}
	}
	return -ENOENT;
}

/*
 * Open (making what is missing, mode 0755) the folder rel under dir, one
 * name at a time, never following a link; on v2, first enabling memory and
 * pids in each folder's cgroup.subtree_control on the way, so the last one
 * can give them to the sandboxes' cgroups. An O_PATH descriptor, or -errno.
 */
static int walk_make(int dir, const char *rel, bool v2, char *why, size_t len)
{
	char copy[PATH_MAX], *name, *save = NULL;
	int fd = fcntl(dir, F_DUPFD_CLOEXEC, 3), next, r;

	if (fd < 0) {
		r = -errno;
		snprintf(why, len, "cannot open the cgroups: %s", strerror(-r));
		return r;
	}
	if (snprintf(copy, sizeof copy, "%s", rel) >= (int)sizeof copy) {
		snprintf(why, len, "the cgroup path %s is too long", rel);
		close(fd);
		return -ENAMETOOLONG;
	}
	for (name = strtok_r(copy, "/", &save);; name = strtok_r(NULL, "/", &save)) {
		if (v2 && (r = write_at(fd, "cgroup.subtree_control", "+memory +pids")) != 0) {
			snprintf(why, len,
				 "cannot give memory and pids to the cgroups below %s (%s%s)",
				 name != NULL ? name : "the base", strerror(-r),
				 r == -EBUSY ? ": a cgroup with processes of its own cannot; "
					       "name one without, or an absolute path"
					     : "");
			close(fd);
			return r;
		}
		if (name == NULL)
			return fd;
		if (strcmp(name, "..") == 0 || strcmp(name, ".") == 0) {
			close(fd);
			snprintf(why, len, "\"..\" and \".\" are not cgroup names");
			return -EINVAL;
		}
		if (mkdirat(fd, name, 0755) != 0 && errno != EEXIST) {
			r = -errno;
			snprintf(why, len, "cannot make the cgroup %s: %s", name, strerror(errno));
			close(fd);
			return r;
		}
		next = openat(fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		r = -errno;
		close(fd);
		if (next < 0) {
			snprintf(why, len, "cannot open the cgroup %s: %s", name, strerror(-r));
			return r;
		}
		fd = next;
	}
}

/* The base in one hierarchy, mounted at mnt (an O_PATH fd), named for messages. */
static int base_open(int mnt, const char *hier, const char *where, const char *cfg, bool v2,
		     int slot)
{
	char own[PATH_MAX], rel[PATH_MAX];
	int r;

	if (cfg[0] == '/') {
		snprintf(rel, sizeof rel, "%s", cfg + 1);
	} else {
		if ((r = own_cgroup(v2 ? "" : hier, own, sizeof own)) != 0) {
			snprintf(cg.why, sizeof cg.why, "cannot tell agentfsd's own %s cgroup: %s",
				 v2 ? "v2" : hier, strerror(-r));
			return r;
		}
		if (snprintf(rel, sizeof rel, "%s/%s", own, cfg) >= (int)sizeof rel)
			rel[0] = '\0';
	}
	if (rel[0] == '\0' || snprintf(cg.where[slot], sizeof cg.where[slot], "%s/%s", where,
				       rel) >= (int)sizeof cg.where[slot]) {
		snprintf(cg.why, sizeof cg.why, "the cgroup path %s is empty or too long", cfg);
		return -ENAMETOOLONG;
	}
	r = walk_make(mnt, rel, v2, cg.why, sizeof cg.why);
	if (r < 0)
		return r;
	cg.base[slot] = r;
	return 0;
}

/*
 * The hierarchy mounted at path (magic: its file system), an O_PATH fd; -1
 * if there is none, with the reason in *err when it is not that (EMFILE).
 */
static int mount_of(const char *path, long magic, int *err)
{
	struct statfs sfs;
	int fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0) {
		if (errno != ENOENT && errno != ENOTDIR && errno != ELOOP)
			*err = errno;
		return -1;
	}
	if (fstatfs(fd, &sfs) != 0)
		*err = errno;
	else if (sfs.f_type == magic)
		return fd;
	close(fd);
	return -1;
}

/* Has the v2 hierarchy at fd the memory and pids controllers? */
static bool v2_has_controllers(int fd)
{
	char buf[512];

	if (read_text(fd, "cgroup.controllers", buf, sizeof buf) <= 0)
		return false;
	return strstr(buf, "memory") != NULL && strstr(buf, "pids") != NULL;
}

/*
 * At start: find which cgroups the host has and open (or make) the base.
 * Never fails the start: where neither is usable, the mode is CG_BROKEN
 * with why, and each sandbox is refused saying so (cgroup_sandbox_make).
 */
void cgroup_init(const char *cfg)
{
	int root, mnt[2] = {-1, -1}, i, err = 0;
	char where[PATH_MAX];

	if (cfg != NULL && cfg[0] == '\0') {
		cg.mode = CG_OFF;
		return;
	}
	if (cfg == NULL)
		cfg = "/agentfs";
	cg.mode = CG_BROKEN;
	root = mount_of(CG_ROOT, CGROUP2_SUPER_MAGIC, &err);
	if (root >= 0 && v2_has_controllers(root)) {
		if (base_open(root, "", CG_ROOT, cfg, true, 0) == 0)
			cg.mode = CG_V2;
		close(root);
		return;
	}
	if (root >= 0)
		close(root);
	for (i = 0; i < 2; i++) {
		snprintf(where, sizeof where, CG_ROOT "/%s", v1_names[i]);
		mnt[i] = mount_of(where, CGROUP_SUPER_MAGIC, &err);
	}
	if ((mnt[0] < 0 || mnt[1] < 0) && err != 0) {
		snprintf(cg.why, sizeof cg.why, "cannot look at the cgroups under " CG_ROOT ": %s",
			 strerror(err));
	} else if (mnt[0] < 0 || mnt[1] < 0) {
		snprintf(cg.why, sizeof cg.why,
			 "the host has neither cgroup v2 with memory and pids at " CG_ROOT
			 " nor the v1 memory and pids hierarchies at " CG_ROOT
			 "/memory and " CG_ROOT "/pids");
	} else {
		for (i = 0; i < 2; i++) {
			snprintf(where, sizeof where, CG_ROOT "/%s", v1_names[i]);
			if (base_open(mnt[i], v1_names[i], where, cfg, false, i) != 0)
				break;
		}
		if (i == 2)
			cg.mode = CG_V1;
	}
	for (i = 0; i < 2; i++)
		if (mnt[i] >= 0)
			close(mnt[i]);
}

/* Let go of the base's lock (cgroup_sweep): a handover, before the next agentfsd starts. */
void cgroup_unlock(void)
{
	if (cg.lock >= 0)
		close(cg.lock);
	cg.lock = -1;
}

void cgroup_stop(void)
{
	int i;

	cgroup_unlock();

	for (i = 0; i < 2; i++)
		if (cg.base[i] >= 0)
			close(cg.base[i]);
	cg.base[0] = cg.base[1] = -1;
}

static int nbases(void)
{
	return cg.mode == CG_V1 ? 2 : cg.mode == CG_V2 ? 1 : 0;
}

/* A sandbox's cgroup in base slot i, opened: a folder, -errno if gone. */
static int sandbox_dir(int i, const char *name)
{
	int fd = openat(cg.base[i], name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	return fd >= 0 ? fd : -errno;
}

/* Half the host's memory: a sandbox's default bound when the config names none. */
uint64_t cgroup_default_memory(void)
{
	struct sysinfo si;

	if (sysinfo(&si) != 0)
		return 0;
	return (uint64_t)si.totalram * si.mem_unit / 2;
}

/*
 * The memory limit bounds swap too: a cgroup at its memory.max (v1:
 * memory.limit_in_bytes) is reclaimed by swapping its own pages out, so
 * without this a sandbox's RAM is bounded and its use of the host's swap is
 * not.  v2: memory.swap.max 0, the sandbox swaps nothing; v1:
 * memory.memsw.limit_in_bytes, RAM and swap together, the same number
 * (written after the RAM limit: the kernel keeps memsw >= it).  A kernel
 * that accounts no swap has no such file: nothing to bound then (ENOENT).
 */
static int swap_bound(int fd, const char *num)
{
	int r = write_at(fd, cg.mode == CG_V2 ? "memory.swap.max" : "memory.memsw.limit_in_bytes",
			 cg.mode == CG_V2 ? (strcmp(num, "max") ? "0" : "max") : num);

	return r == -ENOENT ? 0 : r;
}

/*
 * Make the cgroup name of a sandbox, with its limits: memory in bytes (RAM
 * and swap, swap_bound) and pids (0: no limit). 0, or -errno with why.
 */
int cgroup_sandbox_make(const char *name, uint64_t memory, uint64_t pids, char *why, size_t len)
{
	char num[32];
	int i, fd, r = 0;

	if (cg.mode == CG_BROKEN) {
		snprintf(why, len, "%s", cg.why);
		return -ENOTSUP;
	}
	for (i = 0; i < nbases() && r == 0; i++) {
		if (mkdirat(cg.base[i], name, 0755) != 0 && errno != EEXIST) {
			r = -errno;
			snprintf(why, len, "cannot make the cgroup %s/%s: %s", cg.where[i], name,
				 strerror(errno));
			break;
		}
		if ((fd = sandbox_dir(i, name)) < 0) {
			r = fd;
			snprintf(why, len, "cannot open the cgroup %s/%s: %s", cg.where[i], name,
				 strerror(-fd));
			break;
		}
		if (cg.mode == CG_V2 || i == 0) {
			if (memory > 0)
				snprintf(num, sizeof num, "%llu", (unsigned long long)memory);
			else
				snprintf(num, sizeof num, cg.mode == CG_V2 ? "max" : "-1");
			r = write_at(fd, cg.mode == CG_V2 ? "memory.max" : "memory.limit_in_bytes",
				     num);
			if (r == 0)
				r = swap_bound(fd, num);
		}
		if (r == 0 && (cg.mode == CG_V2 || i == 1)) {
			if (pids > 0)
				snprintf(num, sizeof num, "%llu", (unsigned long long)pids);
			else
				snprintf(num, sizeof num, "max");
			r = write_at(fd, "pids.max", num);
		}
		if (r != 0)
			snprintf(why, len, "cannot set the limits of the cgroup %s/%s: %s",
				 cg.where[i], name, strerror(-r));
		close(fd);
	}
	if (r != 0)
		cgroup_sandbox_remove(name);
	return r;
}

/* Put pid (a process agentfsd holds by pidfd, not started yet) in the sandbox's cgroup. */
int cgroup_sandbox_enter(const char *name, pid_t pid, char *why, size_t len)
{
	char num[32];
	int i, fd, r;

	snprintf(num, sizeof num, "%d", (int)pid);
	for (i = 0; i < nbases(); i++) {
		if ((fd = sandbox_dir(i, name)) < 0) {
			snprintf(why, len, "the cgroup %s/%s is gone", cg.where[i], name);
			return fd;
		}
		r = write_at(fd, "cgroup.procs", num);
		close(fd);
		if (r != 0) {
			snprintf(why, len, "cannot put process %d in the cgroup %s/%s: %s",
				 (int)pid, cg.where[i], name, strerror(-r));
			return r;
		}
	}
	return 0;
}

/*
 * SIGKILL every process in the sandbox's cgroup: cgroup.kill on v2 (Linux
 * 5.14); else each process listed, held by pidfd and checked still listed
 * once held, so a pid reused meanwhile is never signalled. On v1, the
 * pids hierarchy's list, then the memory one's: a cgroup left half removed
 * by a daemon that died may have only one of them.
 */
void cgroup_sandbox_kill(const char *name)
{
	char buf[65536], *p, *end, path[64], line[PATH_MAX + 64];
	int fd, pidfd, pass, i;
	long pid;

	for (i = nbases() - 1; i >= 0; i--) {
		if ((fd = sandbox_dir(i, name)) < 0)
			continue;
		if (cg.mode == CG_V2 && write_at(fd, "cgroup.kill", "1") == 0) {
			close(fd);
			return;
		}
		for (pass = 0; pass < 3 && read_text(fd, "cgroup.procs", buf, sizeof buf) > 0;
		     pass++) {
			for (p = buf; *p != '\0'; p = end) {
				pid = strtol(p, &end, 10);
				if (end == p)
					break;
				pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
				if (pidfd < 0)
					continue;
				snprintf(path, sizeof path, "/proc/%ld/cgroup", pid);
				if (read_text(AT_FDCWD, path, line, sizeof line) > 0 &&
				    strstr(line, name) != NULL)
					syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
				close(pidfd);
			}
		}
		close(fd);
	}
}

/* Remove the sandbox's cgroup: 0, or -EBUSY while a process (a zombie) is still in it. */
int cgroup_sandbox_remove(const char *name)
{
	int i, r = 0;

	for (i = 0; i < nbases(); i++)
		if (unlinkat(cg.base[i], name, AT_REMOVEDIR) != 0 && errno != ENOENT)
			r = -errno;
	return r;
}

/* Is name one a sandbox's cgroup has: BOT.ID, a bot's name, a dot and 16 hex digits? */
bool cgroup_sandbox_name(const char *name)
{
	const char *dot = strrchr(name, '.');
	char bot[BOT_NAME_MAX + 1];
	size_t n, i;

	if (dot == NULL || strlen(dot + 1) != 16 || (n = (size_t)(dot - name)) > BOT_NAME_MAX)
		return false;
	for (i = 1; i <= 16; i++)
		if (!((dot[i] >= '0' && dot[i] <= '9') || (dot[i] >= 'a' && dot[i] <= 'f')))
			return false;
	memcpy(bot, name, n);
	bot[n] = '\0';
	return bot_name_ok(bot);
}

/* Add the sandbox cgroup names in the folder of base i, once each, to *v (*n of them). */
static int sweep_list(int i, char (**v)[CG_NAME_MAX], size_t *n)
{
	int fd = openat(cg.base[i], ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char(*more)[CG_NAME_MAX];
	struct dirent *e;
	size_t j;
	DIR *d;

	if (fd < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while ((e = readdir(d)) != NULL) {
		if (e->d_type != DT_DIR || strlen(e->d_name) >= CG_NAME_MAX ||
		    !cgroup_sandbox_name(e->d_name))
			continue;
		for (j = 0; j < *n && strcmp((*v)[j], e->d_name) != 0; j++)
			;
		if (j < *n)
			continue;
		if ((more = realloc(*v, (*n + 1) * sizeof **v)) == NULL) {
			closedir(d);
			return -ENOMEM;
		}
		*v = more;
		snprintf((*v)[(*n)++], CG_NAME_MAX, "%s", e->d_name);
	}
	closedir(d);
	return 0;
}

/*
 * At start, once every sandbox a previous agentfsd left running is known:
 * each cgroup in the bases named as a sandbox's (cgroup_sandbox_name) that
 * owned() says no sandbox has is given to gone(), which ends it. Only while
 * no other agentfsd uses the same base: each holds a shared flock on the
 * first base for its life, and a sweep needs it alone, for another daemon's
 * sandboxes are not this one's to end. A daemon that just handed over, or
 * was killed, lets go of it within moments: waited for up to 0.2 s. How
 * many went to gone(); -EWOULDBLOCK when another daemon uses the base.
 */
int cgroup_sweep(bool (*owned)(const char *name), void (*gone)(const char *name))
{
	char(*v)[CG_NAME_MAX] = NULL;
	size_t n = 0, j;
	int i, tries, r = 0;

	if (nbases() == 0)
		return 0;
	if (cg.lock < 0 &&
	    (cg.lock = openat(cg.base[0], ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	for (tries = 0; flock(cg.lock, LOCK_EX | LOCK_NB) != 0; tries++) {
		if (errno != EWOULDBLOCK || tries >= 100) {
			r = -EWOULDBLOCK;
			break;
		}
		usleep(2000);
	}
	for (i = 0; i < nbases() && r == 0; i++)
		r = sweep_list(i, &v, &n);
	for (j = 0; r >= 0 && j < n; j++) {
		if (!owned(v[j])) {
			gone(v[j]);
			r++;
		}
	}
	free(v);
	/* shared from now on; one taken alone is only for another's sweep, moments */
	for (tries = 0; flock(cg.lock, LOCK_SH | LOCK_NB) != 0 && tries < 500; tries++)
		usleep(2000);
	return r;
}

static long long read_num(int dir, const char *file)
{
	char buf[64];

	if (read_text(dir, file, buf, sizeof buf) <= 0)
		return -1;
	return strtoll(buf, NULL, 10);
}

/* What the sandbox uses now: memory in bytes and processes; -1 when unknown. */
void cgroup_sandbox_usage(const char *name, long long *memory, long long *pids)
{
	int fd;

	*memory = *pids = -1;
	if (nbases() == 0)
		return;
	if ((fd = sandbox_dir(0, name)) >= 0) {
		*memory =
			read_num(fd, cg.mode == CG_V2 ? "memory.current" : "memory.usage_in_bytes");
		if (cg.mode == CG_V2)
			*pids = read_num(fd, "pids.current");
		close(fd);
	}
	if (cg.mode == CG_V1 && (fd = sandbox_dir(1, name)) >= 0) {
		*pids = read_num(fd, "pids.current");
		close(fd);
	}
}

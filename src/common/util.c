/* SPDX-License-Identifier: MIT */
/* Small helpers shared by the daemon and the client. */
#include "src/common/agentfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "fusefs/fusefs.h"
#include "gitguard/ggutil.h"

/* gg_path_abs (".." at "/" stays there) into a fresh string; paths of PATH_MAX or more refused */
int path_normalise(const char *in, char **out)
{
	size_t sz;
	int r;

	*out = NULL;
	if (in == NULL || in[0] != '/')
		return -EINVAL;
	if (strlen(in) >= PATH_MAX)
		return -ENAMETOOLONG;
	sz = strlen(in) + 2;
	if ((*out = malloc(sz)) == NULL)
		return -ENOMEM;
	if ((r = gg_path_abs(in, *out, sz)) != 0) {
		free(*out);
		*out = NULL;
	}
	return r;
}

/* Is inner the same as, or beneath, outer? Both normalised. */
bool path_within(const char *inner, const char *outer)
{
	size_t n = strlen(outer);

	if (strcmp(outer, "/") == 0)
		return true;
	return strncmp(inner, outer, n) == 0 && (inner[n] == '\0' || inner[n] == '/');
}

bool paths_contains(const struct paths *ps, const char *p)
{
	size_t i;

	for (i = 0; i < ps->n; i++)
		if (path_within(p, ps->v[i]))
			return true;
	return false;
}

int paths_add(struct paths *ps, const char *p)
{
	char **v = realloc(ps->v, (ps->n + 1) * sizeof *v);

	if (v == NULL)
		return -ENOMEM;
	ps->v = v;
	if ((v[ps->n] = strdup(p)) == NULL)
		return -ENOMEM;
	ps->n++;
	return 0;
}

void paths_free(struct paths *ps)
{
	size_t i;

	for (i = 0; i < ps->n; i++)
		free(ps->v[i]);
	free(ps->v);
	ps->v = NULL;
	ps->n = 0;
}

int mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX], *p;

	if (strlen(path) >= sizeof buf)
		return -ENAMETOOLONG;
	strcpy(buf, path);
	for (p = buf + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) != 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) != 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/*
 * Write dir/name atomically: a temp file, fsync (if durable), rename, fsync
 * the folder (if durable). Without durable, a reader after a crash of the
 * daemon (not of the machine) still sees the old file or the new one whole.
 */
int write_file_replace(const char *dir, const char *name, const char *data, size_t len,
		       bool durable)
{
	char tmp[PATH_MAX], dst[PATH_MAX];
	int fd, dfd, e;
	size_t off = 0;
	ssize_t n;

	if (snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, name) >= (int)sizeof tmp ||
	    snprintf(dst, sizeof dst, "%s/%s", dir, name) >= (int)sizeof dst)
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	while (off < len) {
		n = write(fd, data + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			e = n < 0 ? errno : EIO;
			goto fail;
		}
		off += (size_t)n;
	}
	if (durable && fsync(fd) != 0) {
		e = errno;
		goto fail;
	}
	close(fd);
	if (rename(tmp, dst) != 0) {
		e = errno;
		unlink(tmp);
		return -e;
	}
	dfd = durable ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
fail:
	close(fd);
	unlink(tmp);
	return -e;
}

/* Write dir/name atomically and durably: a temp file, fsync, rename, fsync the folder. */
int write_file_atomic(const char *dir, const char *name, const char *data, size_t len)
{
	return write_file_replace(dir, name, data, len, true);
}

static const char *sandbox_names[] = {
	[SANDBOX_READ_ONLY] = "read-only",
	[SANDBOX_WORKSPACE_WRITE] = "workspace-write",
	[SANDBOX_DANGER_FULL_ACCESS] = "danger-full-access",
};

const char *sandbox_name(enum sandbox s)
{
	return sandbox_names[s];
}

int sandbox_parse(const char *s, enum sandbox *out)
{
	size_t i;

	for (i = 0; i < sizeof sandbox_names / sizeof sandbox_names[0]; i++) {
		if (strcmp(s, sandbox_names[i]) == 0) {
			*out = (enum sandbox)i;
			return 0;
		}
	}
	return -EINVAL;
}

/* A user given by name, or by a uid that need not have a name. */
int user_parse(const char *s, uid_t *out)
{
	struct passwd pw, *pwp = NULL;
	char buf[4096], *end;
	unsigned long n;

	if (getpwnam_r(s, &pw, buf, sizeof buf, &pwp) == 0 && pwp != NULL) {
		*out = pw.pw_uid;
		return 0;
	}
	errno = 0;
	n = strtoul(s, &end, 10);
	if (*s < '0' || *s > '9' || *end != '\0' || errno != 0 || n >= (uid_t)-1)
		return -EINVAL;
	*out = (uid_t)n;
	return 0;
}

/* uid's name, or the number if it has none; NULL without memory. */
char *user_name(uid_t uid)
{
	struct passwd pw, *pwp = NULL;
	char buf[4096], *s;

	if (getpwuid_r(uid, &pw, buf, sizeof buf, &pwp) == 0 && pwp != NULL)
		return strdup(pw.pw_name);
	if (asprintf(&s, "%u", (unsigned)uid) < 0)
		return NULL;
	return s;
}

/* $AGENTFS_SOCKET, else /run/agentfs/agentfsd.sock as root, else under $XDG_RUNTIME_DIR. */
char *default_socket_path(void)
{
	const char *env = getenv("AGENTFS_SOCKET"), *xdg;
	char *p;

	if (env != NULL && *env != '\0')
		return strdup(env);
	if (geteuid() == 0)
		return strdup("/run/agentfs/agentfsd.sock");
	/* A user's own daemon there, else the system's (agentfsd's group may use it). */
	xdg = getenv("XDG_RUNTIME_DIR");
	if (xdg == NULL || *xdg == '\0')
		return strdup("/run/agentfs/agentfsd.sock");
	if (asprintf(&p, "%s/agentfs/agentfsd.sock", xdg) < 0)
		return NULL;
	if (access(p, F_OK) != 0) {
		free(p);
		return strdup("/run/agentfs/agentfsd.sock");
	}
	return p;
}

/* Bot names become socket and folder names: letters, digits, - and _ only. */
bool bot_name_ok(const char *s)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > BOT_NAME_MAX)
		return false;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_'))
			return false;
	}
	return s[0] != '-';
}

/*
 * One DNS-1123 label: 1 to 63 lowercase letters, digits and '-', starting
 * and ending with a letter or digit (a namespace, or a part of a name).
 */
static bool dns_label_ok(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
		return false;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return false;
	return true;
}

/*
 * A pod a bot names, "NAMESPACE/SERVICEACCOUNT": Kubernetes's own rules
 * (a namespace is a DNS-1123 label, a service account a DNS-1123
 * subdomain of at most 253 characters), so an entry can only ever match
 * what kubelet reports, and holds nothing a log line or path could trip on.
 */
bool pod_name_ok(const char *s)
{
	const char *slash = strchr(s, '/'), *sa, *dot;

	if (slash == NULL || !dns_label_ok(s, (size_t)(slash - s)))
		return false;
	sa = slash + 1;
	if (strlen(sa) > 253)
		return false;
	for (;;) {
		dot = strchr(sa, '.');
		if (!dns_label_ok(sa, dot != NULL ? (size_t)(dot - sa) : strlen(sa)))
			return false;
		if (dot == NULL)
			return true;
		sa = dot + 1;
	}
}

static const char *const event_types[] = {
	[FS_EV_REFUSED] = "refused", [FS_EV_CREATED] = "created", [FS_EV_MODIFIED] = "modified",
	[FS_EV_DELETED] = "deleted", [FS_EV_RENAMED] = "renamed",
};

/* Now, as seconds since the epoch with milliseconds. */
double event_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)(ts.tv_nsec / 1000000) / 1000.0;
}

/*
 * An event object (agentfs-protocol(7)) for what a mount reported; its
 * paths are joined to root (the mounted folder or the mount point).
 */
cJSON *event_from_fs(const struct fs_event *ev, const char *root)
{
	cJSON *o = cJSON_CreateObject();
	char *p = NULL;

	cJSON_AddNumberToObject(o, "time", event_now());
	cJSON_AddStringToObject(o, "type", event_types[ev->kind]);
	if (asprintf(&p, "%s%s", strcmp(root, "/") == 0 ? "" : root,
		     strcmp(ev->path, "/") == 0 && strcmp(root, "/") != 0 ? "" : ev->path) >= 0)
		cJSON_AddStringToObject(o, "path", p);
	free(p);
	if (ev->path2 != NULL &&
	    asprintf(&p, "%s%s", strcmp(root, "/") == 0 ? "" : root, ev->path2) >= 0) {
		cJSON_AddStringToObject(o, "to", p);
		free(p);
	}
	cJSON_AddBoolToObject(o, "dir", ev->dir);
	if (ev->kind != FS_EV_REFUSED)
		return o;
	cJSON_AddStringToObject(o, "op", ev->op);
	cJSON_AddStringToObject(o, "rule", ev->rule != NULL ? ev->rule : "");
	cJSON_AddStringToObject(o, "reason", ev->reason != NULL ? ev->reason : "");
	cJSON_AddNumberToObject(o, "pid", ev->pid);
	cJSON_AddStringToObject(o, "comm", ev->comm);
	return o;
}

static const char *ev_str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : "";
}

/*
 * S escaped (gg_escape) into OUT, at most CAP - 1 bytes. Longer, it keeps
 * its end behind "...", from a '/' near the cut if there is one, else from
 * an escape's backslash, never from inside a character: the end of a path
 * names what was touched, as the events keep the ends of long paths.
 */
static void escape_end(const char *s, char *out, size_t cap)
{
	size_t need = 4 * strlen(s) + 1, n, from, k;
	char *e;

	if (cap < 8) {
		if (cap > 0)
			out[0] = '\0';
		return;
	}
	e = malloc(need);
	if (e == NULL) {
		snprintf(out, cap, "?");
		return;
	}
	gg_escape(s, e, need);
	n = strlen(e);
	if (n < cap) {
		memcpy(out, e, n + 1);
	} else {
		from = n - (cap - 4);
		for (k = from; k < n && k < from + 64 && e[k] != '/'; k++)
			;
		if (k < n && e[k] == '/')
			from = k;
		else
			for (k = from; k < n && k < from + 4; k++)
				if (e[k] == '\\') { /* an escape's start */
					from = k;
					break;
				}
		while (from < n && ((unsigned char)e[from] & 0xc0) == 0x80)
			from++;
		snprintf(out, cap, "...%s", e + from);
	}
	free(e);
}

/*
 * One line of text (no newline) for an event object, as agentfs log prints
 * it: paths, names and messages escaped (gg_escape), so a bot's file name
 * cannot forge a line or drive the reader's terminal. Each field is escaped
 * within its own part of the line, so a long path of control bytes (four
 * bytes each, escaped) cannot push the target, rule, pid and command out
 * of it: a path and a target get a little under half of LEN each.
 */
void event_format(const cJSON *o, char *buf, size_t len)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "time");
	size_t part = len > 2048 ? (len - 1280) / 2 : len / 4;
	char when[32] = "-", bot[272], type[64], op[64], reason[512], comm[80];
	char *path = malloc(part + 1), *to = malloc(part + 1);
	time_t s;
	int n;

	if (path == NULL || to == NULL || len == 0) {
		if (len > 0)
			snprintf(buf, len, "(out of memory)");
		free(path);
		free(to);
		return;
	}
	if (cJSON_IsNumber(t)) {
		s = (time_t)t->valuedouble;
		strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", localtime(&s));
	}
	escape_end(ev_str(o, "bot"), bot, sizeof bot);
	escape_end(ev_str(o, "type"), type, sizeof type);
	escape_end(ev_str(o, "path"), path, part);
	escape_end(ev_str(o, "to"), to, part);
	n = snprintf(buf, len, "%s %s%s", when, bot, *bot != '\0' ? " " : "");
	if (n < 0 || (size_t)n >= len)
		goto out;
	if (strcmp(type, "refused") == 0) {
		escape_end(ev_str(o, "op"), op, sizeof op);
		escape_end(ev_str(o, "reason"), reason, sizeof reason);
		escape_end(ev_str(o, "comm"), comm, sizeof comm);
		snprintf(buf + n, len - (size_t)n, "refused %s of %s%s%s: %s (pid %.0f %s)", op,
			 path, *to != '\0' ? " to " : "", to, reason,
			 cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "pid")),
			 *comm != '\0' ? comm : "?");
	} else if (cJSON_GetObjectItemCaseSensitive(o, "message") != NULL) {
		escape_end(ev_str(o, "message"), path, part);
		snprintf(buf + n, len - (size_t)n, "%s: %s", type, path);
	} else if (strcmp(type, "renamed") == 0) {
		snprintf(buf + n, len - (size_t)n, "renamed %s -> %s", path, to);
	} else {
		snprintf(buf + n, len - (size_t)n, "%s %s", type, path);
	}
out:
	free(path);
	free(to);
}

/*
 * A small /proc (or other) text file, read once into buf and NUL-ended:
 * the length, or -1 with errno. NAME is relative to DIRFD (AT_FDCWD).
 */
ssize_t read_text(int dirfd, const char *name, char *buf, size_t cap)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC), e;
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, cap - 1);
	e = errno;
	close(fd);
	if (n < 0)
		return errno = e, -1;
	buf[n] = '\0';
	return n;
}

/*
 * A process's state letter, parent and, if start is not NULL, start time
 * (clock ticks after boot: with the pid, it names one process for good)
 * from /proc/PID/stat ("pid (comm) state ppid ...", where comm may hold
 * spaces and parentheses): 0, or -1 if it is gone.
 */
int proc_stat(pid_t pid, char *state, pid_t *ppid, unsigned long long *start)
{
	char path[64], buf[1024], *p;
	int i;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (read_text(AT_FDCWD, path, buf, sizeof buf) <= 0)
		return -1;
	/* the name, in parentheses, may hold anything: the fields follow the last ')' */
	p = strrchr(buf, ')');
	if (p == NULL || p[1] != ' ' || p[2] == '\0' || p[3] != ' ')
		return -1;
	*state = p[2];
	*ppid = (pid_t)atoi(p + 4);
	if (start == NULL)
		return 0;
	/* field 22, starttime; state is field 3 */
	for (p += 2, i = 3; i < 22 && p != NULL; i++)
		if ((p = strchr(p, ' ')) != NULL)
			p++;
	if (p == NULL || sscanf(p, "%llu", start) != 1)
		return -1;
	return 0;
}

/* A process's real uid from /proc/PID/status, or -1 if it is gone. */
long proc_real_uid(pid_t pid)
{
	char path[64], buf[4096], *p;
	unsigned long uid;

	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	if (read_text(AT_FDCWD, path, buf, sizeof buf) <= 0 ||
	    (p = strstr(buf, "\nUid:")) == NULL || sscanf(p, "\nUid: %lu", &uid) != 1)
		return -1;
	return (long)uid;
}

/*
 * A server takes its hard descriptor limit: the mounts' caches of looked-up
 * folders and files are half of it (fusefs), and with the usual soft limit
 * of 1024 a tree of more than 512 names would be opened again and again.
 */
void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

#define FUSE_MAGIC 0x65735546 /* statfs f_type of every FUSE mount, a bot's roots among them */
#define MSDOS_MAGIC 0x4d44
#define EXFAT_MAGIC 0x2011BAB0
#define NTFS3_MAGIC 0x7366746e
#define NTFS_MAGIC 0x5346544e

/* A file system whose owners prove nothing: a bot's root (FUSE) or one whose owners are a mount option */
static bool fs_owners_unproven(const char *real, const char *refusal, char *why, size_t len)
{
	struct statfs sfs;

	if (statfs(real, &sfs) != 0) {
		snprintf(why, len, "cannot check %s: %s", real, strerror(errno));
		return true;
	}
	if (sfs.f_type == FUSE_MAGIC || sfs.f_type == MSDOS_MAGIC || sfs.f_type == EXFAT_MAGIC ||
	    sfs.f_type == NTFS3_MAGIC || sfs.f_type == NTFS_MAGIC) {
		snprintf(why, len,
			 "%s is on a file system whose owners prove nothing (FUSE, FAT, exFAT, "
			 "NTFS): %s",
			 real, refusal);
		return true;
	}
	return false;
}

/*
 * REAL (a resolved path) and every folder above it belong to root or to
 * this process's user and no one else may write them (a sticky folder's
 * children owned by root or this user excepted).  False with why, which
 * names PATH (as given) and says it must be so because of WHAT.
 */
static bool chain_trusted(const char *real, const char *path, const char *what, char *why,
			  size_t len)
{
	char *walk = strdup(real), *cut;
	struct stat st;
	bool child_ok = true, ok = false;

	if (walk == NULL) {
		snprintf(why, len, "out of memory");
		return false;
	}
	/* the file, then each folder above it: WALK is cut one name shorter each time */
	for (;;) {
		const char *at = *walk ? walk : "/";

		if (stat(at, &st) != 0) {
			snprintf(why, len, "cannot check %s: %s", at, strerror(errno));
			break;
		}
		if ((st.st_uid != 0 && st.st_uid != geteuid()) ||
		    ((st.st_mode & (S_IWGRP | S_IWOTH)) &&
		     !(S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX) && child_ok))) {
			snprintf(why, len,
				 "%s is not trusted: %s, so it and every folder above it must "
				 "belong to root and be writable by no one else (%s: owner uid %u, "
				 "mode %04o)",
				 path, what, at, (unsigned)st.st_uid,
				 (unsigned)(st.st_mode & 07777));
			break;
		}
		child_ok = st.st_uid == 0 || st.st_uid == geteuid();
		if (!*walk) {
			ok = true;
			break;
		}
		cut = strrchr(walk, '/');
		*cut = '\0';
	}
	free(walk);
	return ok;
}

/*
 * NAME in the folder of this process's own program (/proc/self/exe), put in
 * buf (PATH_MAX bytes), if there is one there (lstat): a build tree, or
 * programs installed in one folder. Only programs we run ask; the caller
 * decides whether to trust it. false if there is none.
 */
bool prog_beside_self(const char *name, char *buf)
{
	struct stat st;
	char *slash;
	ssize_t n;

	n = readlink("/proc/self/exe", buf, PATH_MAX - 1);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	slash = strrchr(buf, '/');
	if (slash == NULL || (size_t)(slash + 1 - buf) + strlen(name) >= PATH_MAX)
		return false;
	strcpy(slash + 1, name);
	return lstat(buf, &st) == 0;
}

/*
 * A program agentfs runs for a bot must be one no bot could have written
 * (bwrap runs as root, or as the operator the bot runs as, outside the
 * sandbox): its resolved path passes chain_trusted, and it is on no FUSE
 * file system (a bot's root) nor one whose owners are a mount option. The
 * resolved path, which is what must be run, or NULL with why.
 */
char *prog_trusted(const char *path, char *why, size_t len)
{
	char *real = realpath(path, NULL);

	if (real == NULL) {
		snprintf(why, len, "cannot resolve %s: %s", path, strerror(errno));
		return NULL;
	}
	if (fs_owners_unproven(real, "agentfs will not run it for a bot", why, len) ||
	    !chain_trusted(real, path, "agentfs runs it for a bot", why, len)) {
		free(real);
		return NULL;
	}
	return real;
}

/*
 * A folder root keeps its sockets or state in, and goes on using by the
 * path it was given (binding, chown and chmod of a socket, the state's
 * files): no one but root may be able to change what that path leads to.
 * So each folder on the way, as given (a symbolic link is followed, and
 * where it leads is checked whole too, the link itself being safe in a
 * checked folder), passes chain_trusted; and the folder is on no file
 * system whose owners prove nothing.  Messages name the folder as SHOWN
 * (the one PATH leads on to, say).  0, or -1 with why.
 */
int dir_trusted(const char *path, const char *shown, const char *what, char *why, size_t len)
{
	char *prefix = strdup(path), *real, *p;
	struct stat st;
	int r = -1;

	if (prefix == NULL || path[0] != '/') {
		snprintf(why, len, "%s: not an absolute path", path);
		free(prefix);
		return -1;
	}
	/* each prefix of the path as given, "/" first, the folder itself last */
	for (p = prefix + 1;; p++) {
		bool end = *p == '\0';

		if (!end && *p != '/')
			continue;
		*p = '\0';
		real = realpath(prefix, NULL);
		if (real == NULL) {
			snprintf(why, len, "cannot resolve %s: %s", prefix, strerror(errno));
			goto out;
		}
		if (lstat(prefix, &st) != 0 ||
		    (S_ISLNK(st.st_mode) && st.st_uid != 0 && st.st_uid != geteuid())) {
			snprintf(
				why, len,
				"%s is not trusted: %s, and the symbolic link %s on its way is not "
				"root's",
				shown, what, prefix);
			free(real);
			goto out;
		}
		if (!chain_trusted(real, shown, what, why, len)) {
			free(real);
			goto out;
		}
		free(real);
		if (end)
			break;
		*p = '/';
	}
	if (!fs_owners_unproven(path, "agentfsd will not keep its sockets or state there", why,
				len))
		r = 0;
out:
	free(prefix);
	return r;
}

/* The first prog in the folders of search (as PATH), if trusted; NULL with why. */
char *prog_find_trusted(const char *prog, const char *search, char *why, size_t len)
{
	char *copy =
		strdup(search != NULL && *search != '\0' ? search : "/usr/local/bin:/usr/bin:/bin");
	char *dir, *save = NULL, *full, *real = NULL;

	snprintf(why, len, "%s not found in %s", prog, search != NULL ? search : "PATH");
	for (dir = copy != NULL ? strtok_r(copy, ":", &save) : NULL; dir != NULL;
	     dir = strtok_r(NULL, ":", &save)) {
		if (asprintf(&full, "%s/%s", dir, prog) < 0)
			break;
		if (access(full, X_OK) == 0) {
			real = prog_trusted(full, why, len);
			free(full);
			break;
		}
		free(full);
	}
	free(copy);
	return real;
}

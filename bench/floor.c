/* SPDX-License-Identifier: MIT */
/*
 * bench/floor: the least a single-threaded libfuse3 server can do, to show
 * what a FUSE round trip itself costs on a machine.  A read-only mirror of a
 * folder, read whole into memory before it mounts: LOOKUP, GETATTR, READLINK
 * and READDIR(PLUS) are answered from memory, so a request costs the
 * /dev/fuse read, a hash probe and the reply.  With -s each LOOKUP of a name
 * that exists also lstat()s it on the host first, the one syscall any
 * passthrough must make (and the one a cold cache makes slow), and answers
 * with what it found.
 *
 *   floor [-f] [-s] [-m] [-o OPTS] SOURCE MOUNTPOINT
 *
 * -o passes OPTS on to libfuse's session: built against libfuse 3.18 or
 * later, `-o io_uring` carries requests over the kernel's per-CPU io_uring
 * queues, served by one libfuse thread per CPU beside the main loop (so
 * the handlers below are safe to run on several threads at once).  -m
 * serves /dev/fuse with libfuse's multi-threaded loop instead of one
 * thread: the control that tells what io_uring's transport gives from
 * what its threads give.
 *
 * It is a measuring stick for bench/run --floor, not a filesystem: it never
 * sees a host change after its walk (run it over a tree nothing writes), and
 * everything that would write gets EROFS.  Node ids are indexes into one
 * array and are never freed, so FORGET has nothing to do.  Folders are not
 * opened (ENOSYS: the kernel then reads them with no OPENDIR round trip, as
 * agentfs has it), and READDIRPLUS gives attributes only for names whose
 * node the kernel does not hold (as agentfs does).  Timeouts are 1 s; a missing name gets a plain ENOENT,
 * as bindfs answers it.  Without -f it daemonises once mounted.
 */
#define FUSE_USE_VERSION 34
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define TIMEOUT 1.0

struct node {
	struct stat st;
	uint32_t parent;
	uint32_t nkids, akids;
	uint64_t nlookup; /* the kernel's references, as agentfs counts them (atomic) */
	uint32_t *kids;	  /* in the host's readdir order */
	char *name;	  /* "" for the root */
	char *path;	  /* the host path */
	char *link;	  /* a symbolic link's target */
};

static struct node *nodes; /* nodes[i] is node id i; 1 is the root, 0 unused */
static uint32_t nnodes = 1, anodes;
static uint32_t *htab; /* (parent, name) -> node id, open addressing; 0 empty */
static size_t hmask;
static char *src_root;
static int stat_each;	    /* -s */
static __thread char *rbuf; /* per thread: io_uring serves on one thread per CPU */
static __thread size_t rcap;

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p) {
		perror("floor");
		exit(1);
	}
	return p;
}

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	if (!d) {
		perror("floor");
		exit(1);
	}
	return d;
}

/* FNV-1a over the parent id and the name */
static size_t hash(uint32_t parent, const char *name)
{
	uint64_t h = 1469598103934665603ULL ^ parent;
	const unsigned char *p;

	h *= 1099511628211ULL;
	for (p = (const unsigned char *)name; *p; p++) {
		h ^= *p;
		h *= 1099511628211ULL;
	}
	return (size_t)(h ^ (h >> 29));
}

static uint32_t find(uint32_t parent, const char *name)
{
	size_t i;
	uint32_t id;

	for (i = hash(parent, name) & hmask; (id = htab[i]) != 0; i = (i + 1) & hmask)
		if (nodes[id].parent == parent && !strcmp(nodes[id].name, name))
			return id;
	return 0;
}

static uint32_t add_node(uint32_t parent, const char *name, const char *path, const struct stat *st)
{
	struct node *n, *p;
	uint32_t id;

	if (nnodes == UINT32_MAX) {
		fprintf(stderr, "floor: too many entries\n");
		exit(1);
	}
	if (nnodes >= anodes) {
		anodes = anodes ? anodes * 2 : 1024;
		nodes = xrealloc(nodes, anodes * sizeof(*nodes));
	}
	id = nnodes++;
	n = &nodes[id];
	memset(n, 0, sizeof(*n));
	n->st = *st;
	n->parent = parent;
	n->name = xstrdup(name);
	n->path = xstrdup(path);
	if (parent) {
		p = &nodes[parent];
		if (p->nkids == p->akids) {
			p->akids = p->akids ? p->akids * 2 : 8;
			p->kids = xrealloc(p->kids, p->akids * sizeof(*p->kids));
		}
		p->kids[p->nkids++] = id;
	}
	return id;
}

/* Reads the tree beneath DIRFD (node DIR, host path PATH) into memory; closes DIRFD */
static void walk(int dirfd, uint32_t dir, const char *path)
{
	char sub[PATH_MAX], target[PATH_MAX];
	struct dirent *de;
	struct stat st;
	uint32_t id;
	ssize_t k;
	DIR *d;
	int fd;

	d = fdopendir(dirfd);
	if (!d) {
		perror(path);
		close(dirfd);
		return;
	}
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			perror(de->d_name);
			continue;
		}
		if (snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name) >= (int)sizeof(sub)) {
			fprintf(stderr, "floor: path too long: %s/%s\n", path, de->d_name);
			continue;
		}
		id = add_node(dir, de->d_name, sub, &st);
		if (S_ISLNK(st.st_mode)) {
			k = readlinkat(dirfd, de->d_name, target, sizeof(target) - 1);
			target[k < 0 ? 0 : k] = '\0';
			nodes[id].link = xstrdup(target);
		} else if (S_ISDIR(st.st_mode)) {
			fd = openat(dirfd, de->d_name,
				    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0)
				perror(sub);
			else
				walk(fd, id, sub);
		}
	}
	closedir(d);
}

static void build_hash(void)
{
	size_t size = 1024, i;
	uint32_t id;

	while (size < 2 * (size_t)nnodes)
		size *= 2;
	htab = calloc(size, sizeof(*htab));
	if (!htab) {
		perror("floor");
		exit(1);
	}
	hmask = size - 1;
	for (id = 2; id < nnodes; id++) {
		for (i = hash(nodes[id].parent, nodes[id].name) & hmask; htab[i];
		     i = (i + 1) & hmask)
			;
		htab[i] = id;
	}
}

static struct node *get(fuse_ino_t ino)
{
	return ino >= 1 && ino < nnodes ? &nodes[ino] : NULL;
}

static void fill_entry(struct fuse_entry_param *e, uint32_t id)
{
	memset(e, 0, sizeof(*e));
	__atomic_fetch_add(&nodes[id].nlookup, 1, __ATOMIC_RELAXED);
	e->ino = id;
	e->attr = nodes[id].st;
	e->attr_timeout = TIMEOUT;
	e->entry_timeout = TIMEOUT;
}

static void op_init(void *data, struct fuse_conn_info *conn)
{
	(void)data;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	if (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT)
		conn->want |= FUSE_CAP_NO_OPENDIR_SUPPORT;
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct node *p = get(parent);
	struct fuse_entry_param e;
	struct stat st;
	uint32_t id;

	if (!p || !S_ISDIR(p->st.st_mode)) {
		fuse_reply_err(req, p ? ENOTDIR : ENOENT);
		return;
	}
	id = find((uint32_t)parent, name);
	if (!id) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_entry(&e, id);
	/* answered with what lstat found, kept out of the shared node (threads) */
	if (stat_each && !lstat(nodes[id].path, &st))
		e.attr = st;
	fuse_reply_entry(req, &e);
}

static void forget(fuse_ino_t ino, uint64_t nlookup)
{
	struct node *n = get(ino);
	uint64_t cur, next;

	if (!n)
		return;
	cur = __atomic_load_n(&n->nlookup, __ATOMIC_RELAXED);
	do
		next = cur - (nlookup < cur ? nlookup : cur);
	while (!__atomic_compare_exchange_n(&n->nlookup, &cur, next, 0, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED));
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	forget(ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	size_t i;

	for (i = 0; i < count; i++)
		forget(forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct node *n = get(ino);

	(void)fi;
	if (!n)
		fuse_reply_err(req, ENOENT);
	else
		fuse_reply_attr(req, &n->st, TIMEOUT);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct node *n = get(ino);

	if (!n || !n->link)
		fuse_reply_err(req, n ? EINVAL : ENOENT);
	else
		fuse_reply_readlink(req, n->link);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct node *n = get(ino);
	int fd;

	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
		fuse_reply_err(req, EROFS);
		return;
	}
	fd = open(n->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	fi->fh = (uint64_t)fd;
	fi->keep_cache = 1;
	if (fuse_reply_open(req, fi))
		close(fd);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	ssize_t k;

	(void)ino;
	if (size > rcap) {
		free(rbuf);
		rbuf = malloc(size);
		rcap = rbuf ? size : 0;
		if (!rbuf) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
	}
	k = pread((int)fi->fh, rbuf, size, off);
	if (k < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_buf(req, rbuf, (size_t)k);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	close((int)fi->fh);
	fuse_reply_err(req, 0);
}

/* Offsets: entry i (0 ".", 1 "..", 2 + k the k-th child) is followed by offset i + 1 */
static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, int plus)
{
	struct node *d = get(ino);
	struct fuse_entry_param e;
	size_t used = 0, need, i, total;
	const char *name;
	uint32_t id;
	char *buf;

	if (!d || !S_ISDIR(d->st.st_mode)) {
		fuse_reply_err(req, d ? ENOTDIR : ENOENT);
		return;
	}
	buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	total = 2 + (size_t)d->nkids;
	for (i = off < 0 ? 0 : (size_t)off; i < total; i++) {
		if (i < 2) {
			id = i == 0 || ino == 1 ? (uint32_t)ino : d->parent;
			name = i == 0 ? "." : "..";
			memset(&e, 0, sizeof(e)); /* ino 0: the kernel makes no entry */
			e.attr.st_ino = nodes[id].st.st_ino;
			e.attr.st_mode = S_IFDIR;
		} else {
			id = d->kids[i - 2];
			name = nodes[id].name;
			if (plus && !__atomic_load_n(&nodes[id].nlookup, __ATOMIC_RELAXED)) {
				fill_entry(&e, id);
			} else {
				/* the kernel holds it: no attributes (nodeid 0), as agentfs answers */
				memset(&e, 0, sizeof(e));
				e.attr.st_ino = nodes[id].st.st_ino;
				e.attr.st_mode = nodes[id].st.st_mode;
			}
		}
		if (plus)
			need = fuse_add_direntry_plus(req, buf + used, size - used, name, &e,
						      (off_t)(i + 1));
		else
			need = fuse_add_direntry(req, buf + used, size - used, name, &e.attr,
						 (off_t)(i + 1));
		if (need > size - used) {
			if (e.ino) /* not sent */
				__atomic_fetch_sub(&nodes[e.ino].nlookup, 1, __ATOMIC_RELAXED);
			break;
		}
		used += need;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino, size, off, 0);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino, size, off, 1);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;

	(void)ino;
	if (statvfs(src_root, &sv) < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_statfs(req, &sv);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	(void)ino;
	(void)attr;
	(void)to_set;
	(void)fi;
	fuse_reply_err(req, EROFS);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	(void)parent;
	(void)name;
	(void)mode;
	(void)rdev;
	fuse_reply_err(req, EROFS);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	op_mknod(req, parent, name, mode, 0);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	op_mknod(req, parent, name, 0, 0);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	(void)link;
	op_mknod(req, parent, name, 0, 0);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	(void)newparent;
	(void)newname;
	(void)flags;
	op_mknod(req, parent, name, 0, 0);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	(void)ino;
	op_mknod(req, newparent, newname, 0, 0);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	(void)fi;
	op_mknod(req, parent, name, mode, 0);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	(void)ino;
	(void)buf;
	(void)size;
	(void)off;
	(void)fi;
	fuse_reply_err(req, EROFS);
}

/*
 * Unset operations (flush, fsync, access, xattrs) get ENOSYS: the kernel
 * stops sending them; OPENDIR too once no_opendir is on, else libfuse opens.
 */
static const struct fuse_lowlevel_ops ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.readlink = op_readlink,
	.open = op_open,
	.read = op_read,
	.release = op_release,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.statfs = op_statfs,
	.setattr = op_setattr,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_unlink,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.create = op_create,
	.write = op_write,
};

int main(int argc, char **argv)
{
	char *fargv[] = {argv[0], "-o", "fsname=floor,subtype=floor,ro", NULL, NULL, NULL};
	struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
	static const char usage[] = "usage: floor [-f] [-s] [-m] [-o OPTS] SOURCE MOUNTPOINT\n";
	struct fuse_loop_config loop = {.clone_fd = 0, .max_idle_threads = 10};
	struct fuse_session *se;
	int foreground = 0, mt = 0, c, rfd, rc;
	struct stat rst;
	char *mnt;

	while ((c = getopt(argc, argv, "fsmo:")) != -1) {
		switch (c) {
		case 'f':
			foreground = 1;
			break;
		case 's':
			stat_each = 1;
			break;
		case 'm':
			mt = 1;
			break;
		case 'o':
			fargv[3] = "-o";
			fargv[4] = optarg;
			args.argc = 5;
			break;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (argc - optind != 2) {
		fputs(usage, stderr);
		return 2;
	}
	src_root = realpath(argv[optind], NULL);
	mnt = realpath(argv[optind + 1], NULL);
	if (!src_root || !mnt) {
		perror("floor");
		return 1;
	}
	rfd = open(src_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0 || fstat(rfd, &rst) < 0) {
		perror(src_root);
		return 1;
	}
	add_node(0, "", src_root, &rst);
	walk(rfd, 1, strcmp(src_root, "/") ? src_root : "");
	build_hash();

	se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	if (!se)
		return 1;
	if (fuse_set_signal_handlers(se) || fuse_session_mount(se, mnt)) {
		fuse_session_destroy(se);
		return 1;
	}
	fuse_daemonize(foreground);
	rc = mt ? fuse_session_loop_mt(se, &loop) : fuse_session_loop(se);
	fuse_session_unmount(se);
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	return rc ? 1 : 0;
}

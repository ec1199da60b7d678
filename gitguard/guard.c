/* SPDX-License-Identifier: MIT */
/* A guard for one writable root and the view it shares: their life, tables and the rule names. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "gitguard/ggutil.h"
#include "gitguard/guard-int.h"

void guard_logf(struct guard *g, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!g->log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	g->log(g->log_arg, msg);
}

/* Git compares these names exactly, but a casefolded folder would match any case. */
bool name_is(const char *name, const char *want)
{
	return !strcasecmp(name, want);
}

bool name_is_dotgit(const char *name)
{
	return name_is(name, ".git");
}

/* NAME.git, the usual name of a bare repository */
bool name_is_bare(const char *name)
{
	size_t n = strlen(name);

	return n > 4 && !strcasecmp(name + n - 4, ".git");
}

/* Moves the view's generation: every guard sharing it recomputes its classes. */
void guard_bump(struct guard *g)
{
	atomic_fetch_add(&g->view->gen, 1);
}

/* The generation: it moves whenever classes computed before may be wrong now. */
uint64_t guard_generation(struct guard *g)
{
	return atomic_load(&g->view->gen);
}

static int recs_put(struct guard_recs *r, uint64_t dev, uint64_t ino, int64_t born,
		    const char *name, uint8_t flags, uint8_t rule)
{
	struct guard_rec *v;
	size_t i;

	for (i = 0; i < r->n; i++) {
		v = &r->v[i];
		if (v->dev == dev && v->ino == ino && !v->name == !name &&
		    (!name || !strcmp(v->name, name))) {
			uint8_t links = v->flags & flags & REC_LINKS;

			if ((v->flags | flags) != v->flags && !v->rule)
				v->rule = rule;
			v->flags = ((v->flags | flags) & ~REC_LINKS) | links;
			/* two births for one number: it may be either file's, so no date */
			if (v->born != born)
				v->born = 0;
			return 0;
		}
	}
	if (gg_grow(&r->v, &r->alloc, r->n + 1, sizeof(*r->v), 8))
		return -ENOMEM;
	v = &r->v[r->n];
	v->dev = dev;
	v->ino = ino;
	v->born = born;
	v->name = NULL;
	if (name && !(v->name = strdup(name)))
		return -ENOMEM;
	v->flags = flags;
	v->rule = rule;
	r->n++;
	return 0;
}

int recs_add(struct guard_recs *r, uint64_t dev, uint64_t ino, const char *name, uint8_t flags,
	     uint8_t rule)
{
	return recs_put(r, dev, ino, 0, name, flags, rule);
}

/*
 * The birth time of NAME in DIRFD (NAME "": DIRFD itself), in nanoseconds,
 * if it is the file (DEV, INO); 0 if the file system keeps none, or NAME is
 * another file now.
 */
int64_t guard_born_at(int dirfd, const char *name, uint64_t dev, uint64_t ino)
{
	struct statx sx;
	int flags = AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC | (*name ? 0 : AT_EMPTY_PATH);

	if (statx(dirfd, name, flags, STATX_INO | STATX_BTIME, &sx) < 0 ||
	    !(sx.stx_mask & STATX_BTIME) || sx.stx_ino != ino ||
	    makedev(sx.stx_dev_major, sx.stx_dev_minor) != dev)
		return 0;
	return (int64_t)sx.stx_btime.tv_sec * 1000000000 + sx.stx_btime.tv_nsec;
}

/*
 * Records the file NAME in DIRFD, whose lstat is ST, by its inode and birth
 * time: a scan's record of a protected file (a hook, a config) that outlives
 * the file until the next scan covers no new file that gets its number.
 */
int recs_add_file(struct guard_recs *r, int dirfd, const char *name, const struct stat *st,
		  uint8_t flags, uint8_t rule)
{
	return recs_put(r, st->st_dev, st->st_ino, guard_born_at(dirfd, name, st->st_dev, st->st_ino),
			NULL, flags, rule);
}

/* Whether (dev, ino) is recorded, without a name, with one of FLAGS */
bool recs_has(const struct guard_recs *r, uint64_t dev, uint64_t ino, uint8_t flags)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		if (r->v[i].dev == dev && r->v[i].ino == ino && !r->v[i].name &&
		    (r->v[i].flags & flags))
			return true;
	return false;
}

void recs_clear(struct guard_recs *r)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		free(r->v[i].name);
	free(r->v);
	r->v = NULL;
	r->n = r->alloc = 0;
}

/* Order by (dev, ino), for qsort and bsearch of the tables */
int guard_devino_cmp(uint64_t adev, uint64_t aino, uint64_t bdev, uint64_t bino)
{
	if (adev != bdev)
		return adev < bdev ? -1 : 1;
	if (aino != bino)
		return aino < bino ? -1 : 1;
	return 0;
}

static int rec_cmp(const void *a, const void *b)
{
	const struct guard_rec *x = a, *y = b;

	return guard_devino_cmp(x->dev, x->ino, y->dev, y->ino);
}

static void tab_append(struct guard_rec *tab, size_t *n, const struct guard_recs *r)
{
	if (r->n)
		memcpy(tab + *n, r->v, r->n * sizeof(*r->v));
	*n += r->n;
}

/* Sorted copy of the records of the N lists R, into *TAB and *NTAB; -ENOMEM keeps the old */
static int tab_build(struct guard *g, const struct guard_recs *const *r, size_t n,
		     struct guard_rec **tabp, size_t *ntabp)
{
	struct guard_rec *tab;
	size_t i, total = 0, k = 0;

	for (i = 0; i < n; i++)
		total += r[i]->n;
	tab = total ? malloc(total * sizeof(*tab)) : NULL;
	if (total && !tab) {
		/* keep the old table: stale beats empty */
		guard_logf(g, "gitguard: out of memory rebuilding the protected table");
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		tab_append(tab, &k, r[i]);
	if (k)
		qsort(tab, k, sizeof(*tab), rec_cmp);
	free(*tabp);
	*tabp = tab;
	*ntabp = k;
	return 0;
}

/*
 * Rebuilds the view's sorted table from every repository's records and the
 * misc ones; the view's lock held exclusive.  -ENOMEM leaves the old table,
 * whose names are still borrowed.
 */
int guard_tab_rebuild(struct guard *g)
{
	struct guard_view *v = g->view;
	const struct guard_recs **r;
	size_t i;
	int rc;

	r = malloc((v->nrepos + 1) * sizeof(*r));
	if (!r) {
		guard_logf(g, "gitguard: out of memory rebuilding the protected table");
		return -ENOMEM;
	}
	r[0] = &v->misc;
	for (i = 0; i < v->nrepos; i++)
		r[i + 1] = &v->repos[i]->recs;
	rc = tab_build(g, r, v->nrepos + 1, &v->tab, &v->ntab);
	free(r);
	if (!rc)
		atomic_store(&v->ntab_hint, v->ntab);
	return rc;
}

/* Rebuilds the guard's own table (the bot's .git files, H1); g->lock held exclusive */
int guard_own_rebuild(struct guard *g)
{
	const struct guard_recs *r[2] = {&g->botrecs, &g->homerecs};
	int rc;

	rc = tab_build(g, r, 2, &g->own, &g->nown);
	if (!rc)
		atomic_store(&g->nown_hint, g->nown);
	return rc;
}

static size_t tab_first(const struct guard_rec *tab, size_t ntab, uint64_t dev, uint64_t ino)
{
	size_t lo = 0, hi = ntab, mid;
	struct guard_rec key = {.dev = dev, .ino = ino};

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (rec_cmp(&tab[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Flags recorded for an inode in TAB: those of its records that cover the
 * file born at BORN (0: unknown, every record covers it).  *DATED, if given,
 * is set when a record of the number carries a birth time.
 */
static uint8_t tab_inode(const struct guard_rec *tab, size_t ntab, uint64_t dev, uint64_t ino,
			 int64_t born, uint8_t *rule, bool *dated)
{
	uint8_t flags = 0, links = REC_LINKS;
	size_t i;

	for (i = tab_first(tab, ntab, dev, ino); i < ntab; i++) {
		const struct guard_rec *r = &tab[i];

		if (r->dev != dev || r->ino != ino)
			break;
		if (r->name)
			continue;
		if (r->born && dated)
			*dated = true;
		if (r->born && born && r->born != born)
			continue;
		if (!flags && rule)
			*rule = r->rule;
		flags |= r->flags;
		links &= r->flags;
	}
	return (flags & ~REC_LINKS) | (flags ? links : 0);
}

/* Flags recorded for a missing NAME in the folder (dev, ino) in TAB */
static uint8_t tab_missing(const struct guard_rec *tab, size_t ntab, uint64_t dev, uint64_t ino,
			   const char *name, uint8_t *rule)
{
	size_t i;

	for (i = tab_first(tab, ntab, dev, ino); i < ntab; i++) {
		const struct guard_rec *r = &tab[i];

		if (r->dev != dev || r->ino != ino)
			break;
		if (r->name && !strcmp(r->name, name)) {
			if (rule)
				*rule = r->rule;
			return r->flags;
		}
	}
	return 0;
}

/* Flags the view records for an inode; its lock held shared */
uint8_t guard_view_inode(struct guard_view *v, uint64_t dev, uint64_t ino, uint8_t *rule)
{
	return tab_inode(v->tab, v->ntab, dev, ino, 0, rule, NULL);
}

bool guard_rec_any(struct guard *g)
{
	return atomic_load(&g->view->ntab_hint) || atomic_load(&g->nown_hint);
}

/*
 * Flags recorded for an inode, the view's and then the guard's own, that
 * cover the file born at BORN (0: any); no lock held.
 */
static uint8_t rec_inode(struct guard *g, uint64_t dev, uint64_t ino, int64_t born, uint8_t *rule,
			 bool *dated)
{
	struct guard_view *v = g->view;
	uint8_t f = 0, o = 0, r1 = 0, r2 = 0;

	if (atomic_load(&v->ntab_hint)) {
		pthread_rwlock_rdlock(&v->lock);
		f = tab_inode(v->tab, v->ntab, dev, ino, born, &r1, dated);
		pthread_rwlock_unlock(&v->lock);
	}
	if (atomic_load(&g->nown_hint)) {
		pthread_rwlock_rdlock(&g->lock);
		o = tab_inode(g->own, g->nown, dev, ino, born, &r2, dated);
		pthread_rwlock_unlock(&g->lock);
	}
	if (rule && (f || o))
		*rule = f ? r1 : r2;
	if (f && o)
		return ((f | o) & ~REC_LINKS) | (f & o & REC_LINKS);
	return f | o;
}

uint8_t guard_rec_inode(struct guard *g, uint64_t dev, uint64_t ino, uint8_t *rule)
{
	return rec_inode(g, dev, ino, 0, rule, NULL);
}

/*
 * Flags recorded for the file ST, reached as FD (O_PATH; -1: none) or NAME
 * in DIRFD: only records of the file itself, not of a gone file whose number
 * it has, when a record says when its file was born.  The birth time is
 * read only then (a statx): most numbers carry no record at all.
 */
uint8_t guard_rec_file(struct guard *g, const struct stat *st, int fd, int dirfd, const char *name,
		       uint8_t *rule)
{
	bool dated = false;
	int64_t born = 0;
	uint8_t f;

	f = rec_inode(g, st->st_dev, st->st_ino, 0, rule, &dated);
	if (!dated)
		return f;
	if (fd >= 0)
		born = guard_born_at(fd, "", st->st_dev, st->st_ino);
	else if (dirfd >= 0 && name)
		born = guard_born_at(dirfd, name, st->st_dev, st->st_ino);
	return born ? rec_inode(g, st->st_dev, st->st_ino, born, rule, NULL) : f;
}

/* Flags recorded for a missing NAME in the folder (dev, ino); no lock held. */
uint8_t guard_rec_missing(struct guard *g, uint64_t dev, uint64_t ino, const char *name,
			  uint8_t *rule)
{
	struct guard_view *v = g->view;
	uint8_t f = 0, o = 0, r1 = 0, r2 = 0;

	if (atomic_load(&v->ntab_hint)) {
		pthread_rwlock_rdlock(&v->lock);
		f = tab_missing(v->tab, v->ntab, dev, ino, name, &r1);
		pthread_rwlock_unlock(&v->lock);
	}
	if (atomic_load(&g->nown_hint)) {
		pthread_rwlock_rdlock(&g->lock);
		o = tab_missing(g->own, g->nown, dev, ino, name, &r2);
		pthread_rwlock_unlock(&g->lock);
	}
	if (rule && (f || o))
		*rule = f ? r1 : r2;
	return f | o;
}

/*
 * Is (dev, ino), open as FD (-1: not at hand), a repository this guard's bot
 * made?  Not one with the number of a repository the bot made and removed:
 * a record with a birth time covers only the folder born then, and without
 * FD to read the folder's, it covers nothing (the folder stays guarded).
 */
bool guard_bot_repo(struct guard *g, uint64_t dev, uint64_t ino, int fd)
{
	int64_t born = 0;
	bool found = false;
	size_t i;

	if (!atomic_load(&g->has_bots))
		return false;
	pthread_rwlock_rdlock(&g->lock);
	for (i = 0; i < g->nbots && !found; i++)
		if (g->bots[i].dev == dev && g->bots[i].ino == ino) {
			born = g->bots[i].born;
			found = true;
		}
	pthread_rwlock_unlock(&g->lock);
	if (found && born)
		found = fd >= 0 && guard_born_at(fd, "", dev, ino) == born;
	return found;
}

/* Is (dev, ino) the root of any guard of the view?  The guard's own without a lock */
bool guard_is_root(struct guard *g, uint64_t dev, uint64_t ino)
{
	struct guard_view *v = g->view;
	bool found = false;
	size_t i;

	if (dev == g->root_dev && ino == g->root_ino)
		return true;
	pthread_rwlock_rdlock(&v->lock);
	for (i = 0; i < v->nroots && !found; i++)
		found = v->roots[i].dev == dev && v->roots[i].ino == ino;
	pthread_rwlock_unlock(&v->lock);
	return found;
}

size_t guard_root_count(struct guard *g)
{
	size_t n;

	pthread_rwlock_rdlock(&g->view->lock);
	n = g->view->nroots;
	pthread_rwlock_unlock(&g->view->lock);
	return n;
}

size_t guard_root_owners(struct guard *g, uid_t *out, size_t max)
{
	struct guard_view *v = g->view;
	size_t i, j, n = 0;

	pthread_rwlock_rdlock(&v->lock);
	for (i = 0; i < v->nroots && n < max; i++) {
		for (j = 0; j < n && out[j] != v->roots[i].uid; j++)
			;
		if (j == n)
			out[n++] = v->roots[i].uid;
	}
	pthread_rwlock_unlock(&v->lock);
	return n;
}

/* PATH normalised (ggutil.h meaning 1), "/" as "": compared as a prefix */
static char *normalise_root(const char *path)
{
	size_t sz = strlen(path) + 2;
	char *out = malloc(sz);

	if (out && gg_path_abs(path, out, sz)) {
		free(out);
		return NULL;
	}
	if (out && !strcmp(out, "/"))
		out[0] = '\0';
	return out;
}

int guard_err_set(struct guard_err *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		err->code = code;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return code;
}

/* A new view with one reference, the caller's: 0 or -ENOMEM, -errno */
int guard_view_new(struct guard_view **vp)
{
	struct guard_view *v;
	int rc;

	*vp = NULL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	rc = pthread_rwlock_init(&v->lock, NULL);
	if (rc) {
		free(v);
		return -rc;
	}
	rc = pthread_mutex_init(&v->homes_scan, NULL);
	if (rc) {
		pthread_rwlock_destroy(&v->lock);
		free(v);
		return -rc;
	}
	atomic_init(&v->refs, 1);
	atomic_init(&v->gen, 1);
	atomic_init(&v->ntab_hint, 0);
	atomic_init(&v->reval_ms, 0);
	atomic_init(&v->roots_gen, 1);
	/*
	 * Names made or moved in on the roots' filesystems, by anyone: a
	 * repository the person makes on the host where a bot already holds
	 * folders (its cwd) moves the generation (guard_revalidate). Without
	 * fanotify (an older kernel, no CAP_SYS_ADMIN) only the root and the
	 * names a decision meets are looked at again.
	 */
	v->fan_fd = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | FAN_REPORT_DFID_NAME,
				  O_RDONLY | O_CLOEXEC);
	v->fan_mnt = -1;
	*vp = v;
	return 0;
}

static void view_free(struct guard_view *v)
{
	size_t i;

	for (i = 0; i < v->nrepos; i++)
		guard_repo_free(v->repos[i]);
	free(v->repos);
	recs_clear(&v->misc);
	recs_clear(&v->botmade);
	for (i = 0; i < v->ntops; i++)
		close(v->tops[i].fd);
	free(v->tops);
	free(v->tab);
	free(v->roots);
	guard_homes_forget(v);
	if (v->fan_fd >= 0)
		close(v->fan_fd);
	if (v->fan_mnt >= 0)
		close(v->fan_mnt);
	pthread_mutex_destroy(&v->homes_scan);
	pthread_rwlock_destroy(&v->lock);
	free(v);
}

static pthread_mutex_t process_lock = PTHREAD_MUTEX_INITIALIZER;
static struct guard_view *process_view; /* under process_lock; holds no reference */

/* Drops a reference; the last frees the view (and forgets it as the process's) */
void guard_view_put(struct guard_view *v)
{
	if (!v)
		return;
	pthread_mutex_lock(&process_lock);
	if (atomic_fetch_sub(&v->refs, 1) != 1) {
		pthread_mutex_unlock(&process_lock);
		return;
	}
	if (process_view == v)
		process_view = NULL;
	pthread_mutex_unlock(&process_lock);
	view_free(v);
}

/* The process-wide view, with a reference for the caller (made on first use) */
int guard_view_process(struct guard_view **vp)
{
	int rc = 0;

	pthread_mutex_lock(&process_lock);
	if (process_view)
		atomic_fetch_add(&process_view->refs, 1);
	else
		rc = guard_view_new(&process_view);
	*vp = process_view;
	pthread_mutex_unlock(&process_lock);
	return rc;
}

/* G's root joins its view; roots_gen moves if the view did not know that root */
static int view_join(struct guard *g, uid_t uid)
{
	struct guard_view *v = g->view;
	struct guard_root *slot = NULL;
	size_t i;

	/* the root's whole filesystem: a repository may be made above the root too */
	if (v->fan_fd >= 0)
		fanotify_mark(v->fan_fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM,
			      FAN_CREATE | FAN_MOVED_TO | FAN_ONDIR, g->root_fd, ".");
	pthread_rwlock_wrlock(&v->lock);
	if (v->fan_fd >= 0 && v->fan_mnt < 0)
		v->fan_mnt = openat(g->root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (i = 0; i < v->nroots && !slot; i++)
		if (v->roots[i].dev == g->root_dev && v->roots[i].ino == g->root_ino)
			slot = &v->roots[i];
	if (slot) {
		slot->live++;
		pthread_rwlock_unlock(&v->lock);
		return 0;
	}
	/* full: a root no guard holds any more makes room */
	for (i = 0; v->nroots >= GUARD_VIEW_ROOTS && i < v->nroots && !slot; i++)
		if (!v->roots[i].live)
			slot = &v->roots[i];
	if (!slot && gg_grow(&v->roots, &v->aroots, v->nroots + 1, sizeof(*v->roots), 4)) {
		pthread_rwlock_unlock(&v->lock);
		return -ENOMEM;
	}
	if (!slot)
		slot = &v->roots[v->nroots++];
	*slot = (struct guard_root){g->root_dev, g->root_ino, uid, 1};
	/* what was scanned before is scanned again, with this root inside */
	if (v->nrepos)
		atomic_fetch_add(&v->roots_gen, 1);
	pthread_rwlock_unlock(&v->lock);
	return 0;
}

/*
 * G's root leaves its view.  It stays one of the view's roots for path
 * resolution, so what scans recorded inside it stays recorded, rescans
 * included: stricter, never looser than while it was mounted.
 */
static void view_leave(struct guard *g)
{
	struct guard_view *v = g->view;
	size_t i;

	pthread_rwlock_wrlock(&v->lock);
	for (i = 0; i < v->nroots; i++)
		if (v->roots[i].dev == g->root_dev && v->roots[i].ino == g->root_ino &&
		    v->roots[i].live) {
			v->roots[i].live--;
			break;
		}
	pthread_rwlock_unlock(&v->lock);
}

/* Frees what guard_open made before the view was joined */
static void guard_undo(struct guard *g)
{
	free(g->root_path);
	free(g->linked_wt);
	if (g->root_fd >= 0)
		close(g->root_fd);
	free(g);
}

/*
 * Makes a guard for the writable root ROOT_FD (any fd of the root folder; it
 * is duplicated).  opts may be NULL; opts->view NULL gives the guard a view
 * of its own.
 */
int guard_open(int root_fd, const struct guard_opts *opts, struct guard **gp, struct guard_err *err)
{
	const char *shown = opts && opts->root_path ? opts->root_path : "(fd)";
	struct guard *g;
	struct stat st;
	int rc;

	*gp = NULL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return guard_err_set(err, -ENOMEM, "gitguard: out of memory");
	g->root_fd = fcntl(root_fd, F_DUPFD_CLOEXEC, 3);
	if (g->root_fd < 0 || fstat(g->root_fd, &st) < 0) {
		rc = -errno;
		guard_undo(g);
		return guard_err_set(err, rc, "gitguard: root %s: %s", shown, strerror(-rc));
	}
	/* what guard_root_revalidate compares with */
	atomic_init(&g->root_repo, !fstatat(g->root_fd, ".git", &st, AT_SYMLINK_NOFOLLOW) ||
					   guard_shape(g->root_fd, NULL));
	if (fstat(g->root_fd, &st) < 0) {
		rc = -errno;
		guard_undo(g);
		return guard_err_set(err, rc, "gitguard: root %s: %s", shown, strerror(-rc));
	}
	if (!S_ISDIR(st.st_mode)) {
		guard_undo(g);
		return guard_err_set(err, -ENOTDIR, "gitguard: root %s is not a folder", shown);
	}
	g->root_dev = st.st_dev;
	g->root_ino = st.st_ino;
	if (opts && opts->root_path && opts->root_path[0] != '/') {
		guard_undo(g);
		return guard_err_set(err, -EINVAL, "gitguard: root path %s is not absolute",
				     opts->root_path);
	}
	if (opts && opts->root_path && !(g->root_path = normalise_root(opts->root_path))) {
		guard_undo(g);
		return guard_err_set(err, -ENOMEM, "gitguard: out of memory");
	}
	if (opts) {
		g->allow_new = opts->allow_new_repos;
		g->log = opts->log;
		g->log_arg = opts->log_arg;
	}
	if (opts && opts->linked_worktree && !(g->linked_wt = strdup(opts->linked_worktree))) {
		guard_undo(g);
		return guard_err_set(err, -ENOMEM, "gitguard: out of memory");
	}
	rc = pthread_rwlock_init(&g->lock, NULL);
	if (rc) {
		guard_undo(g);
		return guard_err_set(err, -rc, "gitguard: rwlock: %s", strerror(rc));
	}
	atomic_init(&g->nown_hint, 0);
	if (opts && opts->view) {
		atomic_fetch_add(&opts->view->refs, 1);
		g->view = opts->view;
	} else if ((rc = guard_view_new(&g->view)) != 0) {
		pthread_rwlock_destroy(&g->lock);
		guard_undo(g);
		return guard_err_set(err, rc, "gitguard: view: %s", strerror(-rc));
	}
	rc = view_join(g, st.st_uid);
	if (rc) {
		guard_view_put(g->view);
		pthread_rwlock_destroy(&g->lock);
		guard_undo(g);
		return guard_err_set(err, rc, "gitguard: out of memory");
	}
	rc = guard_homes_load(g, opts ? opts->extra_homes : NULL);
	if (rc) {
		guard_free(g);
		return guard_err_set(err, rc, "gitguard: home folders: %s", strerror(-rc));
	}
	*gp = g;
	return 0;
}

void guard_repo_free(struct guard_repo *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->nhooks_rel; i++)
		free(r->hooks_rel[i]);
	free(r->hooks_rel);
	for (i = 0; i < r->nhooks_abs; i++)
		free(r->hooks_abs[i]);
	free(r->hooks_abs);
	if (r->watch) {
		for (i = 0; i < r->watch->n; i++) {
			/* shared: the git folder's, or none for a full path */
			if (r->watch->f[i].dirfd >= 0 && r->watch->f[i].dirfd != r->watch->gfd)
				close(r->watch->f[i].dirfd);
			free(r->watch->f[i].name);
		}
		if (r->watch->gfd >= 0)
			close(r->watch->gfd);
		free(r->watch->f);
		free(r->watch);
	}
	recs_clear(&r->recs);
	free(r);
}

void guard_free(struct guard *g)
{
	size_t i;

	if (!g)
		return;
	view_leave(g);
	guard_view_put(g->view);
	for (i = 0; i < g->nbots; i++)
		free(g->bots[i].path);
	free(g->bots);
	recs_clear(&g->botrecs);
	free(g->own);
	guard_homes_free(g);
	pthread_rwlock_destroy(&g->lock);
	free(g->root_path);
	free(g->linked_wt);
	close(g->root_fd);
	free(g);
}

/* Calls FN for each repository the bot made, with the path fusefs gave if any. */
void guard_new_repos(struct guard *g,
		     void (*fn)(void *arg, uint64_t dev, uint64_t ino, const char *path), void *arg)
{
	size_t i;

	pthread_rwlock_rdlock(&g->lock);
	for (i = 0; i < g->nbots; i++)
		fn(arg, g->bots[i].dev, g->bots[i].ino, g->bots[i].path);
	pthread_rwlock_unlock(&g->lock);
}


/* Turn allow_new_repos on or off for the next operations (a bot's configure). */
void guard_set_allow_new_repos(struct guard *g, bool allow)
{
	atomic_store(&g->allow_new, allow);
}

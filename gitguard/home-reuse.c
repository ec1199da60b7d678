/* SPDX-License-Identifier: MIT */
/*
 * H1: the last home scan of a view, for the next guard_open.  A daemon
 * that mounts many roots at once (its start after a restart, a burst of
 * bots) would otherwise walk every home of the host once a mount, about
 * 1,400 system calls (2.5-4.5 ms) each time. What a scan finds depends on the host
 * and on which folders are roots (resolve.c goes inside at one), so a guard
 * takes a scan over only when all of these hold:
 *   - its root is none of the folders the scan's walks asked about (the
 *     trail): the scan would have walked the same way with it;
 *   - none of the files it read or found missing changed since (as
 *     guard_homes_revalidate looks for an open guard);
 *   - it is at most HOME_REUSE_MS old: what a guard learns only when it
 *     opens (the homes, the links in ~/.ssh and ~/.gnupg) is then as fresh
 *     as for a guard opened that much earlier.
 * Records inside other roots that come with it are of files no walk of
 * this guard's mount reaches, or ones it must guard as well.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gitguard/guard-int.h"
#include "gitguard/home-int.h"

#define HOME_REUSE_MS 2000

struct home_reuse {
	pthread_mutex_t lock; /* everything below */
	bool valid;
	int64_t when_ms; /* CLOCK_MONOTONIC */
	char **extra;	 /* the scan's extra homes (guard_opts.extra_homes) */
	size_t nextra;
	char **dirs; /* home_dirs */
	size_t ndirs;
	struct guard_home *tab; /* homes */
	size_t ntab;
	struct guard_recs recs;
	struct guard_wfile *w;
	size_t nw;
	struct gg_trail trail; /* sorted */
	unsigned long taken;   /* scans taken over, for tests */
};

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void names_free(char **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void reuse_clear(struct home_reuse *c)
{
	names_free(c->extra, c->nextra);
	names_free(c->dirs, c->ndirs);
	c->extra = NULL;
	c->nextra = 0;
	free(c->tab);
	recs_clear(&c->recs);
	home_wfiles_free(c->w, c->nw);
	free(c->trail.v);
	memset(&c->trail, 0, sizeof(c->trail));
	c->dirs = NULL;
	c->ndirs = c->ntab = c->nw = 0;
	c->tab = NULL;
	c->w = NULL;
	c->valid = false;
}

/* At view_free */
void guard_homes_forget(struct guard_view *v)
{
	if (v->homes == NULL)
		return;
	reuse_clear(v->homes);
	pthread_mutex_destroy(&v->homes->lock);
	free(v->homes);
	v->homes = NULL;
}

static size_t names_count(const char *const *v)
{
	size_t n = 0;

	while (v && v[n])
		n++;
	return n;
}

/* How many guard_opens of V took a scan over */
unsigned long guard_homes_taken(struct guard_view *v)
{
	struct home_reuse *c;
	unsigned long n = 0;

	pthread_rwlock_rdlock(&v->lock);
	c = v->homes;
	pthread_rwlock_unlock(&v->lock);
	if (c) {
		pthread_mutex_lock(&c->lock);
		n = c->taken;
		pthread_mutex_unlock(&c->lock);
	}
	return n;
}

static int names_copy(char ***out, const char *const *in, size_t n)
{
	size_t i;

	*out = calloc(n + 1, sizeof(**out));
	for (i = 0; *out && i < n; i++) {
		if (!((*out)[i] = strdup(in[i]))) {
			names_free(*out, i);
			*out = NULL;
		}
	}
	return *out ? 0 : -ENOMEM;
}

static int recs_copy(struct guard_recs *out, const struct guard_recs *in)
{
	size_t i;

	out->v = calloc(in->n + 1, sizeof(*out->v));
	if (!out->v)
		return -ENOMEM;
	out->alloc = in->n + 1;
	for (i = 0; i < in->n; i++, out->n++) {
		out->v[i] = in->v[i];
		if (in->v[i].name && !(out->v[i].name = strdup(in->v[i].name)))
			return -ENOMEM;
	}
	return 0;
}

static int wfiles_copy(struct guard_wfile **out, size_t *nout, const struct guard_wfile *in,
		       size_t n)
{
	size_t i;

	*out = calloc(n + 1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (i = 0; i < n; i++, (*nout)++) {
		(*out)[i] = in[i];
		if (!((*out)[i].name = strdup(in[i].name)))
			return -ENOMEM;
	}
	return 0;
}

static int tab_copy(struct guard_home **out, const struct guard_home *in, size_t n)
{
	*out = malloc((n + 1) * sizeof(**out));
	if (*out && n)
		memcpy(*out, in, n * sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

/* Was the scan of other homes, is the root of G on its trail, has a file it read changed? */
static bool reuse_stale(struct guard *g, struct home_reuse *c, const char *const *extra)
{
	struct guard_home key = {g->root_dev, g->root_ino};
	size_t i;

	if (!c->valid || c->trail.lost || mono_ms() - c->when_ms > HOME_REUSE_MS ||
	    names_count(extra) != c->nextra)
		return true;
	for (i = 0; i < c->nextra; i++)
		if (strcmp(extra[i], c->extra[i]))
			return true;
	if (c->trail.n && bsearch(&key, c->trail.v, c->trail.n, sizeof(key), home_cmp))
		return true;
	for (i = 0; i < c->nw; i++)
		if (home_wfile_moved(&c->w[i]) != WF_SAME)
			return true;
	return false;
}

/* The view's last scan as G's (into G's homes and H), if it may be (above): 1, else 0 or -errno */
int home_reuse_take(struct guard *g, struct hscan *h, const char *const *extra)
{
	struct home_reuse *c;
	int rc = 0;

	pthread_rwlock_rdlock(&g->view->lock); /* set once, by home_reuse_keep */
	c = g->view->homes;
	pthread_rwlock_unlock(&g->view->lock);
	if (!c)
		return 0;
	pthread_mutex_lock(&c->lock);
	if (reuse_stale(g, c, extra)) {
		pthread_mutex_unlock(&c->lock);
		return 0;
	}
	rc = names_copy(&g->home_dirs, (const char *const *)c->dirs, c->ndirs);
	g->nhome_dirs = g->ahome_dirs = rc ? 0 : c->ndirs;
	rc = rc ? rc : tab_copy(&g->homes, c->tab, c->ntab);
	g->nhomes = rc ? 0 : c->ntab;
	rc = rc ? rc : recs_copy(&h->r.recs, &c->recs);
	rc = rc ? rc : wfiles_copy(&h->w, &h->nw, c->w, c->nw);
	h->aw = h->nw;
	c->taken += !rc;
	pthread_mutex_unlock(&c->lock);
	return rc ? rc : 1;
}

/* Keeps G's fresh scan H of EXTRA (with its TRAIL, which it takes) for the next guard_open */
void home_reuse_keep(struct guard *g, struct hscan *h, struct gg_trail *trail,
		     const char *const *extra)
{
	struct guard_view *v = g->view;
	struct home_reuse *c;
	size_t i, j;
	int rc;

	pthread_rwlock_wrlock(&v->lock);
	if (!v->homes && (v->homes = calloc(1, sizeof(*v->homes))))
		pthread_mutex_init(&v->homes->lock, NULL);
	c = v->homes;
	pthread_rwlock_unlock(&v->lock);
	if (!c || trail->lost) {
		free(trail->v);
		return;
	}
	if (trail->n > 0)
		qsort(trail->v, trail->n, sizeof(*trail->v), home_cmp);
	for (i = j = 0; i < trail->n; i++)
		if (!j || home_cmp(&trail->v[j - 1], &trail->v[i]))
			trail->v[j++] = trail->v[i];
	trail->n = j;
	pthread_mutex_lock(&c->lock);
	reuse_clear(c);
	c->trail = *trail;
	c->when_ms = mono_ms();
	rc = names_copy(&c->extra, extra, names_count(extra));
	c->nextra = rc ? 0 : names_count(extra);
	rc = rc ? rc : names_copy(&c->dirs, (const char *const *)g->home_dirs, g->nhome_dirs);
	c->ndirs = rc ? 0 : g->nhome_dirs;
	rc = rc ? rc : tab_copy(&c->tab, g->homes, g->nhomes);
	c->ntab = rc ? 0 : g->nhomes;
	rc = rc ? rc : recs_copy(&c->recs, &h->r.recs);
	rc = rc ? rc : wfiles_copy(&c->w, &c->nw, h->w, h->nw);
	if (rc)
		reuse_clear(c);
	else
		c->valid = true;
	pthread_mutex_unlock(&c->lock);
}

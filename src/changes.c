/* SPDX-License-Identifier: MIT */
/*
 * What a bot changed: every name its mounts created, modified, deleted or
 * renamed, merged per path (a file made and removed again leaves nothing, a
 * made file written to stays "created", a renamed one is "renamed a -> b").
 * Recorded by the mount workers as the filesystem's own write path reports
 * them (fs_params.event), kept twice: since the bot was made, and since its
 * last mark. Bounded (max_changes paths a table, 100,000 unless configured;
 * past it, changes are only counted) and saved in STATE/changes/NAME.json by
 * a thread of its own (written whole, then renamed over the old file), so
 * the loop never waits on the disk and a restart, even after kill -9, keeps
 * all but the last fraction of a second.
 */
#include "src/agentfs.h"
#include "fusefs/fusefs.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#define NBUCKETS 4096
#define SAVE_DELAY_MS 200
#define CHANGES_FILE_MAX (256 * 1024 * 1024)

enum ckind { C_CREATED, C_MODIFIED, C_DELETED, C_RENAMED };
static const char *const ckind_names[] = {"created", "modified", "deleted", "renamed"};

/* One path's merged change. A deleted entry is keyed by the path that is gone. */
struct change {
	struct change *hnext;
	char *path; /* where it is now (deleted: where it was) */
	char *from; /* renamed: the path it had when the bot was made (or marked) */
	enum ckind kind;
	bool dir;
	bool modified; /* renamed, and its content changed too */
};

struct ctable {
	struct change *b[NBUCKETS];
	size_t n;
	uint64_t overflow; /* changes not kept: the table was full */
};

/*
 * A bot's changes: made with the bot, freed by bot_free. Everything in it
 * is under chg.lock, but name (immutable).
 */
struct changes {
	struct changes *next; /* chg.list */
	char *name;
	struct ctable all, recent; /* since made, since the mark */
	uint64_t mark;		   /* the last mark's number, 0: none */
	bool dirty;		   /* not saved since the last change */
	bool forget;		   /* deleted: its file goes, and is never written again */
	bool freed;		   /* its bot is gone: the saver frees it */
};

/*
 * lock protects the list and every table; only the saver thread writes
 * and removes files (but for a new bot's stale file, removed by the loop)
 * and frees tables once their bot is gone.
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct changes *list;
	char *dir; /* STATE/changes */
	pthread_t thread;
	bool started, stopping;
	size_t max; /* paths a table keeps (config max_changes) */
} chg = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static struct change **slot(struct ctable *t, const char *path)
{
	struct change **pp = &t->b[hash(path) % NBUCKETS];

	while (*pp != NULL && strcmp((*pp)->path, path) != 0)
		pp = &(*pp)->hnext;
	return pp;
}

static struct change *get(struct ctable *t, const char *path)
{
	return *slot(t, path);
}

static void change_free(struct change *c)
{
	free(c->path);
	free(c->from);
	free(c);
}

static void drop(struct ctable *t, const char *path)
{
	struct change **pp = slot(t, path), *c = *pp;

	if (c == NULL)
		return;
	*pp = c->hnext;
	t->n--;
	change_free(c);
}

/* A new entry for path, or NULL (full: counted; or out of memory). */
static struct change *put(struct ctable *t, const char *path, enum ckind kind, bool dir)
{
	struct change *c;

	if (t->n >= chg.max || (c = calloc(1, sizeof *c)) == NULL ||
	    (c->path = strdup(path)) == NULL) {
		if (t->n < chg.max)
			free(c);
		t->overflow++;
		return NULL;
	}
	c->kind = kind;
	c->dir = dir;
	c->hnext = t->b[hash(path) % NBUCKETS];
	t->b[hash(path) % NBUCKETS] = c;
	t->n++;
	return c;
}

static void table_clear(struct ctable *t)
{
	struct change *c;
	size_t i;

	for (i = 0; i < NBUCKETS; i++) {
		while ((c = t->b[i]) != NULL) {
			t->b[i] = c->hnext;
			change_free(c);
		}
	}
	t->n = 0;
	t->overflow = 0;
}

/* An original path (one the bot found) is gone: deleted, unless it was made again. */
static void original_gone(struct ctable *t, const char *path, bool dir)
{
	struct change *c = get(t, path);

	if (c == NULL)
		put(t, path, C_DELETED, dir);
	else if (c->kind == C_CREATED)
		c->kind = C_MODIFIED; /* replaced by a new one at the same path */
}

static void on_created(struct ctable *t, const char *path, bool dir)
{
	struct change *c = get(t, path);

	if (c == NULL)
		put(t, path, C_CREATED, dir);
	else if (c->kind == C_DELETED)
		c->kind = C_MODIFIED; /* removed and made again */
}

static void on_modified(struct ctable *t, const char *path, bool dir)
{
	struct change *c = get(t, path);

	if (c == NULL)
		put(t, path, C_MODIFIED, dir);
	else if (c->kind == C_RENAMED)
		c->modified = true;
	else if (c->kind == C_DELETED)
		c->kind = C_MODIFIED;
}

static void on_deleted(struct ctable *t, const char *path, bool dir)
{
	struct change *c = get(t, path);
	char *from;

	if (c == NULL) {
		put(t, path, C_DELETED, dir);
	} else if (c->kind == C_CREATED) {
		drop(t, path); /* made and removed: nothing happened */
	} else if (c->kind == C_MODIFIED) {
		c->kind = C_DELETED;
	} else if (c->kind == C_RENAMED) {
		from = c->from;
		c->from = NULL;
		drop(t, path);
		if (from != NULL)
			original_gone(t, from, dir);
		free(from);
	}
}

/* The entries beneath folder a move to b (a folder renamed); deleted ones stay. */
static void move_beneath(struct ctable *t, const char *a, const char *b)
{
	struct change **v = NULL, **nv, *c, **pp;
	size_t n = 0, cap = 0, la = strlen(a), i, k;
	char *np;

	for (i = 0; i < NBUCKETS; i++) {
		for (pp = &t->b[i]; (c = *pp) != NULL;) {
			if (c->kind == C_DELETED || strncmp(c->path, a, la) != 0 ||
			    c->path[la] != '/') {
				pp = &c->hnext;
				continue;
			}
			if (n == cap) {
				cap = cap ? cap * 2 : 64;
				nv = realloc(v, cap * sizeof *v);
				if (nv == NULL)
					break;
				v = nv;
			}
			*pp = c->hnext;
			v[n++] = c;
		}
	}
	for (k = 0; k < n; k++) {
		c = v[k];
		if (asprintf(&np, "%s%s", b, c->path + la) >= 0) {
			free(c->path);
			c->path = np;
		}
		/* a name already there is replaced, as the rename did */
		pp = slot(t, c->path);
		if (*pp != NULL) {
			struct change *old = *pp;

			*pp = old->hnext;
			change_free(old);
			t->n--;
		}
		c->hnext = t->b[hash(c->path) % NBUCKETS];
		t->b[hash(c->path) % NBUCKETS] = c;
	}
	free(v);
}

/*
 * a renamed to b. REPLACED: something had the name b and the rename
 * replaced it; if that was a file the bot found there (or one that stood at
 * b when it was made), b was modified, not created: git writes .git/index
 * and refs as a lock file renamed over the old one.
 */
static void on_renamed(struct ctable *t, const char *a, const char *b, bool dir, bool replaced)
{
	struct change *c = get(t, b), *n;
	enum ckind kind = C_RENAMED;
	char *from = NULL;
	bool modified = false;
	bool original_at_b = (c == NULL && replaced) ||
			     (c != NULL && (c->kind == C_MODIFIED || c->kind == C_DELETED));

	/* what b was is replaced */
	if (c != NULL && c->kind == C_RENAMED && c->from != NULL) {
		from = strdup(c->from);
		drop(t, b);
		if (from != NULL)
			original_gone(t, from, dir);
		free(from);
		from = NULL;
	} else if (c != NULL && c->kind != C_DELETED) {
		drop(t, b);
	}
	c = get(t, a);
	if (c == NULL || c->kind == C_DELETED) {
		from = strdup(a);
	} else if (c->kind == C_CREATED) {
		kind = C_CREATED;
	} else if (c->kind == C_MODIFIED) {
		from = strdup(a);
		modified = true;
	} else {
		from = c->from;
		c->from = NULL;
		modified = c->modified;
	}
	if (c != NULL && c->kind != C_DELETED)
		drop(t, a);
	if (dir)
		move_beneath(t, a, b);
	if (from != NULL && strcmp(from, b) == 0) {
		/* back where it was */
		free(from);
		if (modified)
			on_modified(t, b, dir);
		else if ((c = get(t, b)) != NULL && c->kind == C_DELETED)
			drop(t, b);
		return;
	}
	if ((c = get(t, b)) != NULL && c->kind == C_DELETED)
		drop(t, b); /* an original there was replaced: the rename says so */
	if (kind == C_CREATED && original_at_b)
		kind = C_MODIFIED; /* a new file took an original's place */
	n = put(t, b, kind, dir);
	if (n != NULL) {
		n->from = from;
		n->modified = modified;
	} else {
		free(from);
	}
}

static void apply(struct ctable *t, enum fs_event_kind kind, const char *p, const char *p2,
		  bool dir, bool replaced)
{
	switch (kind) {
	case FS_EV_CREATED:
		on_created(t, p, dir);
		break;
	case FS_EV_MODIFIED:
		on_modified(t, p, dir);
		break;
	case FS_EV_DELETED:
		on_deleted(t, p, dir);
		break;
	case FS_EV_RENAMED:
		on_renamed(t, p, p2, dir, replaced);
		break;
	case FS_EV_REFUSED:
		break;
	}
}

/* A change through one of the bot's mounts (any worker). */
void changes_record(struct changes *cs, struct fs_mount *m, const struct fs_event *ev)
{
	const char *root = fs_mount_source(m);
	char *p = NULL, *p2 = NULL;

	if (cs == NULL)
		return;
	if (asprintf(&p, "%s%s", strcmp(ev->path, "/") == 0 ? "" : root,
		     strcmp(ev->path, "/") == 0 ? root : ev->path) < 0)
		return;
	if (ev->path2 != NULL && asprintf(&p2, "%s%s", root, ev->path2) < 0) {
		free(p);
		return;
	}
	pthread_mutex_lock(&chg.lock);
	if (cs->forget) {
		pthread_mutex_unlock(&chg.lock);
		free(p);
		free(p2);
		return;
	}
	apply(&cs->all, ev->kind, p, p2, ev->dir, ev->replaced);
	apply(&cs->recent, ev->kind, p, p2, ev->dir, ev->replaced);
	cs->dirty = true;
	pthread_cond_signal(&chg.cond);
	pthread_mutex_unlock(&chg.lock);
	free(p);
	free(p2);
}

static int cmp_change(const void *a, const void *b)
{
	return strcmp((*(struct change *const *)a)->path, (*(struct change *const *)b)->path);
}

/* t's entries sorted by path, as objects; under chg.lock. */
static cJSON *table_json(const struct ctable *t)
{
	cJSON *arr = cJSON_CreateArray(), *o;
	struct change **v = calloc(t->n + 1, sizeof *v), *c;
	size_t i, n = 0;

	if (v == NULL)
		return arr;
	for (i = 0; i < NBUCKETS; i++)
		for (c = t->b[i]; c != NULL && n < t->n; c = c->hnext)
			v[n++] = c;
	qsort(v, n, sizeof *v, cmp_change);
	for (i = 0; i < n; i++) {
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "type", ckind_names[v[i]->kind]);
		cJSON_AddStringToObject(o, "path", v[i]->path);
		if (v[i]->from != NULL)
			cJSON_AddStringToObject(o, "from", v[i]->from);
		cJSON_AddBoolToObject(o, "dir", v[i]->dir);
		if (v[i]->kind == C_RENAMED)
			cJSON_AddBoolToObject(o, "modified", v[i]->modified);
		cJSON_AddItemToArray(arr, o);
	}
	free(v);
	return arr;
}

static cJSON *table_save(const struct ctable *t)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "overflow", (double)t->overflow);
	cJSON_AddItemToObject(o, "changes", table_json(t));
	return o;
}

static void table_load(struct ctable *t, const cJSON *o)
{
	const cJSON *v, *c = cJSON_GetObjectItemCaseSensitive(o, "changes"), *f;
	struct change *n;
	size_t k;

	t->overflow =
		(uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "overflow"));
	if (t->overflow > UINT32_MAX * 1024ull)
		t->overflow = 0; /* NaN or nonsense */
	cJSON_ArrayForEach(v, c) {
		const char *type =
			cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "type"));
		const char *path =
			cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "path"));

		if (type == NULL || path == NULL || get(t, path) != NULL)
			continue;
		for (k = 0; k < 4 && strcmp(ckind_names[k], type) != 0; k++)
			;
		if (k == 4)
			continue;
		n = put(t, path, (enum ckind)k,
			cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "dir")));
		if (n == NULL)
			continue;
		n->modified = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "modified"));
		f = cJSON_GetObjectItemCaseSensitive(v, "from");
		if (cJSON_IsString(f))
			n->from = strdup(f->valuestring);
	}
}

static char *file_name(const char *bot)
{
	char *p;

	return asprintf(&p, "%s.json", bot) < 0 ? NULL : p;
}

/* Read NAME.json if it is there (at the daemon's start: before any client). */
static void load(struct changes *cs)
{
	cleanup_free char *fn = file_name(cs->name), *path = NULL, *text = NULL;
	cleanup_cjson cJSON *o = NULL;
	struct stat st;
	FILE *f;

	if (fn == NULL || asprintf(&path, "%s/%s", chg.dir, fn) < 0)
		return;
	f = fopen(path, "re");
	if (f == NULL)
		return;
	if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > CHANGES_FILE_MAX ||
	    (text = malloc((size_t)st.st_size + 1)) == NULL ||
	    fread(text, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
		fclose(f);
		log_msg(LOG_WARNING, "cannot read %s: starting bot %s's changes afresh", path,
			cs->name);
		return;
	}
	fclose(f);
	text[st.st_size] = '\0';
	o = cJSON_Parse(text);
	if (o == NULL) {
		log_msg(LOG_WARNING, "%s is not JSON: starting bot %s's changes afresh", path,
			cs->name);
		return;
	}
	cs->mark = (uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "mark"));
	if (cs->mark > UINT32_MAX)
		cs->mark = 0;
	table_load(&cs->all, cJSON_GetObjectItemCaseSensitive(o, "all"));
	table_load(&cs->recent, cJSON_GetObjectItemCaseSensitive(o, "recent"));
}

/* A bot's table; fresh (an old file of that name removed) or, restoring, read back. */
struct changes *changes_new(const char *bot, bool restore)
{
	struct changes *cs = calloc(1, sizeof *cs);
	cleanup_free char *fn = file_name(bot), *path = NULL;

	if (cs == NULL || (cs->name = strdup(bot)) == NULL || fn == NULL ||
	    asprintf(&path, "%s/%s", chg.dir, fn) < 0) {
		if (cs != NULL)
			free(cs->name);
		free(cs);
		return NULL;
	}
	if (restore)
		load(cs);
	else
		unlink(path);
	pthread_mutex_lock(&chg.lock);
	cs->next = chg.list;
	chg.list = cs;
	pthread_mutex_unlock(&chg.lock);
	return cs;
}

/* The bot was deleted: the saver removes its file, and never writes it again. */
void changes_forget(struct changes *cs)
{
	if (cs == NULL)
		return;
	pthread_mutex_lock(&chg.lock);
	cs->forget = true;
	cs->dirty = true; /* the saver's turn: it removes the file */
	pthread_cond_signal(&chg.cond);
	pthread_mutex_unlock(&chg.lock);
}

static char *file_path(const char *bot)
{
	char *p;

	return asprintf(&p, "%s/%s.json", chg.dir, bot) < 0 ? NULL : p;
}

static void changes_destroy(struct changes *cs)
{
	table_clear(&cs->all);
	table_clear(&cs->recent);
	free(cs->name);
	free(cs);
}

/* Deleted bots' tables, gone: their files removed, then freed. */
static void remove_forgotten(void)
{
	struct changes *cs, **pp, *gone = NULL;
	char *path;

	pthread_mutex_lock(&chg.lock);
	for (pp = &chg.list; (cs = *pp) != NULL;) {
		if (cs->freed && cs->forget) {
			*pp = cs->next;
			cs->next = gone;
			gone = cs;
		} else {
			pp = &cs->next;
		}
	}
	pthread_mutex_unlock(&chg.lock);
	while ((cs = gone) != NULL) {
		gone = cs->next;
		if ((path = file_path(cs->name)) != NULL && unlink(path) != 0 && errno != ENOENT)
			log_msg(LOG_WARNING, "cannot remove %s: %s", path, strerror(errno));
		free(path);
		changes_destroy(cs);
	}
}

/* cs as its file's text; under chg.lock. */
static char *snapshot(const struct changes *cs)
{
	cJSON *o = cJSON_CreateObject();
	char *text;

	cJSON_AddNumberToObject(o, "mark", (double)cs->mark);
	cJSON_AddItemToObject(o, "all", table_save(&cs->all));
	cJSON_AddItemToObject(o, "recent", table_save(&cs->recent));
	text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return text;
}

/*
 * One step of the saver: write one table changed since its last save, or
 * take one out whose bot is gone (saved first if it had to be). False
 * when there is nothing left to do.
 */
static bool save_one(void)
{
	struct changes *cs, **pp, *drop = NULL;
	char *text = NULL, *fn = NULL;
	int r;

	pthread_mutex_lock(&chg.lock);
	for (cs = chg.list; cs != NULL && !(cs->dirty && !cs->forget); cs = cs->next)
		;
	if (cs != NULL) {
		cs->dirty = false;
		text = snapshot(cs);
		fn = file_name(cs->name);
	}
	if (cs == NULL || cs->freed) {
		/* no one holds a gone bot's table: it goes once saved */
		for (pp = &chg.list; *pp != NULL && !((*pp)->freed && !(*pp)->dirty);)
			pp = &(*pp)->next;
		if ((drop = *pp) != NULL)
			*pp = drop->next;
	}
	pthread_mutex_unlock(&chg.lock);
	if (cs != NULL) {
		r = text == NULL || fn == NULL ? -ENOMEM
					       : write_file_atomic(chg.dir, fn, text, strlen(text));
		if (r != 0)
			log_msg(LOG_ERR, "cannot save the changes in %s/%s: %s", chg.dir,
				fn != NULL ? fn : "?", strerror(-r));
	}
	free(text);
	free(fn);
	if (drop != NULL)
		changes_destroy(drop);
	return cs != NULL || drop != NULL;
}

/*
 * Saver: first the tables of deleted bots, so a new bot of the same name is
 * never overwritten by its predecessor's removal; then the changed ones.
 */
static void save_pass(void)
{
	remove_forgotten();
	while (save_one())
		;
}

/* Under chg.lock */
static bool any_dirty(void)
{
	struct changes *cs;

	for (cs = chg.list; cs != NULL; cs = cs->next)
		if (cs->dirty || cs->freed)
			return true;
	return false;
}

static void *saver_main(void *arg)
{
	struct timespec ts = {0, SAVE_DELAY_MS * 1000 * 1000};
	bool stopping;

	pthread_mutex_lock(&chg.lock);
	for (;;) {
		if (!any_dirty()) {
			if (chg.stopping)
				break;
			pthread_cond_wait(&chg.cond, &chg.lock);
			continue;
		}
		stopping = chg.stopping;
		pthread_mutex_unlock(&chg.lock);
		/* a burst of changes is saved once (but at a stop, at once) */
		if (!stopping)
			nanosleep(&ts, NULL);
		save_pass();
		pthread_mutex_lock(&chg.lock);
	}
	pthread_mutex_unlock(&chg.lock);
	return NULL;
}

/* The bot is freed: the saver saves (unless forgotten) and frees its table. */
void changes_free(struct changes *cs)
{
	if (cs == NULL)
		return;
	pthread_mutex_lock(&chg.lock);
	cs->freed = true;
	pthread_cond_signal(&chg.cond);
	pthread_mutex_unlock(&chg.lock);
}

/* The changes op: since made, or since mark (which must be the latest). */
void changes_list(struct request *r, struct changes *cs, uint64_t since)
{
	cJSON *body;
	struct ctable *t;

	if (cs == NULL) {
		request_fail(r, proto_error("internal", "no changes are kept for this bot"));
		return;
	}
	pthread_mutex_lock(&chg.lock);
	if (since != 0 && since != cs->mark) {
		uint64_t mark = cs->mark;

		pthread_mutex_unlock(&chg.lock);
		if (mark == 0)
			request_fail(r, proto_error("bad_value",
						    "bot %s has no mark %llu: it has none",
						    cs->name, (unsigned long long)since));
		else
			request_fail(r, proto_error("bad_value",
						    "bot %s has no mark %llu: only its latest, "
						    "%llu, is kept",
						    cs->name, (unsigned long long)since,
						    (unsigned long long)mark));
		return;
	}
	t = since != 0 ? &cs->recent : &cs->all;
	body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "name", cs->name);
	cJSON_AddNumberToObject(body, "mark", (double)cs->mark);
	cJSON_AddNumberToObject(body, "since", (double)since);
	cJSON_AddItemToObject(body, "changes", table_json(t));
	cJSON_AddBoolToObject(body, "too_many", t->overflow > 0);
	cJSON_AddNumberToObject(body, "not_kept", (double)t->overflow);
	pthread_mutex_unlock(&chg.lock);
	request_reply(r, body);
}

/* The mark op: changes since now are also listed apart; answers the mark's number. */
void changes_mark(struct request *r, struct changes *cs)
{
	cJSON *body;
	uint64_t mark;

	if (cs == NULL) {
		request_fail(r, proto_error("internal", "no changes are kept for this bot"));
		return;
	}
	pthread_mutex_lock(&chg.lock);
	table_clear(&cs->recent);
	mark = ++cs->mark;
	cs->dirty = true;
	pthread_cond_signal(&chg.cond);
	pthread_mutex_unlock(&chg.lock);
	body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "name", cs->name);
	cJSON_AddNumberToObject(body, "mark", (double)mark);
	request_reply(r, body);
}

int changes_init(const char *state_dir, unsigned max)
{
	int r;

	chg.max = max;
	if (asprintf(&chg.dir, "%s/changes", state_dir) < 0)
		return -ENOMEM;
	if (mkdir_p(chg.dir, 0700) != 0) {
		log_msg(LOG_ERR, "cannot make %s: %s", chg.dir, strerror(errno));
		return -errno;
	}
	chg.stopping = false;
	r = pthread_create(&chg.thread, NULL, saver_main, NULL);
	if (r != 0)
		return -r;
	chg.started = true;
	return 0;
}

/* After every bot is freed: the saver ends. */
void changes_stop(void)
{
	if (chg.started) {
		pthread_mutex_lock(&chg.lock);
		chg.stopping = true;
		pthread_cond_signal(&chg.cond);
		pthread_mutex_unlock(&chg.lock);
		pthread_join(chg.thread, NULL);
		chg.started = false;
	}
	free(chg.dir);
	chg.dir = NULL;
}

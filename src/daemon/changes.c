/* SPDX-License-Identifier: MIT */
/*
 * What a bot changed: every name its mounts created, modified, deleted or
 * renamed, merged per path (ctree.c has the rules and the table, which
 * stores each path once, by parent). Recorded by the mount workers as the
 * filesystem's own write path reports them (fs_params.event), kept since
 * the bot was made and, for each asker that set a mark (the bot, a bot
 * that made it, an operator), since its mark: a bot cannot move its
 * operator's mark.
 *
 * Bounded: max_changes paths a table, paths of at most CT_PATH_MAX bytes,
 * and every node charged to the bot's family and operator (accounts.c,
 * change records); past a bound, changes are only counted. Saved in
 * STATE/changes/NAME.json by a thread of its own (written whole, then
 * renamed over the old file), so the loop never waits on the disk and a
 * restart, even after kill -9, keeps all but the last fraction of a
 * second. What is charged bounds what is written: a file is never larger
 * than what the daemon reads back at start.
 */
#include "src/common/agentfs.h"
#include "src/daemon/changes-int.h"
#include "fusefs/fusefs.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#define SAVE_DELAY_MS 200
#define MARKS_MAX 8		/* askers with a mark on one bot */
#define PAGE_BYTES (256 * 1024) /* a changes reply holds about this much, then says more */

/* An asker's mark: what changed since it set it. */
struct mark {
	char *asker; /* "uid N" (an operator) or a bot's name; NULL: slot free */
	uint64_t n;  /* its number: 1, 2, ... */
	struct ctree t;
};

/*
 * A bot's changes: made with the bot, freed by the saver once the bot is
 * gone (changes_free). lock (the bot's own: recording never waits for
 * another bot's) protects the tables and the marks; name, fam and op are
 * immutable; dirty and forget are atomics; freed and next are under
 * chg.lock.
 */
struct changes {
	struct changes *next; /* chg.list */
	pthread_mutex_t lock;
	char *name;
	struct account *fam, *op; /* charged for every node (held) */
	struct ctree all;	  /* since the bot was made */
	struct mark marks[MARKS_MAX];
	atomic_bool forget; /* deleted: its file goes, and is never written again */
	atomic_bool dirty;  /* changed since the saver last looked */
	bool freed;	    /* its bot is gone: the saver frees it (chg.lock) */
	bool failed;	    /* its last save failed: the next pass tries again (saver only) */
	bool warned;	    /* a path too long or a share used up was logged */
};

/*
 * lock protects the list, freed and stopping, and is what the saver sleeps
 * on; only the saver writes and removes files (but for a new bot's stale
 * file, removed by the loop) and frees tables once their bot is gone.
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct changes *list;
	char *dir; /* STATE/changes */
	pthread_t thread;
	bool started, stopping;
	size_t max;	 /* paths a table keeps (config max_changes) */
	size_t file_max; /* the largest file read back (and so written) */
} chg = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

/* ctree's charge: a node's bytes against the bot's family and operator */
static bool charge(void *arg, long long bytes)
{
	struct changes *cs = arg;
	char why[256];

	if (bytes < 0) {
		acct_give(cs->fam, cs->op, AR_CHANGES, (unsigned long long)-bytes);
		return true;
	}
	if (acct_take(cs->fam, cs->op, AR_CHANGES, (unsigned long long)bytes, why, sizeof why))
		return true;
	if (!cs->warned) {
		cs->warned = true;
		log_msg(LOG_WARNING, "bot %s: changes are only counted from now on: %s", cs->name,
			why);
	}
	return false;
}

static void mark_clear(struct mark *mk)
{
	ct_clear(&mk->t);
	free(mk->asker);
	mk->asker = NULL;
	mk->n = 0;
}

static enum ct_event ct_event_of(const struct fs_event *ev)
{
	return ev->kind == FS_EV_CREATED    ? CT_EV_CREATED
	       : ev->kind == FS_EV_MODIFIED ? CT_EV_MODIFIED
	       : ev->kind == FS_EV_DELETED  ? CT_EV_DELETED
	       : ev->replaced		    ? CT_EV_RENAMED_OVER
					    : CT_EV_RENAMED;
}

/* Ask the saver to look at cs: the list's lock only on the first change since it looked. */
static void touch(struct changes *cs)
{
	if (!atomic_exchange(&cs->dirty, true)) {
		pthread_mutex_lock(&chg.lock);
		pthread_cond_signal(&chg.cond);
		pthread_mutex_unlock(&chg.lock);
	}
}

/* A change through one of the bot's mounts (any worker). */
void changes_record(struct changes *cs, struct fs_mount *m, const struct fs_event *ev)
{
	const char *root = fs_mount_source(m);
	char *p = NULL, *p2 = NULL;
	bool gone;
	size_t i;

	if (cs == NULL || ev->kind == FS_EV_REFUSED)
		return;
	if (asprintf(&p, "%s%s", strcmp(ev->path, "/") == 0 ? "" : root,
		     strcmp(ev->path, "/") == 0 ? root : ev->path) < 0)
		return;
	if (ev->path2 != NULL && asprintf(&p2, "%s%s", root, ev->path2) < 0) {
		free(p);
		return;
	}
	pthread_mutex_lock(&cs->lock);
	gone = atomic_load(&cs->forget);
	if (!gone) {
		ct_apply(&cs->all, ct_event_of(ev), p, p2, ev->dir);
		for (i = 0; i < MARKS_MAX; i++)
			if (cs->marks[i].asker != NULL)
				ct_apply(&cs->marks[i].t, ct_event_of(ev), p, p2, ev->dir);
	}
	pthread_mutex_unlock(&cs->lock);
	if (!gone)
		touch(cs);
	free(p);
	free(p2);
}

static char *file_path(const char *bot)
{
	char *p;

	return asprintf(&p, "%s/%s.json", chg.dir, bot) < 0 ? NULL : p;
}

/* A mark read back; a slot taken, or NULL when there are already MARKS_MAX. */
static struct mark *mark_slot(struct changes *cs, const char *asker)
{
	size_t i;

	for (i = 0; i < MARKS_MAX; i++)
		if (cs->marks[i].asker != NULL && strcmp(cs->marks[i].asker, asker) == 0)
			return &cs->marks[i];
	for (i = 0; i < MARKS_MAX; i++) {
		if (cs->marks[i].asker == NULL) {
			if ((cs->marks[i].asker = strdup(asker)) == NULL)
				return NULL;
			ct_init(&cs->marks[i].t, chg.max, charge, cs);
			return &cs->marks[i];
		}
	}
	return NULL;
}

/* An asker as the file may name one: "uid N" or a bot's name (nothing JSON escapes). */
static bool asker_ok(const char *s)
{
	unsigned u;
	int used = 0;

	return bot_name_ok(s) || (sscanf(s, "uid %u%n", &u, &used) == 1 && s[used] == '\0');
}

/* A whole number in o's field k, tested before its cast: NaN, negative or huge are 0. */
static uint64_t count_field(const cJSON *o, const char *k, double max)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble <= max
		       ? (uint64_t)v->valuedouble
		       : 0;
}

/* Read NAME.json if it is there (at the daemon's start: before any client). */
static void load(struct changes *cs, uid_t owner)
{
	cleanup_free char *path = file_path(cs->name), *text = NULL;
	cleanup_cjson cJSON *o = NULL;
	const cJSON *v;
	struct mark *mk;
	char asker[32];
	struct stat st;
	FILE *f;

	if (path == NULL || (f = fopen(path, "re")) == NULL)
		return;
	if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) ||
	    (size_t)st.st_size > chg.file_max || (text = malloc((size_t)st.st_size + 1)) == NULL ||
	    fread(text, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
		fclose(f);
		log_msg(LOG_WARNING,
			"cannot read %s (or it is larger than %zu bytes): starting bot "
			"%s's changes afresh",
			path, chg.file_max, cs->name);
		return;
	}
	fclose(f);
	text[st.st_size] = '\0';
	o = cJSON_Parse(text);
	free(text);
	text = NULL;
	if (o == NULL) {
		log_msg(LOG_WARNING, "%s is not JSON: starting bot %s's changes afresh", path,
			cs->name);
		return;
	}
	ct_load(&cs->all, cJSON_GetObjectItemCaseSensitive(o, "all"));
	cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(o, "marks")) {
		const char *who =
			cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "asker"));

		if (who != NULL && asker_ok(who) && (mk = mark_slot(cs, who)) != NULL) {
			mk->n = count_field(v, "mark", UINT32_MAX);
			ct_load(&mk->t, cJSON_GetObjectItemCaseSensitive(v, "changes"));
		}
	}
	/* version 1 kept one mark, whoever set it: it is the bot's operator's now */
	if (count_field(o, "mark", UINT32_MAX) > 0) {
		snprintf(asker, sizeof asker, "uid %u", (unsigned)owner);
		if ((mk = mark_slot(cs, asker)) != NULL) {
			mk->n = count_field(o, "mark", UINT32_MAX);
			ct_load(&mk->t, cJSON_GetObjectItemCaseSensitive(o, "recent"));
		}
	}
}

/* A bot's tables; fresh (an old file of that name removed) or, restoring, read back. */
struct changes *changes_new(const char *bot, bool restore, struct account *fam, struct account *op,
			    uid_t owner)
{
	struct changes *cs = calloc(1, sizeof *cs);
	cleanup_free char *path = file_path(bot);

	if (cs == NULL || path == NULL || (cs->name = strdup(bot)) == NULL) {
		free(cs);
		return NULL;
	}
	pthread_mutex_init(&cs->lock, NULL);
	cs->fam = acct_hold(fam);
	cs->op = acct_hold(op);
	ct_init(&cs->all, chg.max, charge, cs);
	if (restore) {
		load(cs, owner);
	} else {
		/*
		 * A stale file of a bot of that name goes now, and the saver writes
		 * this one's, after any write of its predecessor's it has in hand.
		 */
		unlink(path);
		atomic_store(&cs->dirty, true);
	}
	pthread_mutex_lock(&chg.lock);
	cs->next = chg.list;
	chg.list = cs;
	pthread_cond_signal(&chg.cond);
	pthread_mutex_unlock(&chg.lock);
	return cs;
}

/* The bot was deleted: the saver removes its file, and never writes it again. */
void changes_forget(struct changes *cs)
{
	if (cs == NULL)
		return;
	/* under the lock: no record is being applied once it is set */
	pthread_mutex_lock(&cs->lock);
	atomic_store(&cs->forget, true);
	pthread_mutex_unlock(&cs->lock);
	atomic_store(&cs->dirty, false);
	pthread_mutex_lock(&chg.lock);
	pthread_cond_signal(&chg.cond);
	pthread_mutex_unlock(&chg.lock);
}

static void changes_destroy(struct changes *cs)
{
	size_t i;

	ct_clear(&cs->all);
	for (i = 0; i < MARKS_MAX; i++)
		mark_clear(&cs->marks[i]);
	acct_put(cs->fam);
	acct_put(cs->op);
	pthread_mutex_destroy(&cs->lock);
	free(cs->name);
	free(cs);
}

/* Deleted bots' tables, gone: their files removed, then freed. */
static void remove_forgotten(void)
{
	struct changes *cs, **pp, *gone = NULL;
	char *path;

	struct changes *o;
	bool named;

	pthread_mutex_lock(&chg.lock);
	for (pp = &chg.list; (cs = *pp) != NULL;) {
		if (cs->freed && atomic_load(&cs->forget)) {
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
		/* a new bot of the same name has the file now (it writes its own) */
		pthread_mutex_lock(&chg.lock);
		for (named = false, o = chg.list; o != NULL && !named; o = o->next)
			named = !atomic_load(&o->forget) && strcmp(o->name, cs->name) == 0;
		pthread_mutex_unlock(&chg.lock);
		if (!named && (path = file_path(cs->name)) != NULL && unlink(path) != 0 &&
		    errno != ENOENT)
			log_msg(LOG_WARNING, "cannot remove %s: %s", path, strerror(errno));
		else if (named)
			path = NULL;
		free(path);
		changes_destroy(cs);
	}
}

struct snap {
	struct ct_snap all, marks[MARKS_MAX];
	char *askers[MARKS_MAX];
	uint64_t n[MARKS_MAX];
};

static void snap_free(struct snap *s)
{
	size_t i;

	ct_snap_free(&s->all);
	for (i = 0; i < MARKS_MAX; i++) {
		ct_snap_free(&s->marks[i]);
		free(s->askers[i]);
	}
}

/* cs copied, under its lock: one pass over its nodes, no JSON yet. -ENOMEM */
static int snap_take(struct changes *cs, struct snap *s)
{
	int r;
	size_t i;

	memset(s, 0, sizeof *s);
	pthread_mutex_lock(&cs->lock);
	r = ct_snapshot(&cs->all, &s->all);
	for (i = 0; r == 0 && i < MARKS_MAX; i++) {
		if (cs->marks[i].asker == NULL)
			continue;
		s->n[i] = cs->marks[i].n;
		if ((s->askers[i] = strdup(cs->marks[i].asker)) == NULL)
			r = -ENOMEM;
		else
			r = ct_snapshot(&cs->marks[i].t, &s->marks[i]);
	}
	pthread_mutex_unlock(&cs->lock);
	return r;
}

/* Append n bytes of s to the text (grown); -ENOMEM */
static int add(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
	char *nb;

	if (*len + n + 1 > *cap) {
		nb = realloc(*buf, (*len + n + 1) * 2);
		if (nb == NULL)
			return -ENOMEM;
		*buf = nb;
		*cap = (*len + n + 1) * 2;
	}
	memcpy(*buf + *len, s, n);
	*len += n;
	(*buf)[*len] = '\0';
	return 0;
}

/*
 * The snapshot as its file's text (NULL: out of memory), *len its length:
 * {"version":2,"all":TABLE,"marks":[{"asker":A,"mark":N,"changes":TABLE}]}.
 * An asker is "uid N" or a bot's name: no character JSON escapes.
 */
static char *snap_text(const struct snap *s, size_t *len)
{
	static const char head[] = "{\"version\":2,\"all\":";
	char *buf = NULL, part[128];
	size_t cap = 0, i;
	bool first = true;
	int r;

	*len = 0;
	r = add(&buf, len, &cap, head, sizeof head - 1);
	if (r == 0)
		r = ct_snap_text(&s->all, &buf, len, &cap);
	if (r == 0)
		r = add(&buf, len, &cap, ",\"marks\":[", 10);
	for (i = 0; r == 0 && i < MARKS_MAX; i++) {
		if (s->askers[i] == NULL)
			continue;
		snprintf(part, sizeof part,
			 "%s{\"asker\":\"%s\",\"mark\":%llu,\"changes\":", first ? "" : ",",
			 s->askers[i], (unsigned long long)s->n[i]);
		first = false;
		r = add(&buf, len, &cap, part, strlen(part));
		if (r == 0)
			r = ct_snap_text(&s->marks[i], &buf, len, &cap);
		if (r == 0)
			r = add(&buf, len, &cap, "}", 1);
	}
	if (r == 0)
		r = add(&buf, len, &cap, "]}", 2);
	if (r != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* Write cs's file from a copy taken under its lock; the JSON is made after. -errno */
static int save(struct changes *cs)
{
	cleanup_free char *fn = NULL, *text = NULL;
	struct snap s;
	size_t len = 0;
	int r;

	r = snap_take(cs, &s);
	if (r == 0 && (text = snap_text(&s, &len)) == NULL)
		r = -ENOMEM;
	snap_free(&s);
	if (r == 0 && asprintf(&fn, "%s.json", cs->name) < 0)
		r = -ENOMEM;
	if (r == 0 && len > chg.file_max) {
		/* cannot happen while the charges hold; never write what start would refuse */
		log_msg(LOG_ERR,
			"bot %s's changes take %zu bytes, more than the %zu read back: "
			"not saved",
			cs->name, len, chg.file_max);
		return 0;
	}
	if (r == 0)
		r = write_file_atomic(chg.dir, fn, text, len);
	if (r != 0)
		log_msg(LOG_ERR, "cannot save the changes of bot %s in %s: %s", cs->name, chg.dir,
			strerror(-r));
	return r;
}

/*
 * One step of the saver: write one table changed since it last looked, or
 * take one out whose bot is gone (saved first if it had to be). False
 * when there is nothing left to do.
 */
static bool save_one(void)
{
	struct changes *cs, **pp, *drop = NULL;

	pthread_mutex_lock(&chg.lock);
	for (cs = chg.list; cs != NULL && !atomic_load(&cs->dirty); cs = cs->next)
		;
	if (cs != NULL)
		atomic_store(&cs->dirty, false);
	if (cs == NULL) {
		/*
		 * no one holds a gone bot's table: it goes once saved (a deleted
		 * one's file first, a failed one after it is tried again)
		 */
		for (pp = &chg.list; *pp != NULL && !((*pp)->freed && !(*pp)->failed &&
						      !atomic_load(&(*pp)->forget));)
			pp = &(*pp)->next;
		if ((drop = *pp) != NULL)
			*pp = drop->next;
	}
	pthread_mutex_unlock(&chg.lock);
	/* a table on the list is freed only by this thread: cs stays valid */
	if (cs != NULL && !atomic_load(&cs->forget) && save(cs) != 0)
		cs->failed = true; /* not again in this pass: a failing disk is no reason to spin */
	if (drop != NULL)
		changes_destroy(drop);
	return cs != NULL || drop != NULL;
}

/*
 * Saver: first the tables of deleted bots, so a new bot of the same name is
 * never overwritten by its predecessor's removal; then the changed ones,
 * each once. Those that failed are tried again at the next pass; how many.
 */
static unsigned save_pass(void)
{
	struct changes *cs;
	unsigned failed = 0;

	remove_forgotten();
	while (save_one())
		;
	pthread_mutex_lock(&chg.lock);
	for (cs = chg.list; cs != NULL; cs = cs->next) {
		if (cs->failed) {
			cs->failed = false;
			atomic_store(&cs->dirty, true);
			failed++;
		}
	}
	pthread_mutex_unlock(&chg.lock);
	return failed;
}

/* Under chg.lock */
static bool any_work(void)
{
	struct changes *cs;

	for (cs = chg.list; cs != NULL; cs = cs->next)
		if (atomic_load(&cs->dirty) || cs->freed)
			return true;
	return false;
}

static void *saver_main(void *arg)
{
	struct timespec ts = {0, SAVE_DELAY_MS * 1000 * 1000};
	unsigned failed;
	bool stopping;

	pthread_mutex_lock(&chg.lock);
	for (;;) {
		if (!any_work()) {
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
		failed = save_pass();
		pthread_mutex_lock(&chg.lock);
		if (failed > 0 && stopping)
			break; /* at a stop, one last try: what could not be written is logged */
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

/* The asker's mark on cs, or NULL; under cs->lock */
static struct mark *mark_of(struct changes *cs, const char *asker)
{
	size_t i;

	for (i = 0; i < MARKS_MAX; i++)
		if (cs->marks[i].asker != NULL && strcmp(cs->marks[i].asker, asker) == 0)
			return &cs->marks[i];
	return NULL;
}

/* A page being filled: entries until about PAGE_BYTES */
struct page {
	cJSON *arr;
	size_t bytes;
	char last[CT_PATH_MAX + 1];
	bool full;
};

static bool page_add(void *arg, const struct cnode *n)
{
	struct page *pg = arg;
	char from[CT_PATH_MAX + 1];
	cJSON *o;

	if (pg->bytes >= PAGE_BYTES) {
		pg->full = true;
		return false;
	}
	ct_path(n, pg->last);
	o = cJSON_CreateObject();
	if (o == NULL || !cJSON_AddItemToArray(pg->arr, o)) {
		cJSON_Delete(o);
		pg->full = true; /* out of memory: the client asks for the rest */
		return false;
	}
	cJSON_AddStringToObject(o, "type", ct_kind_name(n->kind));
	cJSON_AddStringToObject(o, "path", pg->last);
	pg->bytes += 64 + ct_json_len(pg->last, strlen(pg->last));
	if (n->from != NULL) {
		ct_path(n->from, from);
		cJSON_AddStringToObject(o, "from", from);
		pg->bytes += 16 + ct_json_len(from, strlen(from));
	}
	cJSON_AddBoolToObject(o, "dir", n->dir);
	if (n->kind == CT_RENAMED)
		cJSON_AddBoolToObject(o, "modified", n->modified);
	return true;
}

/*
 * The changes op: since the bot was made, or since the asker's mark (which
 * must be its latest), one page at a time: entries in path order after the
 * path `after` (NULL: from the first), and, when the page is full, "more"
 * and the path to ask after next.
 */
void changes_list(struct request *r, struct changes *cs, const char *asker, uint64_t since,
		  const char *after)
{
	struct page pg = {0};
	struct ctree *t;
	struct mark *mk;
	uint64_t mine;
	cJSON *body;
	int e;

	if (cs == NULL) {
		request_fail(r, proto_error("internal", "no changes are kept for this bot"));
		return;
	}
	body = cJSON_CreateObject();
	pg.arr = cJSON_CreateArray();
	if (body == NULL || pg.arr == NULL) {
		cJSON_Delete(body);
		cJSON_Delete(pg.arr);
		request_fail(r, proto_error("internal", "out of memory"));
		return;
	}
	pthread_mutex_lock(&cs->lock);
	mk = mark_of(cs, asker);
	mine = mk != NULL ? mk->n : 0;
	if (since != 0 && since != mine) {
		pthread_mutex_unlock(&cs->lock);
		cJSON_Delete(body);
		cJSON_Delete(pg.arr);
		if (mine == 0)
			request_fail(r, proto_error("bad_value",
						    "you have no mark %llu on bot %s: you set none "
						    "(marks are each asker's own)",
						    (unsigned long long)since, cs->name));
		else
			request_fail(r, proto_error("bad_value",
						    "you have no mark %llu on bot %s: only your "
						    "latest, %llu, is kept",
						    (unsigned long long)since, cs->name,
						    (unsigned long long)mine));
		return;
	}
	t = since != 0 ? &mk->t : &cs->all;
	e = ct_walk(t, after, page_add, &pg);
	cJSON_AddStringToObject(body, "name", cs->name);
	cJSON_AddNumberToObject(body, "mark", (double)mine);
	cJSON_AddNumberToObject(body, "since", (double)since);
	cJSON_AddItemToObject(body, "changes", pg.arr);
	cJSON_AddBoolToObject(body, "too_many", t->overflow > 0);
	cJSON_AddNumberToObject(body, "not_kept", (double)t->overflow);
	pthread_mutex_unlock(&cs->lock);
	if (e != 0) {
		cJSON_Delete(body);
		request_fail(r, proto_error("internal", "out of memory"));
		return;
	}
	cJSON_AddBoolToObject(body, "more", pg.full);
	if (pg.full)
		cJSON_AddStringToObject(body, "next", pg.last);
	request_reply(r, body);
}

/* The mark op: the asker's changes from now on are also listed apart; answers its number. */
void changes_mark(struct request *r, struct changes *cs, const char *asker)
{
	struct mark *mk;
	uint64_t n;
	cJSON *body;

	if (cs == NULL) {
		request_fail(r, proto_error("internal", "no changes are kept for this bot"));
		return;
	}
	pthread_mutex_lock(&cs->lock);
	mk = mark_slot(cs, asker);
	if (mk == NULL) {
		pthread_mutex_unlock(&cs->lock);
		request_fail(r, proto_error("limit", "bot %s keeps marks for %d askers already",
					    cs->name, MARKS_MAX));
		return;
	}
	ct_clear(&mk->t);
	n = ++mk->n;
	pthread_mutex_unlock(&cs->lock);
	touch(cs);
	body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "name", cs->name);
	cJSON_AddNumberToObject(body, "mark", (double)n);
	request_reply(r, body);
}

int changes_init(const struct config *cfg)
{
	int r;

	chg.max = cfg->max_changes;
	/* one bot's tables hold at most its family's share of changes_memory, in file bytes */
	chg.file_max = ((size_t)cfg->changes_memory << 20) + (1u << 20);
	if (asprintf(&chg.dir, "%s/changes", cfg->state_dir) < 0)
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

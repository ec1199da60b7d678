/* SPDX-License-Identifier: MIT */
/*
 * Bots on disk: STATE/bots.json, rewritten atomically (temp file, fsync,
 * rename, fsync the folder) on every change, so a daemon killed at any
 * moment leaves either the old file or the new one.
 *
 * Bounded at write time by what start reads (STATE_MAX): each bot's entry
 * is charged to its family and operator (accounts.c, state file) before
 * the request that makes or grows it is accepted, so no bot can write a
 * file the next start would refuse. An entry that does not load is set
 * aside, named in the log, and the file as it was kept beside it; the
 * others load.
 */
#include "src/common/agentfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "fusefs/fusefs.h"
#include "src/daemon/bots-int.h"

#define STATE_FILE "bots.json"

static cJSON *paths_json(const struct paths *ps)
{
	cJSON *a = cJSON_CreateArray();
	size_t i;

	for (i = 0; i < ps->n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(ps->v[i]));
	return a;
}

struct repo_acc {
	cJSON *arr;
	const char *root;
};

/* A repository the bot made (allow_new_repos), as a host path. */
static void add_repo(void *arg, const char *path)
{
	struct repo_acc *acc = arg;
	char *full;

	if (asprintf(&full, "%s%s%s", acc->root, path[0] == '/' ? "" : "/", path) >= 0) {
		cJSON_AddItemToArray(acc->arr, cJSON_CreateString(full));
		free(full);
	}
}

cJSON *bot_to_json(const struct bot *b, bool full)
{
	cJSON *o = cJSON_CreateObject(), *mounts, *repos;
	size_t i;

	cJSON_AddStringToObject(o, "name", b->name);
	if (b->creator != NULL)
		cJSON_AddStringToObject(o, "creator", b->creator);
	else
		cJSON_AddNullToObject(o, "creator");
	cJSON_AddStringToObject(o, "sandbox", sandbox_name(b->sandbox));
	cJSON_AddStringToObject(o, "folder", b->folder);
	cJSON_AddItemToObject(o, "writable", paths_json(&b->writable));
	cJSON_AddItemToObject(o, "readable", paths_json(&b->readable));
	cJSON_AddBoolToObject(o, "network", b->network);
	cJSON_AddBoolToObject(o, "allow_new_repos", b->allow_new_repos);
	cJSON_AddItemToObject(o, "pods", paths_json(&b->pods));
	cJSON_AddNumberToObject(o, "ttl", (double)b->ttl);
	cJSON_AddNumberToObject(o, "memory_max", (double)b->memory_max);
	cJSON_AddNumberToObject(o, "pids_max", (double)b->pids_max);
	cJSON_AddNumberToObject(o, "created", (double)b->created);
	cJSON_AddNumberToObject(o, "expires", (double)b->expires);
	if (b->uid_set) {
		char *u = user_name(b->uid);

		cJSON_AddStringToObject(o, "user", u != NULL ? u : "");
		cJSON_AddNumberToObject(o, "uid", b->uid);
		free(u);
	} else {
		cJSON_AddNullToObject(o, "user");
	}
	if (!full)
		return o;
	if (b->sock != NULL) {
		cJSON_AddStringToObject(o, "socket", server_listener_path(b->sock));
	} else {
		cJSON_AddNullToObject(o, "socket");
	}
	mounts = cJSON_AddArrayToObject(o, "mounts");
	for (i = 0; i < b->nroots; i++) {
		const struct root *rt = &b->roots[i];
		cJSON *m = cJSON_CreateObject();

		cJSON_AddStringToObject(m, "path", rt->path);
		cJSON_AddStringToObject(m, "mountpoint", rt->mountpoint);
		cJSON_AddStringToObject(m, "access", rt->writable ? "rw" : "ro");
		/*
		 * While the job thread works on the bot (busy), its roots' mounts
		 * and errors are the job's: not read here until it is done.
		 */
		cJSON_AddStringToObject(m, "state",
					rt->lost	? "lost"
					: b->busy	? "mounting"
					: rt->m != NULL ? "mounted"
							: "unmounted");
		if (!b->busy && rt->error != NULL)
			cJSON_AddStringToObject(m, "error", rt->error);
		if (!b->busy && rt->m != NULL)
			cJSON_AddNumberToObject(m, "restarts", fs_mount_restarts(rt->m));
		cJSON_AddItemToArray(mounts, m);
	}
	repos = cJSON_AddArrayToObject(o, "repos_made");
	for (i = 0; !b->busy && i < b->nroots; i++) {
		struct repo_acc acc = {repos, b->roots[i].path};

		if (b->roots[i].m != NULL)
			fs_mount_new_repos(b->roots[i].m, add_repo, &acc);
	}
	return o;
}

void bot_free(struct bot *b)
{
	size_t i;

	if (b == NULL)
		return;
	for (i = 0; i < b->nroots; i++) {
		free(b->roots[i].path);
		free(b->roots[i].mountpoint);
		free(b->roots[i].error);
	}
	free(b->roots);
	free(b->name);
	free(b->creator);
	free(b->folder);
	free(b->request_id);
	paths_free(&b->writable);
	paths_free(&b->readable);
	paths_free(&b->git_roots);
	paths_free(&b->pods);
	events_ring_free(b->ring);
	changes_free(b->changes);
	acct_give(b->fam, b->op, AR_STATE, b->state_bytes);
	acct_put(b->fam);
	acct_put(b->op);
	free(b);
}

/* b's entry in the state file */
static cJSON *state_entry(const struct bot *b)
{
	cJSON *o = bot_to_json(b, false);

	if (b->request_id != NULL)
		cJSON_AddStringToObject(o, "request_id", b->request_id);
	cJSON_AddItemToObject(o, "git_roots", paths_json(&b->git_roots));
	cJSON_AddNumberToObject(o, "owner_uid", b->owner_uid);
	return o;
}

/*
 * The bytes b's entry takes in the state file, with room for the git
 * folders a create may find later (two paths); 0 when out of memory.
 */
size_t state_entry_size(const struct bot *b)
{
	cleanup_cjson cJSON *o = state_entry(b);
	cleanup_free char *text = o != NULL ? cJSON_PrintUnformatted(o) : NULL;

	return text != NULL ? strlen(text) + 1 + (b->git_roots.n == 0 ? STATE_GIT_ROOTS_ROOM : 0)
			    : 0;
}

int state_save(const struct config *cfg, struct bots *bots)
{
	cleanup_cjson cJSON *doc = cJSON_CreateObject();
	cleanup_free char *text = NULL;
	char *line;
	cJSON *arr;
	struct bot *b;

	cJSON_AddNumberToObject(doc, "version", 1);
	arr = cJSON_AddArrayToObject(doc, "bots");
	TAILQ_FOREACH(b, bots, entry)
		if (!b->deleting)
			cJSON_AddItemToArray(arr, state_entry(b));
	text = cJSON_PrintUnformatted(doc);
	if (text == NULL || (line = realloc(text, strlen(text) + 2)) == NULL)
		return -ENOMEM;
	text = line;
	strcat(text, "\n"); /* a text file: one line */
	/* cannot happen while the charges hold: never write what start would refuse */
	if (strlen(text) > STATE_MAX)
		return -EFBIG;
	return write_file_atomic(cfg->state_dir, STATE_FILE, text, strlen(text));
}

static const char *str_field(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int load_paths(const cJSON *o, const char *k, struct paths *out)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, k), *v;

	if (a == NULL)
		return 0;
	if (!cJSON_IsArray(a))
		return -EINVAL;
	cJSON_ArrayForEach(v, a) {
		if (!cJSON_IsString(v) || v->valuestring[0] != '/')
			return -EINVAL;
		if (paths_add(out, v->valuestring) != 0)
			return -ENOMEM;
	}
	return 0;
}

/* A bot's pods, each checked again: the state file is not trusted blindly. */
static int load_pods(const cJSON *o, struct paths *out)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "pods"), *v;

	if (a == NULL)
		return 0;
	if (!cJSON_IsArray(a))
		return -EINVAL;
	cJSON_ArrayForEach(v, a) {
		if (!cJSON_IsString(v) || !pod_name_ok(v->valuestring))
			return -EINVAL;
		if (paths_add(out, v->valuestring) != 0)
			return -ENOMEM;
	}
	return 0;
}

/*
 * A whole number in o's field k from lo to hi, tested before its cast (a
 * NaN or 1e300 would not fit). Absent: 0, *out untouched; -EINVAL.
 */
static int num_field(const cJSON *o, const char *k, double lo, double hi, double *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	if (v == NULL)
		return 0;
	if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi) ||
	    v->valuedouble != (double)(long long)v->valuedouble)
		return -EINVAL;
	*out = v->valuedouble;
	return 1;
}

/* One bot's entry, or NULL with why it cannot be read. */
static struct bot *load_bot(const cJSON *o, const char **why)
{
	struct bot *b = calloc(1, sizeof *b);
	const char *name = str_field(o, "name"), *folder = str_field(o, "folder");
	const char *sandbox = str_field(o, "sandbox"), *creator = str_field(o, "creator");
	const char *rid = str_field(o, "request_id");
	double ttl = 0, created = 0, expires = 0, owner = 0, uid = 0, mem = 0, pids = 0;
	int has_uid = 0;

	*why = "out of memory";
	if (b == NULL)
		return NULL;
	*why = "no valid name, creator, folder or sandbox";
	if (name == NULL || !bot_name_ok(name) || (creator != NULL && !bot_name_ok(creator)) ||
	    folder == NULL || folder[0] != '/' || sandbox == NULL ||
	    sandbox_parse(sandbox, &b->sandbox) != 0)
		goto bad;
	*why = "a number out of range (ttl, created, expires, owner_uid or uid)";
	if (num_field(o, "ttl", 0, 365.0 * 86400, &ttl) < 0 ||
	    num_field(o, "created", 0, 1e11, &created) < 0 ||
	    num_field(o, "expires", 0, 1e11, &expires) < 0 ||
	    num_field(o, "owner_uid", 0, (uid_t)-2, &owner) < 0 ||
	    (has_uid = num_field(o, "uid", 0, (uid_t)-2, &uid)) < 0)
		goto bad;
	*why = "out of memory";
	b->name = strdup(name);
	b->folder = strdup(folder);
	b->creator = creator != NULL ? strdup(creator) : NULL;
	b->request_id = rid != NULL ? strdup(rid) : NULL;
	if (b->name == NULL || b->folder == NULL || (creator != NULL && b->creator == NULL) ||
	    (rid != NULL && b->request_id == NULL))
		goto bad;
	*why = "a list of paths or pods that is not one";
	if (load_paths(o, "writable", &b->writable) != 0 ||
	    load_paths(o, "readable", &b->readable) != 0 ||
	    load_paths(o, "git_roots", &b->git_roots) != 0 || load_pods(o, &b->pods) != 0)
		goto bad;
	b->network = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "network"));
	b->allow_new_repos = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "allow_new_repos"));
	b->ttl = (long)ttl;
	b->created = (time_t)created;
	b->expires = (time_t)expires;
	b->owner_uid = (uid_t)owner;
	/* a state from before limits, or one out of range: the default */
	if (num_field(o, "memory_max", MEMORY_MIN, MEMORY_MAX, &mem) > 0)
		b->memory_max = (uint64_t)mem;
	if (num_field(o, "pids_max", PIDS_MIN, PIDS_MAX, &pids) > 0)
		b->pids_max = (uint64_t)pids;
	/* A state from before users: the folder's owner, found at mount. */
	if (has_uid > 0) {
		b->uid = (uid_t)uid;
		b->uid_set = true;
	}
	return b;
bad:
	bot_free(b);
	return NULL;
}

/*
 * Entries that do not load go aside: each is named in the log, and the
 * file as it was is kept as bots.json.aside-TIME, so nothing is lost while
 * the others load (and the next save writes them alone).
 */
static void set_aside(const struct config *cfg, const char *text, size_t len, unsigned n)
{
	char name[64];
	int r;

	snprintf(name, sizeof name, "%s.aside-%lld", STATE_FILE, (long long)time(NULL));
	r = write_file_atomic(cfg->state_dir, name, text, len);
	if (r != 0)
		log_msg(LOG_ERR, "cannot keep %s/%s (%u entries set aside): %s", cfg->state_dir,
			name, n, strerror(-r));
	else
		log_msg(LOG_WARNING, "%u entries of %s were set aside; the file as it was is %s/%s",
			n, STATE_FILE, cfg->state_dir, name);
}

/*
 * A state file that does not parse is an error: never overwrite what we
 * cannot read (no bot can make one: it is written whole, and bounded). An
 * entry that does not load is set aside and the others load.
 */
int state_load(const struct config *cfg, struct bots *bots, char *err, size_t errlen)
{
	cleanup_cjson cJSON *doc = NULL;
	cleanup_free char *text = NULL;
	char path[4096];
	const cJSON *arr, *o;
	const char *why;
	struct bot *b;
	struct stat st;
	unsigned k = 0, aside = 0;
	ssize_t n;
	size_t off = 0;
	int fd;

	snprintf(path, sizeof path, "%s/%s", cfg->state_dir, STATE_FILE);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
		return -errno;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > STATE_MAX) {
		close(fd);
		snprintf(err, errlen, "%s: not a regular file of at most %d bytes", path,
			 STATE_MAX);
		return -EINVAL;
	}
	text = malloc((size_t)st.st_size + 1);
	if (text == NULL) {
		close(fd);
		return -ENOMEM;
	}
	while (off < (size_t)st.st_size && (n = read(fd, text + off, (size_t)st.st_size - off)) > 0)
		off += (size_t)n;
	close(fd);
	text[off] = '\0';
	doc = cJSON_Parse(text);
	arr = cJSON_GetObjectItemCaseSensitive(doc, "bots");
	if (doc == NULL || !cJSON_IsArray(arr)) {
		snprintf(err, errlen, "%s is not a valid state file; move it aside to start afresh",
			 path);
		return -EINVAL;
	}
	cJSON_ArrayForEach(o, arr) {
		const char *name = str_field(o, "name");

		k++;
		b = load_bot(o, &why);
		if (b != NULL && auth_find(bots, b->name) != NULL) {
			why = "a bot of that name is already loaded";
			bot_free(b);
			b = NULL;
		}
		if (b == NULL) {
			log_msg(LOG_ERR, "%s: entry %u (bot %.64s) set aside: %s", path, k,
				name != NULL && bot_name_ok(name) ? name : "with no valid name",
				why);
			aside++;
			continue;
		}
		TAILQ_INSERT_TAIL(bots, b, entry);
	}
	if (aside > 0)
		set_aside(cfg, text, off, aside);
	return 0;
}

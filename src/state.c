/* SPDX-License-Identifier: MIT */
/*
 * Bots on disk: STATE/bots.json, rewritten atomically (temp file, fsync,
 * rename, fsync the folder) on every change, so a daemon killed at any
 * moment leaves either the old file or the new one.
 */
#include "src/agentfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "fusefs/fusefs.h"

#define STATE_FILE "bots.json"
#define STATE_MAX (64 * 1024 * 1024)

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
					rt->lost	  ? "lost"
					: b->busy	  ? "mounting"
					: rt->m != NULL ? "mounted"
							  : "unmounted");
		if (!b->busy && rt->error != NULL)
			cJSON_AddStringToObject(m, "error", rt->error);
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
	acct_put(b->fam);
	acct_put(b->op);
	free(b);
}

int state_save(const struct config *cfg, struct bots *bots)
{
	cleanup_cjson cJSON *doc = cJSON_CreateObject();
	cleanup_free char *text = NULL;
	cJSON *arr, *o;
	struct bot *b;

	cJSON_AddNumberToObject(doc, "version", 1);
	arr = cJSON_AddArrayToObject(doc, "bots");
	TAILQ_FOREACH(b, bots, entry) {
		if (b->deleting)
			continue;
		o = bot_to_json(b, false);
		if (b->request_id != NULL)
			cJSON_AddStringToObject(o, "request_id", b->request_id);
		cJSON_AddItemToObject(o, "git_roots", paths_json(&b->git_roots));
		cJSON_AddNumberToObject(o, "owner_uid", b->owner_uid);
		cJSON_AddItemToArray(arr, o);
	}
	text = cJSON_Print(doc);
	if (text == NULL)
		return -ENOMEM;
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

static struct bot *load_bot(const cJSON *o)
{
	struct bot *b = calloc(1, sizeof *b);
	const char *name = str_field(o, "name"), *folder = str_field(o, "folder");
	const char *sandbox = str_field(o, "sandbox"), *creator = str_field(o, "creator");
	const char *rid = str_field(o, "request_id");
	const cJSON *v;

	if (b == NULL || name == NULL || !bot_name_ok(name) ||
	    (creator != NULL && !bot_name_ok(creator)) || folder == NULL || folder[0] != '/' ||
	    sandbox == NULL || sandbox_parse(sandbox, &b->sandbox) != 0)
		goto bad;
	b->name = strdup(name);
	b->folder = strdup(folder);
	b->creator = creator != NULL ? strdup(creator) : NULL;
	b->request_id = rid != NULL ? strdup(rid) : NULL;
	if (load_paths(o, "writable", &b->writable) != 0 ||
	    load_paths(o, "readable", &b->readable) != 0 ||
	    load_paths(o, "git_roots", &b->git_roots) != 0 || load_pods(o, &b->pods) != 0)
		goto bad;
	b->network = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "network"));
	b->allow_new_repos = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "allow_new_repos"));
	if ((v = cJSON_GetObjectItemCaseSensitive(o, "ttl")) != NULL && cJSON_IsNumber(v))
		b->ttl = (long)v->valuedouble;
	/* a state from before limits, or one out of range: the default */
	if ((v = cJSON_GetObjectItemCaseSensitive(o, "memory_max")) != NULL && cJSON_IsNumber(v) &&
	    v->valuedouble >= MEMORY_MIN && v->valuedouble <= MEMORY_MAX)
		b->memory_max = (uint64_t)v->valuedouble;
	if ((v = cJSON_GetObjectItemCaseSensitive(o, "pids_max")) != NULL && cJSON_IsNumber(v) &&
	    v->valuedouble >= PIDS_MIN && v->valuedouble <= PIDS_MAX)
		b->pids_max = (uint64_t)v->valuedouble;
	if ((v = cJSON_GetObjectItemCaseSensitive(o, "created")) != NULL && cJSON_IsNumber(v))
		b->created = (time_t)v->valuedouble;
	if ((v = cJSON_GetObjectItemCaseSensitive(o, "expires")) != NULL && cJSON_IsNumber(v))
		b->expires = (time_t)v->valuedouble;
	if ((v = cJSON_GetObjectItemCaseSensitive(o, "owner_uid")) != NULL && cJSON_IsNumber(v))
		b->owner_uid = (uid_t)v->valuedouble;
	/* A state from before users: the folder's owner, found at mount. */
	if ((v = cJSON_GetObjectItemCaseSensitive(o, "uid")) != NULL && cJSON_IsNumber(v)) {
		b->uid = (uid_t)v->valuedouble;
		b->uid_set = true;
	}
	return b;
bad:
	bot_free(b);
	return NULL;
}

/* A state file that does not parse is an error: never overwrite what we cannot read. */
int state_load(const struct config *cfg, struct bots *bots, char *err, size_t errlen)
{
	cleanup_cjson cJSON *doc = NULL;
	cleanup_free char *text = NULL;
	char path[4096];
	const cJSON *arr, *o;
	struct bot *b;
	struct stat st;
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
		b = load_bot(o);
		if (b == NULL) {
			snprintf(err, errlen,
				 "%s: a bot entry is malformed; move the file aside to "
				 "start afresh",
				 path);
			return -EINVAL;
		}
		TAILQ_INSERT_TAIL(bots, b, entry);
	}
	return 0;
}

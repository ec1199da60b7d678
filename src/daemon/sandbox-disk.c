/* SPDX-License-Identifier: MIT */
/*
 * The sandboxes on disk, for a daemon started after this one (a crash, a
 * restart): STATE/sandboxes.json, every record at the time it was last
 * written whole, and STATE/sandboxes.log, what changed since, one JSON
 * record a line, each appended with one write(2) before the registration
 * it records is answered.
 *
 * Why two files: rewriting sandboxes.json whole (a temporary file renamed
 * over the old one) took about 1.2 ms of every `agentfs exec`, most of it
 * the rename, which makes ext4 start writing the new file back
 * (bench/README.md); an append to a file kept open takes a few
 * microseconds. The log is folded into sandboxes.json (compacted) when
 * the daemon starts, at a clean stop, and when it has grown past
 * LOG_SOFT_MAX (at a sandbox's end, off any exec's path) or LOG_HARD_MAX.
 *
 * Neither is synced: they must outlive the daemon, not the machine (after
 * a reboot no sandbox runs, and no start time matches). A line cut short
 * (a daemon killed in its write, a full disk) can only be the last one:
 * nothing is appended after a write that failed, and the next daemon
 * empties the log once it has read it. Such a line, or anything else that
 * is not a record, is skipped when read, and the others are read. Replaying
 * the log over sandboxes.json is idempotent (the last record of a sandbox
 * wins), so a compaction killed between writing sandboxes.json and
 * emptying the log loses nothing.
 */
#include "src/daemon/sandbox-int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <sys/stat.h>

#define SANDBOXES_FILE "sandboxes.json"
#define SANDBOXES_LOG "sandboxes.log"
#define SANDBOXES_FILE_MAX (SANDBOXES_MAX * 64 * 8 * 1024) /* far above what is written */
#define LOG_SOFT_MAX (64 * 1024)			   /* compacted at a sandbox's end */
#define LOG_HARD_MAX (1024 * 1024)			   /* compacted at once */
#define LOG_LINE_MAX (64 * 1024) /* a record: its command is capped at 4 KiB */

static struct {
	int fd;		/* STATE/sandboxes.log, O_APPEND; -1: none (each change rewrites all) */
	off_t bytes;	/* its length */
	bool broken;	/* a write failed: nothing more is appended until it is emptied */
	bool warned;	/* that it cannot be opened was said once */
	bool unread;	/* the start could not read what the files hold: never rewritten */
} sblog = {-1, 0, false, false, false};

static cJSON *sandbox_to_json(const struct sandbox_run *sb)
{
	cJSON *o = cJSON_CreateObject();

	if (o == NULL || cJSON_AddStringToObject(o, "bot", sb->bot->name) == NULL ||
	    cJSON_AddNumberToObject(o, "pid", sb->pid) == NULL ||
	    cJSON_AddNumberToObject(o, "pid_start", (double)sb->pid_start) == NULL ||
	    cJSON_AddNumberToObject(o, "child", sb->child) == NULL ||
	    cJSON_AddNumberToObject(o, "child_start", (double)sb->child_start) == NULL ||
	    cJSON_AddNumberToObject(o, "uid", sb->uid) == NULL ||
	    cJSON_AddNumberToObject(o, "run_uid", sb->run_uid) == NULL ||
	    cJSON_AddNumberToObject(o, "started", (double)sb->started) == NULL ||
	    cJSON_AddStringToObject(o, "cgroup", sb->cg) == NULL ||
	    cJSON_AddNumberToObject(o, "memory_max", (double)sb->memory_max) == NULL ||
	    cJSON_AddNumberToObject(o, "pids_max", (double)sb->pids_max) == NULL ||
	    (sb->argv != NULL &&
	     !cJSON_AddItemToObject(o, "argv", cJSON_Duplicate(sb->argv, true)))) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* The log, opened (made if need be) for appends, its length known; not a FIFO nor a link. */
static void sblog_open(void)
{
	char path[PATH_MAX];
	struct stat st;

	if (sblog.fd >= 0)
		return;
	snprintf(path, sizeof path, "%s/%s", bots_state.cfg->state_dir, SANDBOXES_LOG);
	sblog.fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK,
			0600);
	if (sblog.fd < 0 || fstat(sblog.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		if (!sblog.warned)
			log_msg(LOG_WARNING,
				"cannot keep %s: %s; each change of the running sandboxes "
				"rewrites %s whole",
				path, sblog.fd < 0 ? strerror(errno) : "not a regular file",
				SANDBOXES_FILE);
		sblog.warned = true;
		if (sblog.fd >= 0)
			close(sblog.fd);
		sblog.fd = -1;
		return;
	}
	sblog.bytes = st.st_size;
}

/*
 * STATE/sandboxes.json rewritten whole from what this daemon holds, and
 * the log emptied once that is done (never before: its records would be
 * in neither). A failure is logged: the sandboxes are still known until
 * the daemon stops, and the log keeps what it had.
 */
void sandboxes_save(void)
{
	cleanup_cjson cJSON *root = NULL;
	cJSON *arr, *o;
	const cJSON *u;
	struct sandbox_run *sb;
	struct bot *b;
	char *text;
	int r;

	if (sblog.unread && !sandboxes_take_back()) {
		log_msg(LOG_WARNING,
			"%s/%s is not rewritten: it could not be read yet, and may list "
			"sandboxes that still run (changes go to %s)",
			bots_state.cfg->state_dir, SANDBOXES_FILE, SANDBOXES_LOG);
		return;
	}
	root = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(root, "sandboxes");
	if (arr == NULL)
		goto oom;
	TAILQ_FOREACH(b, &bots_state.bots, entry)
		LIST_FOREACH(sb, &b->sandboxes, entry) {
			if ((o = sandbox_to_json(sb)) == NULL)
				goto oom;
			cJSON_AddItemToArray(arr, o);
		}
	/* those the start could not take back, as they were (sandbox.c) */
	cJSON_ArrayForEach(u, sandboxes_unsure()) {
		if ((o = cJSON_Duplicate(u, true)) == NULL)
			goto oom;
		cJSON_AddItemToArray(arr, o);
	}
	text = cJSON_PrintUnformatted(root);
	if (text == NULL)
		goto oom;
	r = write_file_replace(bots_state.cfg->state_dir, SANDBOXES_FILE, text, strlen(text),
			       false);
	free(text);
	if (r != 0) {
		log_msg(LOG_ERR, "cannot save the running sandboxes in %s/%s: %s",
			bots_state.cfg->state_dir, SANDBOXES_FILE, strerror(-r));
		return;
	}
	sblog_open();
	if (sblog.fd >= 0 && ftruncate(sblog.fd, 0) == 0) {
		sblog.bytes = 0;
		sblog.broken = false;
	}
	return;
oom:
	log_msg(LOG_ERR, "cannot save the running sandboxes: out of memory");
}

/* One line to the log, in one write; false if it is not all there (nothing more goes after it). */
static bool log_append(cJSON *rec)
{
	char *text = cJSON_PrintUnformatted(rec), *line;
	size_t n;
	ssize_t w;

	if (text == NULL)
		return false;
	n = strlen(text);
	line = realloc(text, n + 1);
	if (line == NULL) {
		free(text);
		return false;
	}
	line[n++] = '\n'; /* not a C string from here: written by length */
	w = write(sblog.fd, line, n);
	free(line);
	if (w > 0)
		sblog.bytes += w;
	if (w != (ssize_t)n) {
		/* a part of a line, or nothing: the next line would be glued to it */
		sblog.broken = true;
		log_msg(LOG_WARNING, "cannot append to %s/%s: %s; rewriting %s whole",
			bots_state.cfg->state_dir, SANDBOXES_LOG,
			w < 0 ? strerror(errno) : "short write", SANDBOXES_FILE);
		return false;
	}
	return true;
}

/*
 * sb was registered, or its bwrap set again: its whole record, one line
 * to the log, before the registration is answered; the whole file
 * rewritten instead when there is no log to append to, or it is too long.
 */
void sandbox_log_add(const struct sandbox_run *sb)
{
	cleanup_cjson cJSON *rec = NULL;

	sblog_open();
	if (sblog.fd < 0 || sblog.broken || (rec = sandbox_to_json(sb)) == NULL ||
	    cJSON_AddStringToObject(rec, "op", "add") == NULL || !log_append(rec) ||
	    sblog.bytes > LOG_HARD_MAX)
		sandboxes_save();
}

/*
 * sb ended: its pid and start time, one line to the log, before sb is
 * freed. True if the whole file must be rewritten once it is gone (the
 * line could not be appended, or it is time to compact).
 */
bool sandbox_log_end(const struct sandbox_run *sb)
{
	cleanup_cjson cJSON *rec = NULL;

	sblog_open();
	if (sblog.fd < 0 || sblog.broken)
		return true;
	rec = cJSON_CreateObject();
	if (rec == NULL || cJSON_AddStringToObject(rec, "op", "end") == NULL ||
	    cJSON_AddNumberToObject(rec, "pid", sb->pid) == NULL ||
	    cJSON_AddNumberToObject(rec, "pid_start", (double)sb->pid_start) == NULL ||
	    !log_append(rec))
		return true;
	return sblog.bytes > LOG_SOFT_MAX;
}

/* At a clean stop: everything in sandboxes.json, the log empty and closed. */
void sandboxes_disk_stop(void)
{
	sandboxes_save();
	if (sblog.fd >= 0)
		close(sblog.fd);
	sblog.fd = -1;
}

/* ---- read back at start ---------------------------------------------------------- */

static bool same_sandbox(const cJSON *a, const cJSON *b)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(a, "pid");
	const cJSON *q = cJSON_GetObjectItemCaseSensitive(b, "pid");
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(a, "pid_start");
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(b, "pid_start");

	return cJSON_IsNumber(p) && cJSON_IsNumber(q) && cJSON_IsNumber(s) && cJSON_IsNumber(t) &&
	       p->valuedouble == q->valuedouble && s->valuedouble == t->valuedouble;
}

/* Every record of arr for the sandbox of rec goes. */
static void forget(cJSON *arr, const cJSON *rec)
{
	cJSON *o = arr->child, *next;

	for (; o != NULL; o = next) {
		next = o->next;
		if (same_sandbox(o, rec))
			cJSON_Delete(cJSON_DetachItemViaPointer(arr, o));
	}
}

/* One line of the log applied to arr; false if it is no record. */
static bool replay_line(cJSON *arr, const char *line, size_t len)
{
	cJSON *rec = cJSON_ParseWithLength(line, len);
	const cJSON *op = cJSON_GetObjectItemCaseSensitive(rec, "op");
	const cJSON *pid = cJSON_GetObjectItemCaseSensitive(rec, "pid");
	const cJSON *start = cJSON_GetObjectItemCaseSensitive(rec, "pid_start");

	if (!cJSON_IsObject(rec) || !cJSON_IsString(op) || !cJSON_IsNumber(pid) ||
	    !cJSON_IsNumber(start) ||
	    (strcmp(op->valuestring, "add") != 0 && strcmp(op->valuestring, "end") != 0)) {
		cJSON_Delete(rec);
		return false;
	}
	forget(arr, rec);
	if (strcmp(op->valuestring, "add") == 0) {
		cJSON_DeleteItemFromObjectCaseSensitive(rec, "op");
		cJSON_AddItemToArray(arr, rec);
	} else {
		cJSON_Delete(rec);
	}
	return true;
}

/*
 * The log, line by line, over arr. Only whole lines count: a last one
 * without its newline is what a write cut short left. A line too long to
 * be a record is skipped to its end. The count of lines skipped.
 */
static unsigned replay(int fd, cJSON *arr, bool *whole)
{
	cleanup_free char *line = malloc(LOG_LINE_MAX);
	char chunk[16384];
	size_t len = 0, i;
	unsigned bad = 0;
	bool skipping = false;
	ssize_t n;

	if (line == NULL) {
		*whole = false;
		return 1;
	}
	while ((n = read(fd, chunk, sizeof chunk)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			*whole = false;
			return bad + 1;
		}
		for (i = 0; i < (size_t)n; i++) {
			if (chunk[i] == '\n') {
				if (skipping || (len > 0 && !replay_line(arr, line, len)))
					bad++;
				len = 0;
				skipping = false;
			} else if (!skipping && len < LOG_LINE_MAX) {
				line[len++] = chunk[i];
			} else {
				skipping = true;
			}
		}
	}
	return bad + (len > 0 || skipping);
}

/*
 * What a previous daemon left: the records of sandboxes.json with the log
 * replayed over them, as an array the caller owns (never NULL but without
 * memory). A malformed sandboxes.json or a log with lines that are not
 * records is said in the log and read as far as it goes: nothing here stops
 * the daemon from starting. A file that could not be read at all (out of
 * descriptors or memory, an I/O error) says nothing of what it holds:
 * sandboxes_unread() is then true, and nothing may rewrite the files (the
 * records would be lost for good) nor end a cgroup they may name until a
 * read succeeds.
 */
cJSON *sandboxes_read(void)
{
	char path[PATH_MAX];
	cleanup_free char *text = malloc(SANDBOXES_FILE_MAX + 2);
	cleanup_cjson cJSON *root = NULL;
	cJSON *arr = NULL, *o;
	struct stat st;
	unsigned bad;
	bool whole;
	ssize_t n;
	int fd, e;

	snprintf(path, sizeof path, "%s/%s", bots_state.cfg->state_dir, SANDBOXES_FILE);
	errno = ENOMEM;
	n = text != NULL ? read_text(AT_FDCWD, path, text, SANDBOXES_FILE_MAX + 2) : -1;
	e = n < 0 ? errno : 0;
	whole = e == 0 || e == ENOENT;
	root = n > 0 && n <= SANDBOXES_FILE_MAX ? cJSON_ParseWithLength(text, (size_t)n) : NULL;
	o = cJSON_GetObjectItemCaseSensitive(root, "sandboxes");
	if (cJSON_IsArray(o))
		arr = cJSON_DetachItemViaPointer(root, o);
	else if (e != 0 && e != ENOENT)
		log_msg(LOG_WARNING,
			"cannot read %s: %s: sandboxes it lists that still run are not known "
			"for now (rm does not see them); the file is kept as it is, and read "
			"again before it would be rewritten",
			path, strerror(e));
	else if (e == 0)
		log_msg(LOG_WARNING,
			"%s is malformed: sandboxes it listed that still run are not known "
			"(rm will not see them)",
			path);
	if (arr == NULL && (arr = cJSON_CreateArray()) == NULL) {
		sblog.unread = true;
		return NULL;
	}
	snprintf(path, sizeof path, "%s/%s", bots_state.cfg->state_dir, SANDBOXES_LOG);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		e = errno;
		if (e != ENOENT)
			log_msg(LOG_WARNING,
				"cannot read %s: %s: sandboxes registered since %s was written "
				"are not known for now (rm does not see them)",
				path, strerror(e), SANDBOXES_FILE);
		/* a link there (ELOOP) is no log of ours: nothing to read again */
		whole = whole && (e == ENOENT || e == ELOOP);
		goto out;
	}
	bad = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? replay(fd, arr, &whole) : 1;
	close(fd);
	if (bad > 0)
		log_msg(LOG_WARNING, "%s: skipped %u line%s that %s not a whole record", path, bad,
			bad == 1 ? "" : "s", bad == 1 ? "is" : "are");
out:
	sblog.unread = !whole;
	return arr;
}

bool sandboxes_unread(void)
{
	return sblog.unread;
}

/* SPDX-License-Identifier: MIT */
/*
 * Fuzzer for the daemon's protocol layer: src/daemon/proto.c (parsing, type checks,
 * NUL detection, the bot spec) with src/common/util.c, over small fakes of what
 * proto.c calls outside itself (server_reply and the bots_* operations).
 *
 * The input is a session: lines split on '\n' as server.c splits them (a
 * trailing '\r' dropped, NUL-terminated copies, empty lines skipped).  Each
 * line must get exactly one well-formed reply; the fake bots check that every
 * spec proto.c hands over is sane (names, normalised absolute paths, ttl),
 * answer as the real ones would, and sometimes defer the answer the way a job
 * does.  Each line is also fed to the path and name helpers of util.c, whose
 * results are checked against reference implementations.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/common/agentfs.h"
#include "tests/fuzz/fuzz.h"

#define MAX_LINES 64

static char peer_storage[16];
static struct peer *const the_peer = (struct peer *)peer_storage;
static unsigned replies;       /* replies to the current line */
static struct request pending; /* a deferred answer, completed after the line */
static bool have_pending;
static bool line_has_nul; /* the current line holds an escaped NUL (\u0000) */

static void check_reply(const cJSON *reply)
{
	const cJSON *ok, *err, *code, *msg, *id;

	FUZZ_CHECK(cJSON_IsObject(reply));
	ok = cJSON_GetObjectItemCaseSensitive(reply, "ok");
	FUZZ_CHECK(cJSON_IsBool(ok));
	if (cJSON_IsFalse(ok)) {
		err = cJSON_GetObjectItemCaseSensitive(reply, "error");
		FUZZ_CHECK(cJSON_IsObject(err));
		code = cJSON_GetObjectItemCaseSensitive(err, "code");
		msg = cJSON_GetObjectItemCaseSensitive(err, "message");
		FUZZ_CHECK(cJSON_IsString(code) && code->valuestring && *code->valuestring);
		FUZZ_CHECK(cJSON_IsString(msg) && msg->valuestring);
	}
	id = cJSON_GetObjectItemCaseSensitive(reply, "id");
	if (id != NULL) {
		FUZZ_CHECK(cJSON_IsString(id) || cJSON_IsNumber(id));
		if (cJSON_IsString(id))
			FUZZ_CHECK(strlen(id->valuestring) <= 256);
	}
}

/* server.c: prints the reply as one line and queues it */
void server_reply(struct peer *p, cJSON *reply)
{
	char *text;

	FUZZ_CHECK(p == the_peer);
	FUZZ_CHECK(reply != NULL);
	check_reply(reply);
	/* cJSON cuts strings at a NUL: such a request is refused, whatever field */
	if (line_has_nul && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok")))
		FUZZ_FAIL("a request holding \\u0000 was answered ok");
	text = cJSON_PrintUnformatted(reply);
	FUZZ_CHECK(text != NULL);
	/* one reply per line: the printed form never holds a raw newline */
	FUZZ_CHECK(strchr(text, '\n') == NULL);
	free(text);
	cJSON_Delete(reply);
	replies++;
}

/* Reference: 1 to 64 of [A-Za-z0-9_-], not starting with '-' */
static bool ref_name_ok(const char *s)
{
	size_t n = strlen(s), i;

	if (n < 1 || n > BOT_NAME_MAX || s[0] == '-')
		return false;
	for (i = 0; i < n; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_",
			    s[i]))
			return false;
	return true;
}

/* Absolute, no empty, "." or ".." component, no trailing slash but "/" */
static bool is_normal(const char *p)
{
	const char *c, *e;

	if (p == NULL || p[0] != '/')
		return false;
	if (strcmp(p, "/") == 0)
		return true;
	for (c = p + 1;; c = e + 1) {
		e = strchr(c, '/');
		size_t n = e ? (size_t)(e - c) : strlen(c);

		if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		if (e == NULL)
			return true;
	}
}

static void check_paths(const struct paths *ps)
{
	size_t i, j;

	FUZZ_CHECK(ps->n <= 64);
	for (i = 0; i < ps->n; i++) {
		FUZZ_CHECK(is_normal(ps->v[i]));
		FUZZ_CHECK(strlen(ps->v[i]) < PATH_MAX);
		/* a path within an earlier one is dropped as redundant */
		for (j = 0; j < i; j++)
			FUZZ_CHECK(!path_within(ps->v[i], ps->v[j]));
	}
}

enum which { W_CREATE, W_CONFIGURE, W_FORK };

static void check_spec(const struct bot_spec *s, enum which w)
{
	FUZZ_CHECK(!line_has_nul);
	FUZZ_CHECK(s->name != NULL && ref_name_ok(s->name));
	if (w == W_FORK)
		FUZZ_CHECK(s->as != NULL && ref_name_ok(s->as));
	else
		FUZZ_CHECK(s->as == NULL);
	if (w == W_CREATE)
		FUZZ_CHECK(s->folder != NULL && is_normal(s->folder));
	else
		FUZZ_CHECK(s->folder == NULL);
	if (s->has_sandbox)
		FUZZ_CHECK(s->sandbox == SANDBOX_READ_ONLY || s->sandbox == SANDBOX_WORKSPACE_WRITE ||
			   s->sandbox == SANDBOX_DANGER_FULL_ACCESS);
	else
		FUZZ_CHECK(s->sandbox == SANDBOX_READ_ONLY);
	if (s->has_writable)
		check_paths(&s->writable);
	else
		FUZZ_CHECK(s->writable.n == 0 && s->writable.v == NULL);
	if (s->has_readable)
		check_paths(&s->readable);
	else
		FUZZ_CHECK(s->readable.n == 0 && s->readable.v == NULL);
	if (!s->has_network)
		FUZZ_CHECK(!s->network);
	if (!s->has_allow_new_repos)
		FUZZ_CHECK(!s->allow_new_repos);
	if (s->has_ttl)
		FUZZ_CHECK(s->ttl >= 0 && s->ttl <= 365L * 86400);
	else
		FUZZ_CHECK(s->ttl == 0);
}

static void fail(struct request *r, const char *code, const char *msg)
{
	request_fail(r, proto_error_line(code, msg));
}

static cJSON *bot_body(const char *name)
{
	cJSON *body = cJSON_CreateObject(), *b = cJSON_AddObjectToObject(body, "bot");

	cJSON_AddStringToObject(b, "name", name);
	return body;
}

/*
 * Answer now or later, as the real operations do: names starting with
 * a-m defer (a job takes the request over), n-z fail, others succeed now.
 */
static bool answer(struct request *r, const char *name, bool may_defer)
{
	char c = name[0] | 0x20;

	FUZZ_CHECK(r->peer == the_peer);
	FUZZ_CHECK(r->id == NULL || cJSON_IsString(r->id) || cJSON_IsNumber(r->id));
	if (may_defer && c >= 'a' && c <= 'm') {
		FUZZ_CHECK(!have_pending);
		pending = *r;
		have_pending = true;
		return true;
	}
	if (c >= 'n' && c <= 'z') {
		fail(r, "not_found", "no such bot");
		return false;
	}
	request_reply(r, bot_body(name));
	return false;
}

bool bots_create(struct request *r, struct bot_spec *s)
{
	check_spec(s, W_CREATE);
	return answer(r, s->name, true);
}

bool bots_fork(struct request *r, struct bot_spec *s)
{
	check_spec(s, W_FORK);
	return answer(r, s->as, true);
}

bool bots_configure(struct request *r, struct bot_spec *s)
{
	check_spec(s, W_CONFIGURE);
	/* the real one takes the new path lists over; proto.c frees the rest */
	if (s->has_writable && (s->name[0] & 1)) {
		paths_free(&s->writable);
		memset(&s->writable, 0, sizeof s->writable);
	}
	return answer(r, s->name, true);
}

bool bots_delete(struct request *r, const char *name, bool force)
{
	FUZZ_CHECK(!line_has_nul);
	FUZZ_CHECK(name != NULL && ref_name_ok(name));
	return answer(r, name, true);
}

void bots_exec_register(struct request *r, const char *name, const cJSON *req)
{
	FUZZ_CHECK(!line_has_nul);
	FUZZ_CHECK(name != NULL && ref_name_ok(name));
	answer(r, name, false);
}

void bots_ps(struct request *r)
{
	cJSON *body = cJSON_CreateObject();

	FUZZ_CHECK(!line_has_nul);
	cJSON_AddArrayToObject(body, "sandboxes");
	request_reply(r, body);
}

void bots_list(struct request *r)
{
	cJSON *body = cJSON_CreateObject();

	FUZZ_CHECK(!line_has_nul);
	cJSON_AddArrayToObject(body, "bots");
	request_reply(r, body);
}

void bots_show(struct request *r, const char *name)
{
	FUZZ_CHECK(!line_has_nul);
	FUZZ_CHECK(name != NULL && ref_name_ok(name));
	answer(r, name, false);
}

void bots_status(struct request *r)
{
	cJSON *body = cJSON_CreateObject();

	FUZZ_CHECK(!line_has_nul);
	cJSON_AddNumberToObject(body, "protocol", PROTOCOL_VERSION);
	request_reply(r, body);
}

void bots_exec_plan(struct request *r, const cJSON *req, const char *pod)
{
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(req, "name");
	const char *name = cJSON_IsString(n) ? n->valuestring : NULL;

	FUZZ_CHECK(!line_has_nul);
	FUZZ_CHECK(name != NULL && ref_name_ok(name));
	FUZZ_CHECK(pod == NULL || pod_name_ok(pod));
	answer(r, name, false);
}

bool bots_log(struct request *r, const char *name, uint64_t since, bool follow)
{
	FUZZ_CHECK(!line_has_nul);
	FUZZ_CHECK(name == NULL || ref_name_ok(name));
	(void)since;
	(void)follow;
	return answer(r, name != NULL ? name : "log", false);
}

void bots_changes(struct request *r, const char *name, uint64_t since, const char *after,
		  bool mark)
{
	FUZZ_CHECK(!line_has_nul);
	FUZZ_CHECK(name != NULL && ref_name_ok(name));
	FUZZ_CHECK(!mark || (since == 0 && after == NULL));
	FUZZ_CHECK(after == NULL || (after[0] == '/' && strlen(after) <= 4095));
	answer(r, name, false);
}

void bots_shutdown(struct request *r)
{
	FUZZ_CHECK(!line_has_nul);
	request_reply(r, NULL);
}

/* Reference normaliser: a stack of components */
static char *ref_normalise(const char *in)
{
	size_t n = strlen(in), i = 0, olen = 0;
	char *out = malloc(n + 2);

	FUZZ_CHECK(out != NULL);
	out[0] = '\0';
	while (i < n) {
		size_t j;

		while (i < n && in[i] == '/')
			i++;
		for (j = i; j < n && in[j] != '/'; j++)
			;
		if (j == i)
			break;
		if (j - i == 1 && in[i] == '.') {
			/* nothing */
		} else if (j - i == 2 && in[i] == '.' && in[i + 1] == '.') {
			while (olen > 0 && out[olen - 1] != '/')
				olen--;
			if (olen > 0)
				olen--;
		} else {
			out[olen++] = '/';
			memcpy(out + olen, in + i, j - i);
			olen += j - i;
		}
		i = j;
	}
	if (olen == 0)
		out[olen++] = '/';
	out[olen] = '\0';
	return out;
}

static void check_normalise(const char *in)
{
	char *out = NULL, *again = NULL, *ref;
	int rc = path_normalise(in, &out);

	if (in[0] != '/') {
		FUZZ_CHECK(rc == -EINVAL && out == NULL);
		return;
	}
	if (strlen(in) >= PATH_MAX) {
		FUZZ_CHECK(rc == -ENAMETOOLONG && out == NULL);
		return;
	}
	FUZZ_CHECK(rc == 0 && out != NULL);
	FUZZ_CHECK(is_normal(out));
	FUZZ_CHECK(strstr(out, "//") == NULL && strstr(out, "/./") == NULL &&
		   strstr(out, "/../") == NULL);
	FUZZ_CHECK(strlen(out) <= strlen(in));
	ref = ref_normalise(in);
	if (strcmp(ref, out) != 0)
		FUZZ_FAIL("path_normalise(\"%s\") = \"%s\", expected \"%s\"", in, out, ref);
	free(ref);
	FUZZ_CHECK(path_normalise(out, &again) == 0);
	FUZZ_CHECK(strcmp(again, out) == 0);
	FUZZ_CHECK(path_within(out, out));
	FUZZ_CHECK(path_within(out, "/"));
	free(again);
	free(out);
}

/* path_within(a, b) against "b is a, or a prefix of a ending at a '/'" */
static void check_within(const char *a_in, const char *b_in)
{
	char *a, *b;
	size_t bl;
	bool ref, got;

	if (path_normalise(a_in, &a) != 0)
		return;
	if (path_normalise(b_in, &b) != 0) {
		free(a);
		return;
	}
	bl = strlen(b);
	ref = strcmp(b, "/") == 0 || strcmp(a, b) == 0 ||
	      (strncmp(a, b, bl) == 0 && a[bl] == '/');
	got = path_within(a, b);
	if (got != ref)
		FUZZ_FAIL("path_within(\"%s\", \"%s\") = %d", a, b, got);
	if (got && path_within(b, a))
		FUZZ_CHECK(strcmp(a, b) == 0);
	free(a);
	free(b);
}

static void check_util(const char *line, size_t len)
{
	char *slashed, *half;
	size_t mid = len / 2;

	FUZZ_CHECK(bot_name_ok(line) == ref_name_ok(line));
	check_normalise(line);
	slashed = malloc(len + 2);
	FUZZ_CHECK(slashed != NULL);
	slashed[0] = '/';
	memcpy(slashed + 1, line, len + 1);
	check_normalise(slashed);
	/* two paths from the two halves of the line */
	half = malloc(mid + 2);
	FUZZ_CHECK(half != NULL);
	half[0] = '/';
	memcpy(half + 1, line, mid);
	half[mid + 1] = '\0';
	check_within(half, slashed);
	check_within(slashed, half);
	free(half);
	free(slashed);
}

/* An odd run of backslashes then u0000, independent of proto.c's scanner */
static bool escaped_nul(const char *line, size_t len)
{
	size_t i = 0, run;

	while (i < len) {
		if (line[i] != '\\') {
			i++;
			continue;
		}
		for (run = 0; i < len && line[i] == '\\'; i++)
			run++;
		if ((run & 1) && len - i >= 5 && memcmp(line + i, "u0000", 5) == 0)
			return true;
	}
	return false;
}

static void one_line(const char *start, size_t len)
{
	char *line;
	bool deferred;

	if (len > 0 && start[len - 1] == '\r')
		len--;
	if (len == 0 || len > LINE_MAX_BYTES)
		return;
	line = malloc(len + 1);
	FUZZ_CHECK(line != NULL);
	memcpy(line, start, len);
	line[len] = '\0';
	replies = 0;
	have_pending = false;
	line_has_nul = escaped_nul(line, len);
	deferred = proto_dispatch(NULL, the_peer, line, len);
	FUZZ_CHECK(deferred == have_pending);
	if (deferred) {
		FUZZ_CHECK(replies == 0);
		/* the job ends: answered, then its copy of the id freed (job_finish) */
		request_reply(&pending, bot_body("done"));
		cJSON_Delete(pending.id);
		have_pending = false;
	}
	if (replies != 1)
		FUZZ_FAIL("%u replies to one request line", replies);
	/* paths and names: only on NUL-free lines, as C strings */
	if (memchr(line, '\0', len) == NULL)
		check_util(line, len);
	free(line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size, *nl;
	int n = 0;

	while (p < end && n++ < MAX_LINES) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL) {
			one_line(p, (size_t)(end - p));
			break;
		}
		one_line(p, (size_t)(nl - p));
		p = nl + 1;
	}
	return 0;
}

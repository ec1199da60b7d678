/* SPDX-License-Identifier: MIT */
/*
 * The protocol: one JSON object per line in, one per line out. Parses and
 * type-checks a request, then hands it to its handler in the command table
 * (ops), which calls the bots_* functions (bots-int.h). Never sees a socket.
 */
#include "src/common/agentfs.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cJSON *proto_error_line(const char *code, const char *msg)
{
	cJSON *r = cJSON_CreateObject(), *e = cJSON_CreateObject();

	cJSON_AddBoolToObject(r, "ok", false);
	cJSON_AddStringToObject(e, "code", code);
	cJSON_AddStringToObject(e, "message", msg);
	cJSON_AddItemToObject(r, "error", e);
	return r;
}

cJSON *proto_error(const char *code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return proto_error_line(code, msg);
}

void request_reply(struct request *r, cJSON *body)
{
	if (body == NULL)
		body = cJSON_CreateObject();
	cJSON_AddBoolToObject(body, "ok", true);
	if (r->id != NULL)
		cJSON_AddItemToObject(body, "id", cJSON_Duplicate(r->id, true));
	if (r->peer != NULL)
		server_reply(r->peer, body);
	else
		cJSON_Delete(body);
}

void request_fail(struct request *r, cJSON *error)
{
	if (r->id != NULL)
		cJSON_AddItemToObject(error, "id", cJSON_Duplicate(r->id, true));
	if (r->peer != NULL)
		server_reply(r->peer, error);
	else
		cJSON_Delete(error);
}

void bot_spec_free(struct bot_spec *s)
{
	free(s->name);
	free(s->as);
	free(s->folder);
	paths_free(&s->writable);
	paths_free(&s->readable);
	paths_free(&s->pods);
}

struct field {
	const char *name;
	/* cJSON_String, cJSON_True (bool), cJSON_Number, cJSON_Array (of paths), POD_ARRAY,
	 * FIELD_STRINGS */
	int type;
	bool required;
};
#define POD_ARRAY (1 << 16) /* an array of pod names: a tag of ours, not a cJSON type */
#define FIELD_STRINGS (1 << 17) /* an array of strings */

/*
 * One row of the command table: an op, its fields, and its handler, which
 * answers now or later and says which (true: a job holds the peer). An op
 * with nothing to read but its name, or nothing at all, and answered now,
 * names its bots_* function instead (named, plain).
 */
struct op {
	const char *name;
	const struct field *fields;
	bool (*run)(struct request *r, const cJSON *req, struct bot_spec *s);
	void (*named)(struct request *r, const char *name);
	void (*plain)(struct request *r);
};

static const struct field f_none[] = {{NULL, 0, false}};
static const struct field f_version[] = {{"protocol", cJSON_Number, false}, {NULL, 0, false}};
static const struct field f_name[] = {{"name", cJSON_String, true}, {NULL, 0, false}};
static const struct field f_delete[] = {
	{"name", cJSON_String, true}, {"force", cJSON_True, false}, {NULL, 0, false}};
static const struct field f_exec_register[] = {
	{"name", cJSON_String, true}, {"pid", cJSON_Number, false}, {"child", cJSON_Number, false},
	{"argv", FIELD_STRINGS, false}, {NULL, 0, false}};
static const struct field f_create[] = {
	{"name", cJSON_String, true},
	{"sandbox", cJSON_String, false},
	{"folder", cJSON_String, true},
	{"writable", cJSON_Array, false},
	{"readable", cJSON_Array, false},
	{"network", cJSON_True, false},
	{"allow_new_repos", cJSON_True, false},
	{"ttl", cJSON_Number, false},
	{"user", cJSON_String, false},
	{"progress", cJSON_True, false},
	{"pods", POD_ARRAY, false},
	{"memory_max", cJSON_Number, false},
	{"pids_max", cJSON_Number, false},
	{NULL, 0, false},
};
static const struct field f_configure[] = {
	{"name", cJSON_String, true},	  {"sandbox", cJSON_String, false},
	{"writable", cJSON_Array, false}, {"readable", cJSON_Array, false},
	{"network", cJSON_True, false},	  {"allow_new_repos", cJSON_True, false},
	{"ttl", cJSON_Number, false},	  {"progress", cJSON_True, false},
	{"pods", POD_ARRAY, false},	  {"memory_max", cJSON_Number, false},
	{"pids_max", cJSON_Number, false}, {NULL, 0, false},
};
static const struct field f_fork[] = {
	{"name", cJSON_String, true},
	{"as", cJSON_String, true},
	{"sandbox", cJSON_String, false},
	{"writable", cJSON_Array, false},
	{"readable", cJSON_Array, false},
	{"network", cJSON_True, false},
	{"allow_new_repos", cJSON_True, false},
	{"ttl", cJSON_Number, false},
	{"progress", cJSON_True, false},
	{"pods", POD_ARRAY, false},
	{"memory_max", cJSON_Number, false},
	{"pids_max", cJSON_Number, false},
	{NULL, 0, false},
};
static const struct field f_exec_plan[] = {{"name", cJSON_String, true},
					    {"pod", cJSON_String, false},
					    {"child", cJSON_Number, false},
					    {"argv", FIELD_STRINGS, false},
					    {NULL, 0, false}};

static const struct field f_log[] = {{"name", cJSON_String, false},
				     {"since", cJSON_Number, false},
				     {"follow", cJSON_True, false},
				     {NULL, 0, false}};

static const struct field f_changes[] = {{"name", cJSON_String, true},
					 {"since", cJSON_Number, false},
					 {"after", cJSON_String, false},
					 {NULL, 0, false}};

static const char *type_name(int type)
{
	switch (type) {
	case cJSON_String:
		return "a string";
	case cJSON_True:
		return "true or false";
	case cJSON_Number:
		return "a number";
	case cJSON_Array:
		return "an array of absolute paths";
	case POD_ARRAY:
		return "an array of \"NAMESPACE/SERVICEACCOUNT\" strings";
	case FIELD_STRINGS:
		return "an array of strings";
	}
	return "?";
}

static bool type_ok(const cJSON *v, int type)
{
	switch (type) {
	case cJSON_String:
		return cJSON_IsString(v) && v->valuestring != NULL;
	case cJSON_True:
		return cJSON_IsBool(v);
	case cJSON_Number:
		return cJSON_IsNumber(v);
	case cJSON_Array:
	case POD_ARRAY:
		return cJSON_IsArray(v);
	case FIELD_STRINGS:
		if (!cJSON_IsArray(v))
			return false;
		for (v = v->child; v != NULL; v = v->next)
			if (!cJSON_IsString(v) || v->valuestring == NULL)
				return false;
		return true;
	}
	return false;
}

/* Check every field: known, of the right type, given once, required ones present. */
static cJSON *check_fields(const cJSON *req, const struct op *op)
{
	const struct field *f;
	const cJSON *v, *w;

	for (v = req->child; v != NULL; v = v->next) {
		if (v->string == NULL)
			return proto_error("bad_request", "a field has no name");
		for (w = req->child; w != v; w = w->next)
			if (strcmp(w->string, v->string) == 0)
				return proto_error("bad_request", "field \"%s\" given twice",
						   v->string);
		if (strcmp(v->string, "op") == 0 || strcmp(v->string, "id") == 0)
			continue;
		for (f = op->fields; f->name != NULL; f++)
			if (strcmp(f->name, v->string) == 0)
				break;
		if (f->name == NULL)
			return proto_error("unknown_field", "op \"%s\" has no field \"%.64s\"",
					   op->name, v->string);
		if (!type_ok(v, f->type))
			return proto_error("bad_type", "field \"%s\" must be %s", f->name,
					   type_name(f->type));
	}
	for (f = op->fields; f->name != NULL; f++)
		if (f->required && cJSON_GetObjectItemCaseSensitive(req, f->name) == NULL)
			return proto_error("bad_request", "op \"%s\" needs field \"%s\"", op->name,
					   f->name);
	return NULL;
}

static cJSON *parse_path(const char *field, const char *in, char **out)
{
	int r = path_normalise(in, out);

	if (r == -EINVAL)
		return proto_error("bad_path", "%s: \"%.256s\" is not an absolute path", field, in);
	if (r != 0)
		return proto_error("bad_path", "%s: \"%.256s\": %s", field, in, strerror(-r));
	return NULL;
}

static cJSON *parse_paths(const cJSON *arr, const char *field, struct paths *out)
{
	const cJSON *v;
	char *p;
	cJSON *err;

	/* Checked first: deduplicating a huge array would take quadratic time. */
	if (cJSON_GetArraySize(arr) > 64)
		return proto_error("limit", "field \"%s\" has more than 64 paths", field);
	cJSON_ArrayForEach(v, arr) {
		if (!cJSON_IsString(v) || v->valuestring == NULL)
			return proto_error("bad_type", "field \"%s\" must be %s", field,
					   type_name(cJSON_Array));
		if ((err = parse_path(field, v->valuestring, &p)) != NULL)
			return err;
		if (!paths_contains(out, p) && paths_add(out, p) != 0) {
			free(p);
			return proto_error("internal", "out of memory");
		}
		free(p);
	}
	if (out->n > 64)
		return proto_error("limit", "field \"%s\" has more than 64 paths", field);
	return NULL;
}

/* Pods a bot names (pod_name_ok), each once, at most 64. */
static cJSON *parse_pods(const cJSON *arr, struct paths *out)
{
	const cJSON *v;

	if (cJSON_GetArraySize(arr) > 64)
		return proto_error("limit", "field \"pods\" has more than 64 pods");
	cJSON_ArrayForEach(v, arr) {
		if (!cJSON_IsString(v) || v->valuestring == NULL)
			return proto_error("bad_type", "field \"pods\" must be %s",
					   type_name(POD_ARRAY));
		if (!pod_name_ok(v->valuestring))
			return proto_error("bad_value",
					   "pods: \"%.256s\" is not NAMESPACE/SERVICEACCOUNT "
					   "(Kubernetes names: lowercase letters, digits, - and .)",
					   v->valuestring);
		if (!paths_contains(out, v->valuestring) && paths_add(out, v->valuestring) != 0)
			return proto_error("internal", "out of memory");
	}
	return NULL;
}

/* The bot name at KEY of req (a string, by its field table) into *OUT; absent: left alone */
static cJSON *spec_name(const cJSON *req, const char *key, char **out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, key);

	if (v == NULL)
		return NULL;
	if (!bot_name_ok(v->valuestring))
		return proto_error("bad_name",
				   "bad bot name \"%.80s\": use 1 to %d letters, "
				   "digits, - and _ (not starting with -)",
				   v->valuestring, BOT_NAME_MAX);
	*out = strdup(v->valuestring); /* NULL: out of memory, said at the end */
	return NULL;
}

static cJSON *parse_spec(const cJSON *req, struct bot_spec *s)
{
	const cJSON *v;
	cJSON *err;

	if ((err = spec_name(req, "name", &s->name)) != NULL ||
	    (err = spec_name(req, "as", &s->as)) != NULL)
		return err;
	v = cJSON_GetObjectItemCaseSensitive(req, "sandbox");
	if (v != NULL) {
		if (sandbox_parse(v->valuestring, &s->sandbox) != 0)
			return proto_error("bad_value",
					   "sandbox must be read-only, workspace-write "
					   "or danger-full-access, not \"%.64s\"",
					   v->valuestring);
		s->has_sandbox = true;
	}
	v = cJSON_GetObjectItemCaseSensitive(req, "folder");
	if (v != NULL && (err = parse_path("folder", v->valuestring, &s->folder)) != NULL)
		return err;
	v = cJSON_GetObjectItemCaseSensitive(req, "writable");
	if (v != NULL) {
		s->has_writable = true;
		if ((err = parse_paths(v, "writable", &s->writable)) != NULL)
			return err;
	}
	v = cJSON_GetObjectItemCaseSensitive(req, "readable");
	if (v != NULL) {
		s->has_readable = true;
		if ((err = parse_paths(v, "readable", &s->readable)) != NULL)
			return err;
	}
	v = cJSON_GetObjectItemCaseSensitive(req, "pods");
	if (v != NULL) {
		s->has_pods = true;
		if ((err = parse_pods(v, &s->pods)) != NULL)
			return err;
	}
	v = cJSON_GetObjectItemCaseSensitive(req, "network");
	if (v != NULL) {
		s->has_network = true;
		s->network = cJSON_IsTrue(v);
	}
	v = cJSON_GetObjectItemCaseSensitive(req, "allow_new_repos");
	if (v != NULL) {
		s->has_allow_new_repos = true;
		s->allow_new_repos = cJSON_IsTrue(v);
	}
	v = cJSON_GetObjectItemCaseSensitive(req, "ttl");
	if (v != NULL) {
		if (v->valuedouble < 0 || v->valuedouble > 365.0 * 86400 ||
		    v->valuedouble != (double)(long)v->valuedouble)
			return proto_error("bad_value",
					   "ttl must be whole seconds from 0 (none) to "
					   "one year");
		s->has_ttl = true;
		s->ttl = (long)v->valuedouble;
	}
	/* each sandbox's limits: 0 takes the config's default back */
	v = cJSON_GetObjectItemCaseSensitive(req, "memory_max");
	if (v != NULL) {
		if ((v->valuedouble != 0 &&
		     (v->valuedouble < MEMORY_MIN || v->valuedouble > MEMORY_MAX)) ||
		    v->valuedouble != (double)(uint64_t)v->valuedouble)
			return proto_error("bad_value",
					   "memory_max must be whole bytes from 16 MiB to 2^50, or 0 "
					   "(the default)");
		s->has_memory_max = true;
		s->memory_max = (uint64_t)v->valuedouble;
	}
	v = cJSON_GetObjectItemCaseSensitive(req, "pids_max");
	if (v != NULL) {
		if ((v->valuedouble != 0 && (v->valuedouble < PIDS_MIN || v->valuedouble > PIDS_MAX)) ||
		    v->valuedouble != (double)(uint64_t)v->valuedouble)
			return proto_error("bad_value",
					   "pids_max must be a whole number from %d to %d, or 0 (the "
					   "default)",
					   PIDS_MIN, PIDS_MAX);
		s->has_pids_max = true;
		s->pids_max = (uint64_t)v->valuedouble;
	}
	v = cJSON_GetObjectItemCaseSensitive(req, "user");
	if (v != NULL) {
		if (user_parse(v->valuestring, &s->user) != 0)
			return proto_error("bad_value", "no user named \"%.64s\" (give a name or a uid)",
					   v->valuestring);
		s->has_user = true;
	}
	if ((s->name == NULL && cJSON_GetObjectItemCaseSensitive(req, "name") != NULL) ||
	    (s->as == NULL && cJSON_GetObjectItemCaseSensitive(req, "as") != NULL))
		return proto_error("internal", "out of memory");
	return NULL;
}

static void reply_version(struct request *r, const cJSON *req)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, "protocol");
	cJSON *body;

	if (v != NULL && v->valuedouble != PROTOCOL_VERSION) {
		request_fail(r, proto_error("unsupported_protocol",
					    "this agentfsd speaks protocol %d, not %g",
					    PROTOCOL_VERSION, v->valuedouble));
		return;
	}
	body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "version", PACKAGE_VERSION);
	cJSON_AddNumberToObject(body, "protocol", PROTOCOL_VERSION);
	request_reply(r, body);
}

/*
 * cJSON stops strings at a NUL, so "a\u0000/etc" would read as "a". Find
 * the top-level field whose string holds an escaped NUL, if any: requests
 * are flat objects whose values are scalars or arrays of strings.
 */
/* The last character before i that is not blank, or 0. */
static char prev_char(const char *line, size_t i)
{
	while (i > 0) {
		char c = line[--i];

		if (c != ' ' && c != '\t' && c != '\r' && c != '\n')
			return c;
	}
	return 0;
}

static const char *nul_field(const char *line, size_t len, char *key, size_t keylen)
{
	size_t i, k = 0;
	int depth = 0;
	bool in_str = false, is_key = false;
	char cur[64] = "";

	for (i = 0; i < len; i++) {
		char c = line[i];

		if (in_str) {
			if (c == '\\' && i + 1 < len) {
				if (line[i + 1] == 'u' && i + 5 < len &&
				    strncmp(line + i + 2, "0000", 4) == 0) {
					snprintf(key, keylen, "%s", is_key ? "" : cur);
					return key;
				}
				i++;
				continue;
			}
			if (c == '"') {
				in_str = false;
				if (is_key)
					cur[k < sizeof cur ? k : sizeof cur - 1] = '\0';
			} else if (is_key && k < sizeof cur - 1) {
				cur[k++] = c;
			}
			continue;
		}
		if (c == '"') {
			in_str = true;
			/* in the object, a string after '{' or ',' is a key */
			is_key = depth == 1 &&
				 (prev_char(line, i) == '{' || prev_char(line, i) == ',');
			if (is_key)
				k = 0;
		} else if (c == '{' || c == '[') {
			depth++;
		} else if (c == '}' || c == ']') {
			depth--;
		}
	}
	return NULL;
}

/* The sequence number in field k (absent: 0), or -1 after failing the request. */
static double seq_field(struct request *r, const cJSON *req, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, k);

	if (v == NULL)
		return 0;
	/* NaN fails the first test, so the cast sees only numbers that fit */
	if (!(v->valuedouble >= 0 && v->valuedouble <= 9007199254740992.0) ||
	    v->valuedouble != (double)(uint64_t)v->valuedouble) {
		request_fail(r, proto_error("bad_value", "%s must be a whole number from 0", k));
		return -1;
	}
	return v->valuedouble;
}

/* The name field, which check_fields made sure a name op has. */
static const char *name_of(const cJSON *req)
{
	return cJSON_GetObjectItemCaseSensitive(req, "name")->valuestring;
}

static bool proto_version(struct request *r, const cJSON *req, struct bot_spec *s)
{
	reply_version(r, req);
	return false;
}

static bool proto_create(struct request *r, const cJSON *req, struct bot_spec *s)
{
	return bots_create(r, s);
}

static bool proto_configure(struct request *r, const cJSON *req, struct bot_spec *s)
{
	return bots_configure(r, s);
}

static bool proto_fork(struct request *r, const cJSON *req, struct bot_spec *s)
{
	return bots_fork(r, s);
}

static bool proto_delete(struct request *r, const cJSON *req, struct bot_spec *s)
{
	return bots_delete(r, name_of(req),
			   cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "force")));
}

static bool proto_exec_plan(struct request *r, const cJSON *req, struct bot_spec *s)
{
	const cJSON *pod = cJSON_GetObjectItemCaseSensitive(req, "pod");

	if (pod != NULL && !pod_name_ok(pod->valuestring)) {
		request_fail(r, proto_error("bad_value",
					    "pod: \"%.256s\" is not NAMESPACE/SERVICEACCOUNT",
					    pod->valuestring));
		return false;
	}
	bots_exec_plan(r, req, pod != NULL ? pod->valuestring : NULL);
	return false;
}

static bool proto_exec_register(struct request *r, const cJSON *req, struct bot_spec *s)
{
	bots_exec_register(r, name_of(req), req);
	return false;
}

static bool proto_log(struct request *r, const cJSON *req, struct bot_spec *s)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(req, "name");
	double since = seq_field(r, req, "since");

	if (since < 0)
		return false;
	return bots_log(r, name != NULL ? name->valuestring : NULL, (uint64_t)since,
			cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "follow")));
}

static bool proto_changes(struct request *r, const cJSON *req, struct bot_spec *s)
{
	double since = seq_field(r, req, "since");
	const cJSON *after = cJSON_GetObjectItemCaseSensitive(req, "after");

	if (after != NULL && (after->valuestring[0] != '/' || strlen(after->valuestring) > 4095)) {
		request_fail(r, proto_error("bad_value",
					    "after must be the path a page of changes ended at"));
		return false;
	}
	if (since >= 0)
		bots_changes(r, name_of(req), (uint64_t)since,
			     after != NULL ? after->valuestring : NULL, false);
	return false;
}

static bool proto_mark(struct request *r, const cJSON *req, struct bot_spec *s)
{
	bots_changes(r, name_of(req), 0, NULL, true);
	return false;
}

/*
 * The command table: every op the daemon answers, its fields (checked by
 * check_fields before the handler runs) and its handler. Who may do what
 * is decided by the handler's bots_* function (bots-int.h, authority.c).
 */
static const struct op ops[] = {
	{.name = "version", .fields = f_version, .run = proto_version},
	{.name = "create", .fields = f_create, .run = proto_create},
	{.name = "configure", .fields = f_configure, .run = proto_configure},
	{.name = "fork", .fields = f_fork, .run = proto_fork},
	{.name = "delete", .fields = f_delete, .run = proto_delete},
	{.name = "list", .fields = f_none, .plain = bots_list},
	{.name = "show", .fields = f_name, .named = bots_show},
	{.name = "status", .fields = f_none, .plain = bots_status},
	{.name = "shutdown", .fields = f_none, .plain = bots_shutdown},
	{.name = "exec_plan", .fields = f_exec_plan, .run = proto_exec_plan},
	{.name = "log", .fields = f_log, .run = proto_log},
	{.name = "changes", .fields = f_changes, .run = proto_changes},
	{.name = "mark", .fields = f_name, .run = proto_mark},
	{.name = "exec_register", .fields = f_exec_register, .run = proto_exec_register},
	{.name = "ps", .fields = f_none, .plain = bots_ps},
};

/*
 * Answer one request line. Returns true when the answer comes later (a
 * job holds the peer), so the transport waits before the next line.
 */
bool proto_dispatch(struct server *srv, struct peer *p, const char *line, size_t len)
{
	cleanup_cjson cJSON *req = NULL;
	struct request r = {.peer = p};
	struct bot_spec spec = {0};
	const cJSON *opv;
	const struct op *op = NULL;
	const char *end = NULL, *nulf;
	char key[64];
	bool deferred = false;
	cJSON *err;
	size_t i;

	if (memchr(line, '\0', len) != NULL) {
		server_reply(p, proto_error("bad_json", "the request line holds a NUL byte"));
		return false;
	}
	req = cJSON_ParseWithLengthOpts(line, len, &end, false);
	if (req != NULL)
		while (end < line + len && (*end == ' ' || *end == '\t' || *end == '\r'))
			end++;
	if (req == NULL || end != line + len) {
		server_reply(p, proto_error("bad_json", req == NULL
								? "the request is not valid JSON"
								: "text after the JSON object: one "
								  "object per line"));
		return false;
	}
	if (!cJSON_IsObject(req)) {
		server_reply(p, proto_error("bad_request", "a request must be a JSON object"));
		return false;
	}
	r.id = cJSON_GetObjectItemCaseSensitive(req, "id");
	if (r.id != NULL && !cJSON_IsString(r.id) &&
	    (!cJSON_IsNumber(r.id) || !isfinite(r.id->valuedouble))) {
		r.id = NULL;
		server_reply(p,
			     proto_error("bad_type", "field \"id\" must be a string or a number"));
		return false;
	}
	if (r.id != NULL && cJSON_IsString(r.id) && strlen(r.id->valuestring) > 256) {
		r.id = NULL;
		server_reply(p, proto_error("bad_value", "field \"id\" is longer than 256 bytes"));
		return false;
	}
	opv = cJSON_GetObjectItemCaseSensitive(req, "op");
	if (opv == NULL || !cJSON_IsString(opv)) {
		request_fail(&r, proto_error(opv == NULL ? "bad_request" : "bad_type",
					     "a request needs \"op\", a string"));
		return false;
	}
	for (i = 0; i < sizeof ops / sizeof ops[0]; i++)
		if (strcmp(ops[i].name, opv->valuestring) == 0)
			op = &ops[i];
	if (op == NULL) {
		request_fail(&r,
			     proto_error("unknown_op", "unknown op \"%.64s\"", opv->valuestring));
		return false;
	}
	if ((err = check_fields(req, op)) == NULL &&
	    (nulf = nul_field(line, len, key, sizeof key)) != NULL) {
		const char *code = strcmp(nulf, "name") == 0 || strcmp(nulf, "as") == 0 ? "bad_name"
				   : strcmp(nulf, "folder") == 0 || strcmp(nulf, "writable") == 0 ||
						   strcmp(nulf, "readable") == 0
					   ? "bad_path"
					   : "bad_value";

		err = proto_error(code, "field \"%.64s\" holds a NUL character", nulf);
	}
	if (err != NULL || (err = parse_spec(req, &spec)) != NULL) {
		request_fail(&r, err);
		bot_spec_free(&spec);
		return false;
	}
	r.progress = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "progress"));
	/* The request's id outlives this line when the answer is deferred. */
	r.id = r.id != NULL ? cJSON_Duplicate(r.id, true) : NULL;
	if (op->run != NULL)
		deferred = op->run(&r, req, &spec);
	else if (op->named != NULL)
		op->named(&r, name_of(req));
	else
		op->plain(&r);
	if (!deferred)
		cJSON_Delete(r.id);
	bot_spec_free(&spec);
	return deferred;
}

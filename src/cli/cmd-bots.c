/* SPDX-License-Identifier: MIT */
/*
 * The client's bot commands: create, fork, configure, rm, ls, show,
 * status, shutdown and version, each one request (rm and show one a name)
 * and its reply printed for a person, every string in it escaped
 * (cli_escape), or as the daemon's JSON with --json.
 */
#include "src/common/agentfs.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>

static char *abs_path(const char *p)
{
	char cwd[PATH_MAX], *joined, *out;

	if (p[0] == '/') {
		if (path_normalise(p, &out) != 0)
			die("bad path: %s", p);
		return out;
	}
	if (getcwd(cwd, sizeof cwd) == NULL)
		die("getcwd: %s", strerror(errno));
	if (asprintf(&joined, "%s/%s", cwd, p) < 0 || path_normalise(joined, &out) != 0)
		die("bad path: %s", p);
	free(joined);
	return out;
}

static void add_path(cJSON *req, const char *key, const char *p)
{
	cJSON *arr = cJSON_GetObjectItemCaseSensitive(req, key);
	char *a = abs_path(p);

	if (arr == NULL)
		arr = cJSON_AddArrayToObject(req, key);
	if (*p != '\0')
		cJSON_AddItemToArray(arr, cJSON_CreateString(a));
	free(a);
}

static const char bot_usage[] =
	"\n"
	"  --sandbox S         read-only, workspace-write or danger-full-access\n"
	"  --writable DIR      an extra writable root; repeatable (replaces the list)\n"
	"  --no-writable       no extra writable roots\n"
	"  --readable DIR      an extra read-only root; repeatable (replaces the list)\n"
	"  --no-readable       no extra read-only roots\n"
	"  --network, --no-network\n"
	"  --allow-new-repos, --no-allow-new-repos\n"
	"  --ttl SECONDS       delete the bot after this long (0: never)\n"
	"  --memory SIZE       each sandbox's memory (bytes, or with K, M, G, T;\n"
	"                      default: agentfsd's default_memory_max)\n"
	"  --pids N            each sandbox's processes (default: agentfsd's\n"
	"                      default_pids_max)\n"
	"  --user USER         create: the user (name or uid) its commands run as\n"
	"                      (default: the owner of FOLDER; a bot's bots: its own)\n"
	"  --pod NS/SA         a Kubernetes pod (namespace/service account) that may\n"
	"                      have its roots through agentfs-csi; repeatable\n"
	"                      (replaces the list; operator only)\n"
	"  --no-pods           no pods\n"
	"  --id ID             request id; a resent create or fork with it is answered\n"
	"                      from what the first made\n";

/*
 * --memory SIZE (bytes, or with a K, M, G or T of 1024s) or --pids N;
 * "default" (or 0) takes agentfsd's default back. agentfsd checks the range.
 */
static unsigned long long limit_arg(const char *cmd, bool memory, const char *arg)
{
	static const char units[] = "KMGT";
	unsigned long long v;
	const char *u;
	char *end;

	if (strcmp(arg, "default") == 0)
		return 0;
	errno = 0;
	v = strtoull(arg, &end, 10);
	if (memory && *end != '\0' && end[1] == '\0' && (u = strchr(units, end[0] & ~0x20)) != NULL) {
		v <<= 10 * (u - units + 1);
		end++;
	}
	if (errno != 0 || end == arg || *end != '\0' || arg[0] == '-' || v > (1ULL << 50))
		die_usage(cmd, "--%s takes %s, or default, not %s", memory ? "memory" : "pids",
			  memory ? "a size (bytes, or with K, M, G or T)" : "a whole number", arg);
	return v;
}

/* Parse the options shared by create, fork and configure into req. */
static void bot_options(const char *cmd, int argc, char **argv, cJSON *req, int npos, char **pos)
{
	static const struct option longopts[] = {
		{"sandbox", required_argument, NULL, 's'},
		{"writable", required_argument, NULL, 'w'},
		{"no-writable", no_argument, NULL, 'W'},
		{"readable", required_argument, NULL, 'r'},
		{"no-readable", no_argument, NULL, 'R'},
		{"network", no_argument, NULL, 'n'},
		{"no-network", no_argument, NULL, 'N'},
		{"allow-new-repos", no_argument, NULL, 'a'},
		{"no-allow-new-repos", no_argument, NULL, 'A'},
		{"ttl", required_argument, NULL, 't'},
		{"memory", required_argument, NULL, 'm'},
		{"pids", required_argument, NULL, 'x'},
		{"id", required_argument, NULL, 'i'},
		{"user", required_argument, NULL, 'u'},
		{"pod", required_argument, NULL, 'p'},
		{"no-pods", no_argument, NULL, 'P'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	char *end;
	long ttl;
	int c, k;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			cJSON_AddStringToObject(req, "sandbox", optarg);
			break;
		case 'w':
			add_path(req, "writable", optarg);
			break;
		case 'W':
			cJSON_DeleteItemFromObject(req, "writable");
			cJSON_AddArrayToObject(req, "writable");
			break;
		case 'r':
			add_path(req, "readable", optarg);
			break;
		case 'R':
			cJSON_DeleteItemFromObject(req, "readable");
			cJSON_AddArrayToObject(req, "readable");
			break;
		case 'n':
		case 'N':
			cJSON_DeleteItemFromObject(req, "network");
			cJSON_AddBoolToObject(req, "network", c == 'n');
			break;
		case 'a':
		case 'A':
			cJSON_DeleteItemFromObject(req, "allow_new_repos");
			cJSON_AddBoolToObject(req, "allow_new_repos", c == 'a');
			break;
		case 't':
			errno = 0;
			ttl = strtol(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || ttl < 0)
				die_usage(cmd, "--ttl takes whole seconds, not %s", optarg);
			cJSON_AddNumberToObject(req, "ttl", (double)ttl);
			break;
		case 'm':
		case 'x':
			cJSON_DeleteItemFromObject(req, c == 'm' ? "memory_max" : "pids_max");
			cJSON_AddNumberToObject(req, c == 'm' ? "memory_max" : "pids_max",
						(double)limit_arg(cmd, c == 'm', optarg));
			break;
		case 'u':
			if (strcmp(cmd, "create") != 0)
				die_usage(cmd, "--user is for create only");
			cJSON_DeleteItemFromObject(req, "user");
			cJSON_AddStringToObject(req, "user", optarg);
			break;
		case 'p':
			if (cJSON_GetObjectItemCaseSensitive(req, "pods") == NULL)
				cJSON_AddArrayToObject(req, "pods");
			cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(req, "pods"),
					     cJSON_CreateString(optarg));
			break;
		case 'P':
			cJSON_DeleteItemFromObject(req, "pods");
			cJSON_AddArrayToObject(req, "pods");
			break;
		case 'i':
			cJSON_DeleteItemFromObject(req, "id");
			cJSON_AddStringToObject(req, "id", optarg);
			break;
		case 'h':
			if (strcmp(cmd, "create") == 0)
				fputs("usage: agentfs create NAME FOLDER [OPTIONS]\n\nMake the bot NAME "
				      "over FOLDER, its working root.\n",
				      stdout);
			else if (strcmp(cmd, "fork") == 0)
				fputs("usage: agentfs fork NAME NEWNAME [OPTIONS]\n\nMake the bot NEWNAME "
				      "like NAME, with the OPTIONS given instead.\n",
				      stdout);
			else
				fputs("usage: agentfs configure NAME [OPTIONS]\n\nChange the bot NAME: "
				      "the OPTIONS given replace its own; its mounts follow.\n",
				      stdout);
			fputs(bot_usage, stdout);
			exit(0);
		case ':':
			die_usage(cmd, "option %s needs an argument", argv[optind - 1]);
		default:
			usage_error(cmd, argv[optind - 1], optopt);
		}
	}
	if (argc - optind != npos)
		die_usage(cmd, "%s takes %d argument%s", cmd, npos, npos == 1 ? "" : "s");
	for (k = 0; k < npos; k++)
		pos[k] = argv[optind + k];
}

static void print_paths(const char *label, const cJSON *arr)
{
	const cJSON *v;

	printf("%-16s", label);
	if (cJSON_GetArraySize(arr) == 0)
		printf("-");
	cJSON_ArrayForEach(v, arr)
		printf("%s%s", v == arr->child ? "" : " ", cli_escape(cJSON_GetStringValue(v)));
	printf("\n");
}

/* A string field of o for a person (cli_escape: a bot chose many of them), or "-" */
static const char *str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? cli_escape(v->valuestring) : "-";
}

static void print_time(const char *label, const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	char buf[64];
	time_t t;

	if (!cJSON_IsNumber(v) || v->valuedouble == 0) {
		printf("%-16s-\n", label);
		return;
	}
	t = (time_t)v->valuedouble;
	strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", localtime(&t));
	printf("%-16s%s\n", label, buf);
}

/* show's running sandboxes: the pids of their agentfs exec, or "-". */
static void print_sandboxes(const cJSON *arr)
{
	const cJSON *v;

	if (arr == NULL)
		return;
	printf("%-16s", "sandboxes");
	if (cJSON_GetArraySize(arr) == 0)
		printf("-");
	cJSON_ArrayForEach(v, arr)
		printf("%sexec pid %.0f", v == arr->child ? "" : ", ",
		       cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(v, "pid")));
	printf("\n");
}

/* A size in bytes, as a person reads it. */
static void size_text(double bytes, char *out, size_t len)
{
	static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
	int u = 0;

	while (bytes >= 1024 && u < 5) {
		bytes /= 1024;
		u++;
	}
	snprintf(out, len, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
}

/* show's limits: what each sandbox of the bot gets. */
static void print_limits(const cJSON *l)
{
	char mem[32];

	if (l == NULL)
		return;
	size_text(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(l, "memory_max")), mem,
		  sizeof mem);
	printf("%-16s%s memory, %.0f processes, each sandbox%s\n", "limits", mem,
	       cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(l, "pids_max")),
	       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(l, "applied"))
		       ? ""
		       : " (not applied: agentfsd makes no cgroups)");
}

static void print_bot(const cJSON *b)
{
	const cJSON *m, *mounts = cJSON_GetObjectItemCaseSensitive(b, "mounts");

	printf("%-16s%s\n", "name", str(b, "name"));
	printf("%-16s%s\n", "creator",
	       cJSON_IsString(cJSON_GetObjectItemCaseSensitive(b, "creator")) ? str(b, "creator")
									      : "(operator)");
	printf("%-16s%s\n", "sandbox", str(b, "sandbox"));
	printf("%-16s%s\n", "folder", str(b, "folder"));
	printf("%-16s%s\n", "user", str(b, "user"));
	print_paths("writable", cJSON_GetObjectItemCaseSensitive(b, "writable"));
	print_paths("readable", cJSON_GetObjectItemCaseSensitive(b, "readable"));
	printf("%-16s%s\n", "network",
	       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(b, "network")) ? "yes" : "no");
	printf("%-16s%s\n", "allow_new_repos",
	       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(b, "allow_new_repos")) ? "yes" : "no");
	print_paths("pods", cJSON_GetObjectItemCaseSensitive(b, "pods"));
	print_limits(cJSON_GetObjectItemCaseSensitive(b, "limits"));
	print_time("created", b, "created");
	print_time("expires", b, "expires");
	printf("%-16s%s\n", "socket", str(b, "socket"));
	cJSON_ArrayForEach(m, mounts) {
		printf("%-16s%s %s -> %s (%s)%s%s\n", m == mounts->child ? "mounts" : "",
		       str(m, "access"), str(m, "path"), str(m, "mountpoint"), str(m, "state"),
		       cJSON_GetObjectItemCaseSensitive(m, "error") != NULL ? ": " : "",
		       cJSON_GetObjectItemCaseSensitive(m, "error") != NULL ? str(m, "error") : "");
	}
	if (mounts != NULL)
		print_paths("repos made", cJSON_GetObjectItemCaseSensitive(b, "repos_made"));
	print_sandboxes(cJSON_GetObjectItemCaseSensitive(b, "sandboxes"));
}

static void print_list(const cJSON *rep, bool quiet)
{
	const cJSON *v;

	if (!quiet)
		printf("%-20s %-12s %-19s %s\n", "NAME", "CREATOR", "SANDBOX", "FOLDER");
	cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(rep, "bots")) {
		if (quiet)
			printf("%s\n", str(v, "name"));
		else
			printf("%-20s %-12s %-19s %s\n", str(v, "name"), str(v, "creator"),
			       str(v, "sandbox"), str(v, "folder"));
	}
}

/*
 * status: one "key value" line for each item of the reply, the values in
 * one column past the longest key; the start time as a local date.
 */
static void print_status(const cJSON *rep)
{
	const cJSON *v;
	char when[64];
	int w = 0;
	time_t t;

	for (v = rep->child; v != NULL; v = v->next)
		if (v->string != NULL && (int)strlen(v->string) > w)
			w = (int)strlen(v->string);
	for (v = rep->child; v != NULL; v = v->next) {
		if (v->string == NULL || strcmp(v->string, "ok") == 0 ||
		    strcmp(v->string, "id") == 0)
			continue;
		if (strcmp(v->string, "started") == 0 && cJSON_IsNumber(v)) {
			t = (time_t)v->valuedouble;
			strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime(&t));
			printf("%-*s %s\n", w, "started", when);
		} else if (cJSON_IsString(v)) {
			printf("%-*s %s\n", w, cli_escape(v->string), cli_escape(v->valuestring));
		} else if (cJSON_IsNumber(v)) {
			printf("%-*s %.0f\n", w, cli_escape(v->string), v->valuedouble);
		}
	}
}

static void print_reply(const char *op, const cJSON *rep)
{
	const cJSON *v;

	if (strcmp(op, "delete") == 0) {
		cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(rep, "deleted"))
			printf("deleted %s\n", cli_escape(cJSON_GetStringValue(v)));
	} else if (strcmp(op, "version") == 0) {
		printf("agentfs %s, agentfsd %s (protocol %d)\n", PACKAGE_VERSION,
		       str(rep, "version"),
		       (int)cJSON_GetNumberValue(
			       cJSON_GetObjectItemCaseSensitive(rep, "protocol")));
	} else if (strcmp(op, "status") == 0) {
		print_status(rep);
	} else if (strcmp(op, "shutdown") == 0) {
		printf("agentfsd is shutting down\n");
	} else if ((v = cJSON_GetObjectItemCaseSensitive(rep, "bot")) != NULL) {
		print_bot(v);
	}
}

/*
 * Send req (with op) and read the reply line; a request with an id is sent
 * once more after a lost connection (the daemon answers it from what the
 * first made). Dies, naming what became of the daemon, without a reply.
 */
static char *ask(const char *socket_path, cJSON *req, cJSON **rep)
{
	cleanup_free char *text = cJSON_PrintUnformatted(req), *line = NULL;
	char *reply;

	if (text == NULL || asprintf(&line, "%s\n", text) < 0)
		die("out of memory");
	reply = client_exchange(socket_path, line);
	if (reply == NULL && cJSON_GetObjectItemCaseSensitive(req, "id") != NULL)
		reply = client_exchange(socket_path, line);
	if (reply == NULL)
		client_lost(socket_path);
	*rep = cJSON_Parse(reply);
	if (*rep == NULL)
		die("agentfsd sent a reply that is not JSON");
	return reply;
}

static const char rm_usage[] =
	"usage: agentfs rm [--force] NAME...\n"
	"\n"
	"Delete each bot NAME and the bots it made, in turn. While any of them has a\n"
	"sandbox running (agentfs exec), it is not deleted, unless:\n"
	"\n"
	"  -f, --force   end those sandboxes first: SIGTERM, then SIGKILL after 3 s\n"
	"\n"
	"A bot that cannot be deleted does not stop the others; agentfs then exits 125.\n";

static const char show_usage[] =
	"usage: agentfs show NAME...\n"
	"\n"
	"Show each bot NAME: its settings, roots, mounts, socket and running sandboxes.\n"
	"With --json, one bot prints the daemon's reply; several, a JSON array of\n"
	"the replies. A bot that cannot be shown does not stop the others; agentfs\n"
	"then exits 125.\n";

static const char ls_usage[] = "usage: agentfs ls [-q]\n"
			       "\n"
			       "List the bots you may see: name, maker, sandbox and folder.\n"
			       "\n"
			       "  -q, --quiet   names only, one a line\n";

/* Was name deleted already, as a bot an earlier rm of the same command made? */
static bool deleted_before(const cJSON *done, const char *name)
{
	const cJSON *v;

	cJSON_ArrayForEach(v, done)
		if (cJSON_IsString(v) && strcmp(v->valuestring, name) == 0)
			return true;
	return false;
}

/*
 * rm NAME... and show NAME...: one request a name, in turn; one that fails
 * is reported and the rest go on. --json prints one reply as it came, or a
 * JSON array of several.
 */
static int cmd_names(const char *socket_path, bool json, int argc, char **argv)
{
	cleanup_cjson cJSON *done = cJSON_CreateArray();
	const char *cmd = argv[0];
	bool rm = strcmp(cmd, "rm") == 0, force = false;
	int i, rc = 0, n = 0, shown = 0;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(rm ? rm_usage : show_usage, stdout);
			return 0;
		} else if (rm && (strcmp(argv[i], "--force") == 0 || strcmp(argv[i], "-f") == 0)) {
			force = true;
		} else if (argv[i][0] == '-') {
			usage_error(cmd, argv[i], 0);
		} else {
			argv[++n] = argv[i];
		}
	}
	if (n == 0)
		die_usage(cmd, "%s takes one bot name or more", cmd);
	if (done == NULL)
		die("out of memory");
	if (json && n > 1)
		printf("[");
	for (i = 1; i <= n; i++) {
		cleanup_cjson cJSON *req = cJSON_CreateObject(), *rep = NULL;
		cleanup_free char *reply = NULL;
		const cJSON *v;

		if (rm && deleted_before(done, argv[i]))
			continue; /* a bot an earlier name made: deleted with it */
		if (req == NULL || !cJSON_AddStringToObject(req, "op", rm ? "delete" : "show") ||
		    !cJSON_AddStringToObject(req, "name", argv[i]) ||
		    (force && !cJSON_AddBoolToObject(req, "force", true)))
			die("out of memory");
		reply = ask(socket_path, req, &rep);
		if (json)
			printf("%s%s", shown++ > 0 ? "," : "", cli_json(reply));
		if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "ok"))) {
			rc = json ? EXIT_AGENTFS : client_error(rep, NULL);
			continue;
		}
		cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(rep, "deleted"))
			cJSON_AddItemToArray(done, cJSON_Duplicate(v, false));
		if (!json && !rm && i > 1)
			printf("\n");
		if (!json)
			print_reply(rm ? "delete" : "show", rep);
	}
	if (json)
		printf("%s\n", n > 1 ? "]" : "");
	return rc;
}

static int cmd_ls(const char *socket_path, bool json, int argc, char **argv)
{
	cleanup_cjson cJSON *req = cJSON_CreateObject(), *rep = NULL;
	cleanup_free char *reply = NULL;
	bool quiet = false;
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(ls_usage, stdout);
			return 0;
		} else if (strcmp(argv[i], "-q") == 0 || strcmp(argv[i], "--quiet") == 0) {
			quiet = true;
		} else if (argv[i][0] == '-') {
			usage_error(argv[0], argv[i], 0);
		} else {
			die_usage(argv[0], "%s takes no bot name (agentfs show NAME shows one)",
				  argv[0]);
		}
	}
	if (req == NULL || !cJSON_AddStringToObject(req, "op", "list"))
		die("out of memory");
	reply = ask(socket_path, req, &rep);
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "ok")))
		return client_error(rep, json && !quiet ? reply : NULL);
	if (json && !quiet)
		printf("%s\n", cli_json(reply));
	else
		print_list(rep, quiet);
	return 0;
}

static const char client_usage[] =
	"usage: agentfs [--socket PATH] [--json] COMMAND ... [--socket PATH] [--json]\n"
	"  create NAME FOLDER [OPTIONS]   make a bot (see agentfs create --help)\n"
	"  fork NAME NEWNAME [OPTIONS]    make a bot like NAME\n"
	"  configure NAME [OPTIONS]       change a bot; its mounts follow at once\n"
	"  rm [--force] NAME...           delete bots and the bots they made\n"
	"  ls, list [-q]                  list bots\n"
	"  show NAME...                   show bots, their mounts and sockets\n"
	"  status                         show the daemon's status\n"
	"  log [BOT] [--follow]           events: writes refused and why, mounts, bots\n"
	"  changes BOT [--since MARK]     what the bot created, modified, deleted, renamed\n"
	"  shutdown                       stop the daemon\n"
	"  version                        show client and daemon versions\n";

/* create, fork, configure: the request from the bot options; false for another command */
static bool bot_request(const char *cmd, int argc, char **argv, cJSON *req)
{
	char *pos[2] = {NULL, NULL}, idbuf[40], *a;
	unsigned char rnd[8];
	int i;

	if (strcmp(cmd, "configure") == 0) {
		bot_options(cmd, argc, argv, req, 1, pos);
		cJSON_AddStringToObject(req, "name", pos[0]);
		return true;
	}
	if (strcmp(cmd, "create") != 0 && strcmp(cmd, "fork") != 0)
		return false;
	bot_options(cmd, argc, argv, req, 2, pos);
	cJSON_AddStringToObject(req, "name", pos[0]);
	if (strcmp(cmd, "create") == 0) {
		a = abs_path(pos[1]);
		cJSON_AddStringToObject(req, "folder", a);
		free(a);
	} else {
		cJSON_AddStringToObject(req, "as", pos[1]);
	}
	/* An id makes a resend after a lost reply safe. */
	if (cJSON_GetObjectItemCaseSensitive(req, "id") == NULL) {
		if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
			memset(rnd, 0, sizeof rnd);
		for (i = 0; i < 8; i++)
			sprintf(idbuf + 2 * i, "%02x", rnd[i]);
		cJSON_AddStringToObject(req, "id", idbuf);
	}
	return true;
}

/*
 * A root refused for a symbolic link on its way: the daemon never follows
 * one, and says so; the client, as the caller, can say where it leads.
 */
static void hint_real_path(const cJSON *rep)
{
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(rep, "error");
	const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(err, "message"));
	const char *code = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(err, "code"));
	cleanup_free char *path = NULL, *real = NULL;
	const char *end;

	if (code == NULL || msg == NULL || strcmp(code, "bad_path") != 0 ||
	    (end = strstr(msg, ": a component is a symbolic link")) == NULL ||
	    (path = strndup(msg, (size_t)(end - msg))) == NULL)
		return;
	real = realpath(path, NULL);
	if (real != NULL && strcmp(real, path) != 0)
		fprintf(stderr, "agentfs: %s leads to %s: give that\n", cli_escape(path),
			cli_escape(real));
}

int cmd_client(const char *socket_path, bool json, int argc, char **argv)
{
	cleanup_cjson cJSON *req = cJSON_CreateObject(), *rep = NULL;
	cleanup_free char *reply = NULL;
	const char *cmd = argv[0], *op = cmd;
	int rc = 0;

	if (req == NULL)
		die("out of memory");
	if (strcmp(cmd, "log") == 0 || strcmp(cmd, "changes") == 0)
		return cmd_events(socket_path, json, argc, argv);
	if (strcmp(cmd, "rm") == 0 || strcmp(cmd, "show") == 0)
		return cmd_names(socket_path, json, argc, argv);
	if (strcmp(cmd, "ls") == 0 || strcmp(cmd, "list") == 0)
		return cmd_ls(socket_path, json, argc, argv);
	if (bot_request(cmd, argc, argv, req)) {
		/* Mounting scans the roots: on a terminal, show how far it got. */
		if (isatty(STDERR_FILENO))
			cJSON_AddBoolToObject(req, "progress", true);
	} else if (strcmp(cmd, "status") == 0 || strcmp(cmd, "shutdown") == 0 ||
		   strcmp(cmd, "version") == 0) {
		if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
			printf("usage: agentfs %s\n\n%s\n", cmd,
			       strcmp(cmd, "status") == 0
				       ? "Show the daemon's version, pid, uptime, bots, mounts and clients\n"
					 "(on a bot's socket: the bot it acts as)."
			       : strcmp(cmd, "shutdown") == 0
				       ? "Stop the daemon: every bot's mounts are unmounted; the bots stay\n"
					 "in its state and come back when it starts."
				       : "Show the client's and the daemon's versions and protocol.");
			return 0;
		}
		if (argc != 1)
			die_usage(cmd, "%s takes no arguments", cmd);
		if (strcmp(cmd, "version") == 0)
			cJSON_AddNumberToObject(req, "protocol", PROTOCOL_VERSION);
	} else {
		fputs(client_usage, stderr);
		return EXIT_AGENTFS;
	}
	cJSON_AddStringToObject(req, "op", op);
	reply = ask(socket_path, req, &rep);
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "ok"))) {
		rc = client_error(rep, json ? reply : NULL);
		if (!json)
			hint_real_path(rep);
	} else if (json)
		printf("%s\n", cli_json(reply));
	else
		print_reply(op, rep);
	return rc;
}

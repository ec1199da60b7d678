/* SPDX-License-Identifier: MIT */
/* The client side of agentfs: one request line to agentfsd, one reply line back. */
#include "src/agentfs.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>

/*
 * connect() with a full listen backlog fails with EAGAIN (at once for a
 * non-blocking socket, or when the wait is cut short): the daemon's loop is
 * busy with a burst of clients, so try again for about 2 s, backing off.
 */
static int connect_retry(int fd, const struct sockaddr_un *sa)
{
	struct timespec ts = {0, 1000 * 1000};
	long waited_ms = 0;

	for (;;) {
		if (connect(fd, (const struct sockaddr *)sa, sizeof *sa) == 0)
			return 0;
		if ((errno != EAGAIN && errno != EINTR) || waited_ms >= 2000)
			return -1;
		nanosleep(&ts, NULL);
		waited_ms += ts.tv_nsec / 1000000;
		if (ts.tv_nsec < 256 * 1000 * 1000)
			ts.tv_nsec *= 2;
	}
}

static int connect_to(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(path) >= sizeof sa.sun_path)
		die("socket path too long: %s", path);
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket: %s", strerror(errno));
	if (connect_retry(fd, &sa) != 0) {
		int e = errno;

		close(fd);
		if (e == ENOENT || e == ECONNREFUSED)
			die("cannot connect to agentfsd at %s: %s (is agentfsd running?)", path,
			    strerror(e));
		if (e == EACCES || e == EPERM)
			die("cannot connect to agentfsd at %s: permission denied: the control "
			    "socket is " CONTROL_SOCKET_DENIED
			    ", and members of agentfsd's group, agentfs by default (a bot uses "
			    "its own, $AGENT_SOCKET)",
			    path);
		die("cannot connect to agentfsd at %s: %s", path, strerror(e));
	}
	return fd;
}

int client_connect(const char *path)
{
	return connect_to(path);
}

/*
 * A reply that is not ok: its code and message on stderr, escaped, or with
 * --json the reply as it came (RAW, one line) on stdout. Answers the status
 * agentfs exits with when it refuses or fails, EXIT_AGENTFS.
 */
int client_error(const cJSON *rep, const char *raw)
{
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(rep, "error");
	const char *code = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(err, "code"));
	const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(err, "message"));

	if (raw != NULL)
		printf("%s\n", raw);
	else
		fprintf(stderr, "agentfs: %s: %s\n", code != NULL ? cli_escape(code) : "error",
			msg != NULL ? cli_escape(msg) : "agentfsd gave no reason");
	return EXIT_AGENTFS;
}

/*
 * A progress line sent before a reply (the request asked, "progress": true):
 * shown on a terminal's one line, overwritten by the next.
 */
static void show_progress(const char *line, bool *shown)
{
	cleanup_cjson cJSON *o = cJSON_Parse(line);
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "progress");

	if (!cJSON_IsObject(p) || !isatty(STDERR_FILENO))
		return;
	fprintf(stderr, "\ragentfs: scanning %s: %.0f entries, %.0f repositories\033[K",
		cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "root")),
		cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(p, "entries")),
		cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(p, "repos")));
	*shown = true;
}

/* Send one request and read one reply line; NULL if the connection was lost. */
static char *exchange(const char *path, const char *text)
{
	size_t len = strlen(text), off = 0, cap = 4096, n = 0;
	char *buf, *nl;
	ssize_t r;
	int fd = connect_to(path);
	bool shown = false;

	/* A send that fails still reads: a refusing daemon says why, then closes. */
	while (off < len) {
		r = send(fd, text + off, len - off, MSG_NOSIGNAL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		off += (size_t)r;
	}
	buf = malloc(cap);
	if (buf == NULL)
		die("out of memory");
	for (;;) {
		if (n + 1 >= cap) {
			char *nb = realloc(buf, cap *= 2);

			if (nb == NULL)
				die("out of memory");
			buf = nb;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
		buf[n] = '\0';
		while ((nl = memchr(buf, '\n', n)) != NULL &&
		       strncmp(buf, "{\"progress\":", 12) == 0) {
			*nl = '\0';
			show_progress(buf, &shown);
			n -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, n + 1);
		}
		if (nl != NULL) {
			*nl = '\0';
			close(fd);
			if (shown)
				fputc('\n', stderr);
			return buf;
		}
	}
	close(fd);
	free(buf);
	return NULL;
}

/* One request, one parsed reply; exits with a message when the daemon cannot be reached. */
cJSON *client_request(const char *socket_path, cJSON *req)
{
	cleanup_free char *text = cJSON_PrintUnformatted(req), *line = NULL, *reply = NULL;
	cJSON *rep;

	if (text == NULL || asprintf(&line, "%s\n", text) < 0)
		die("out of memory");
	reply = exchange(socket_path, line);
	if (reply == NULL)
		die("agentfsd closed the connection without a reply");
	rep = cJSON_Parse(reply);
	if (rep == NULL)
		die("agentfsd sent a reply that is not JSON");
	return rep;
}

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
	"usage: agentfs create NAME FOLDER [OPTIONS]\n"
	"       agentfs fork NAME NEWNAME [OPTIONS]\n"
	"       agentfs configure NAME [OPTIONS]\n"
	"\n"
	"  --sandbox S         read-only, workspace-write or danger-full-access\n"
	"  --writable DIR      an extra writable root; repeatable (replaces the list)\n"
	"  --no-writable       no extra writable roots\n"
	"  --readable DIR      an extra read-only root; repeatable (replaces the list)\n"
	"  --no-readable       no extra read-only roots\n"
	"  --network, --no-network\n"
	"  --allow-new-repos, --no-allow-new-repos\n"
	"  --ttl SECONDS       delete the bot after this long (0: never)\n"
	"  --user USER         create: the user (name or uid) its commands run as\n"
	"                      (default: the owner of FOLDER; a bot's bots: its own)\n"
	"  --pod NS/SA         a Kubernetes pod (namespace/service account) that may\n"
	"                      have its roots through agentfs-csi; repeatable\n"
	"                      (replaces the list; operator only)\n"
	"  --no-pods           no pods\n"
	"  --id ID             request id; a resent create or fork with it is answered\n"
	"                      from what the first made\n";

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
		printf("%s%s", v == arr->child ? "" : " ", v->valuestring);
	printf("\n");
}

static const char *str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : "-";
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

static void print_reply(const char *op, const cJSON *rep)
{
	const cJSON *v;

	if (strcmp(op, "list") == 0) {
		printf("%-20s %-12s %-19s %s\n", "NAME", "CREATOR", "SANDBOX", "FOLDER");
		cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(rep, "bots")) {
			printf("%-20s %-12s %-19s %s\n", str(v, "name"),
			       cJSON_IsString(cJSON_GetObjectItemCaseSensitive(v, "creator"))
				       ? str(v, "creator")
				       : "-",
			       str(v, "sandbox"), str(v, "folder"));
		}
	} else if (strcmp(op, "delete") == 0) {
		cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(rep, "deleted"))
			printf("deleted %s\n", v->valuestring);
	} else if (strcmp(op, "version") == 0) {
		printf("agentfs %s, agentfsd %s (protocol %d)\n", PACKAGE_VERSION,
		       str(rep, "version"),
		       (int)cJSON_GetNumberValue(
			       cJSON_GetObjectItemCaseSensitive(rep, "protocol")));
	} else if (strcmp(op, "status") == 0) {
		for (v = rep->child; v != NULL; v = v->next) {
			if (strcmp(v->string, "ok") == 0 || strcmp(v->string, "id") == 0)
				continue;
			if (cJSON_IsString(v))
				printf("%-10s%s\n", v->string, v->valuestring);
			else if (cJSON_IsNumber(v))
				printf("%-10s%.0f\n", v->string, v->valuedouble);
		}
	} else if (strcmp(op, "shutdown") == 0) {
		printf("agentfsd is shutting down\n");
	} else if ((v = cJSON_GetObjectItemCaseSensitive(rep, "bot")) != NULL) {
		print_bot(v);
	}
}

static const char rm_usage[] =
	"usage: agentfs rm [--force] NAME\n"
	"\n"
	"Delete the bot NAME and the bots it made. While any of them has a sandbox\n"
	"running (agentfs exec), nothing is deleted, unless:\n"
	"\n"
	"  -f, --force   end those sandboxes first: SIGTERM, then SIGKILL after 3 s\n";

static const char client_usage[] =
	"usage: agentfs [--socket PATH] [--json] COMMAND ... [--socket PATH] [--json]\n"
	"  create NAME FOLDER [OPTIONS]   make a bot (see agentfs create --help)\n"
	"  fork NAME NEWNAME [OPTIONS]    make a bot like NAME\n"
	"  configure NAME [OPTIONS]       change a bot; its mounts follow at once\n"
	"  rm [--force] NAME              delete a bot and the bots it made\n"
	"  ls, list                       list bots\n"
	"  show NAME                      show a bot, its mounts and socket\n"
	"  status                         show the daemon's status\n"
	"  log [BOT] [--follow]           events: writes refused and why, mounts, bots\n"
	"  changes BOT [--since MARK]     what the bot created, modified, deleted, renamed\n"
	"  shutdown                       stop the daemon\n"
	"  version                        show client and daemon versions\n";

int cmd_client(const char *socket_path, bool json, int argc, char **argv)
{
	cleanup_cjson cJSON *req = cJSON_CreateObject();
	cleanup_cjson cJSON *rep = NULL;
	cleanup_free char *text = NULL;
	char *reply = NULL, *pos[2] = {NULL, NULL}, idbuf[40];
	const char *cmd = argv[0], *op = cmd;
	unsigned char rnd[8];
	int i, rc = 0;

	if (strcmp(cmd, "log") == 0 || strcmp(cmd, "changes") == 0)
		return cmd_events(socket_path, json, argc, argv);
	if (strcmp(cmd, "create") == 0 || strcmp(cmd, "fork") == 0) {
		bot_options(cmd, argc, argv, req, 2, pos);
		cJSON_AddStringToObject(req, "name", pos[0]);
		if (strcmp(cmd, "create") == 0) {
			char *a = abs_path(pos[1]);

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
	} else if (strcmp(cmd, "configure") == 0) {
		bot_options(cmd, argc, argv, req, 1, pos);
		cJSON_AddStringToObject(req, "name", pos[0]);
	} else if (strcmp(cmd, "rm") == 0 || strcmp(cmd, "show") == 0) {
		if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
			if (strcmp(cmd, "rm") == 0)
				fputs(rm_usage, stdout);
			else
				printf("usage: agentfs %s NAME\n", cmd);
			return 0;
		}
		/* rm --force NAME (or NAME --force): end its running sandboxes first */
		for (i = 1; strcmp(cmd, "rm") == 0 && i < argc; i++) {
			if (strcmp(argv[i], "--force") == 0 || strcmp(argv[i], "-f") == 0) {
				cJSON_AddBoolToObject(req, "force", true);
				memmove(argv + i, argv + i + 1, (size_t)(argc - i) * sizeof *argv);
				argc--;
				break;
			}
		}
		if (argc != 2)
			die_usage(cmd, "%s takes one bot name", cmd);
		cJSON_AddStringToObject(req, "name", argv[1]);
		if (strcmp(cmd, "rm") == 0)
			op = "delete";
	} else if (strcmp(cmd, "ls") == 0 || strcmp(cmd, "list") == 0 ||
		   strcmp(cmd, "status") == 0 || strcmp(cmd, "shutdown") == 0 ||
		   strcmp(cmd, "version") == 0) {
		if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
			printf("usage: agentfs %s\n", cmd);
			return 0;
		}
		if (argc != 1)
			die_usage(cmd, "%s takes no arguments", cmd);
		if (strcmp(cmd, "ls") == 0)
			op = "list";
		if (strcmp(cmd, "version") == 0)
			cJSON_AddNumberToObject(req, "protocol", PROTOCOL_VERSION);
	} else {
		fputs(client_usage, stderr);
		return EXIT_AGENTFS;
	}
	/* Mounting scans the roots: on a terminal, show how far it got. */
	if ((strcmp(op, "create") == 0 || strcmp(op, "fork") == 0 ||
	     strcmp(op, "configure") == 0) &&
	    isatty(STDERR_FILENO))
		cJSON_AddBoolToObject(req, "progress", true);
	cJSON_AddStringToObject(req, "op", op);
	text = cJSON_PrintUnformatted(req);
	if (text == NULL || asprintf(&reply, "%s\n", text) < 0)
		die("out of memory");
	free(text);
	text = reply;
	reply = exchange(socket_path, text);
	if (reply == NULL && cJSON_GetObjectItemCaseSensitive(req, "id") != NULL)
		reply = exchange(socket_path, text); /* answered from the first if it was made */
	if (reply == NULL)
		die("agentfsd closed the connection without a reply");
	rep = cJSON_Parse(reply);
	if (rep == NULL)
		die("agentfsd sent a reply that is not JSON");
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "ok")))
		rc = client_error(rep, json ? reply : NULL);
	else if (json)
		printf("%s\n", reply);
	else
		print_reply(op, rep);
	free(reply);
	return rc;
}

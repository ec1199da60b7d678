/* SPDX-License-Identifier: MIT */
/*
 * daemon-client: a raw client for the agentfsd tests, so they can send what
 * the real client never would and read fields out of JSON without python.
 *
 *   daemon-client req SOCKET LINE...    one connection; send each LINE (a
 *                                       newline is added), print each reply
 *   daemon-client pipe SOCKET N         send standard input as is, print N
 *                                       replies (0: close at once)
 *   daemon-client noread SOCKET         pipeline version requests and never
 *                                       read a reply: print "closed MB" once
 *                                       the daemon drops us, "open MB" if it
 *                                       never does
 *   daemon-client longline SOCKET BYTES LINE
 *                                       send a request line of BYTES bytes,
 *                                       then LINE on the same connection;
 *                                       print both replies
 *   daemon-client stall SOCKET          hold a half-sent line on one
 *                                       connection while another asks for
 *                                       the version: print "MS REPLY"
 *   daemon-client flood SOCKET N        N clients connected at once, each
 *                                       asks for the version: print how many
 *                                       got a good answer
 *   daemon-client burst SOCKET N PID    stop the daemon PID (SIGSTOP), open
 *                                       N non-blocking connections, let it
 *                                       go on (SIGCONT), ask each for the
 *                                       version: print "CONNECTED ANSWERED"
 *   daemon-client get PATH              read JSON on stdin, print the value
 *                                       at PATH (a.b.0.c; * maps over an
 *                                       array, # counts it)
 *   daemon-client valid FILE            exit 0 if FILE is one JSON object
 *
 * Exit status: 0 done, 1 not found/invalid, 2 usage or system error,
 * 3 the daemon closed the connection, 4 no reply in time.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <cjson/cJSON.h>

#include "tests/sockclient.h"

#define REPLY_TIMEOUT_MS 10000

/*
 * Read n replies on c and print each on a line.  Returns 0, or SC_CLOSED or
 * SC_TIMEOUT after saying which reply (counted from first) was missing.
 */
static int print_replies(struct sc_conn *c, int n, int first)
{
	char *reply;
	int i, why = 0;

	for (i = 0; i < n; i++) {
		reply = sc_read_line(c, REPLY_TIMEOUT_MS, &why);
		if (reply == NULL) {
			fprintf(stderr, "daemon-client: reply %d: %s\n", first + i,
				why == SC_CLOSED ? "connection closed" : "no reply in time");
			return why;
		}
		printf("%s\n", reply);
		fflush(stdout);
		free(reply);
	}
	return 0;
}

/* Connect to sock for a command; says why not. */
static int open_conn(struct sc_conn *c, const char *sock)
{
	*c = (struct sc_conn){.fd = sc_dial(sock, 0)};
	if (c->fd < 0) {
		fprintf(stderr, "daemon-client: connect %s: %s\n", sock, strerror(errno));
		return 2;
	}
	return 0;
}

static int cmd_req(const char *sock, int n, char **lines)
{
	struct sc_conn c;
	int i, rc;

	if (open_conn(&c, sock) != 0)
		return 2;
	for (i = 0; i < n; i++) {
		size_t len = strlen(lines[i]);
		char *l = malloc(len + 2);

		if (l == NULL)
			return 2;
		memcpy(l, lines[i], len);
		l[len] = '\n';
		if (sc_send_all(c.fd, l, len + 1) != 0) {
			free(l);
			fprintf(stderr, "daemon-client: send: %s\n", strerror(errno));
			return 3;
		}
		free(l);
		rc = print_replies(&c, 1, i + 1);
		if (rc != 0)
			return rc;
	}
	sc_close(&c);
	return 0;
}

static int cmd_pipe(const char *sock, int n)
{
	struct sc_conn c;
	static char in[4 * 1024 * 1024];
	size_t len = 0;
	ssize_t r;
	int rc;

	while (len < sizeof in && (r = read(0, in + len, sizeof in - len)) > 0)
		len += (size_t)r;
	if (open_conn(&c, sock) != 0)
		return 2;
	if (sc_send_all(c.fd, in, len) != 0)
		return 3;
	rc = print_replies(&c, n, 1);
	sc_close(&c);
	return rc;
}

static int cmd_noread(const char *sock)
{
	static const char req[] = "{\"op\":\"version\"}\n";
	char chunk[65536];
	size_t k, sent = 0;
	struct pollfd pfd;
	long deadline = sc_now_ms() + 20000;
	ssize_t r;
	int fd = sc_dial(sock, 0);

	if (fd < 0)
		return 2;
	k = sc_repeat(chunk, sizeof chunk, req);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	while (sent < 256UL * 1024 * 1024 && sc_now_ms() < deadline) {
		r = send(fd, chunk, k, MSG_NOSIGNAL);
		if (r > 0) {
			sent += (size_t)r;
			continue;
		}
		if (r < 0 && errno == EAGAIN) {
			pfd.fd = fd;
			pfd.events = POLLOUT;
			poll(&pfd, 1, 500);
			if (pfd.revents & (POLLERR | POLLHUP))
				break;
			continue;
		}
		break; /* EPIPE or ECONNRESET: the daemon closed us */
	}
	printf("%s %zu\n",
	       sent >= 256UL * 1024 * 1024 || sc_now_ms() >= deadline ? "open" : "closed",
	       sent / (1024 * 1024));
	close(fd);
	return 0;
}

static int cmd_longline(const char *sock, const char *bytes, const char *next)
{
	struct sc_conn c;
	size_t n = strtoul(bytes, NULL, 10), off;
	static const char head[] = "{\"op\":\"version\",\"pad\":\"";
	char *line;
	int rc;

	if (n < sizeof head + 3)
		return 2;
	line = malloc(n + 1);
	if (line == NULL)
		return 2;
	memcpy(line, head, sizeof head - 1);
	memset(line + sizeof head - 1, 'a', n - (sizeof head - 1));
	memcpy(line + n - 2, "\"}", 2);
	line[n] = '\n';
	if (open_conn(&c, sock) != 0)
		return 2;
	/* Send in pieces so the daemon sees the line grow past its limit. */
	for (off = 0; off < n + 1; off += 65536) {
		size_t len = n + 1 - off < 65536 ? n + 1 - off : 65536;

		if (sc_send_all(c.fd, line + off, len) != 0) {
			fprintf(stderr, "daemon-client: send at %zu: %s\n", off, strerror(errno));
			return 3;
		}
	}
	free(line);
	if (sc_send_all(c.fd, next, strlen(next)) != 0 || sc_send_all(c.fd, "\n", 1) != 0)
		return 3;
	rc = print_replies(&c, 2, 1);
	sc_close(&c);
	return rc;
}

static int cmd_stall(const char *sock)
{
	struct sc_conn a = {0}, b = {0};
	char *reply;
	long t0;
	int why = 0;

	a.fd = sc_dial(sock, 0);
	if (a.fd < 0 || sc_send_all(a.fd, "{\"op\":\"vers", 11) != 0)
		return 2;
	usleep(200 * 1000);
	t0 = sc_now_ms();
	b.fd = sc_dial(sock, 0);
	if (b.fd < 0 || sc_send_all(b.fd, "{\"op\":\"version\"}\n", 17) != 0)
		return 2;
	reply = sc_read_line(&b, REPLY_TIMEOUT_MS, &why);
	sc_close(&b);
	if (reply == NULL)
		return why;
	printf("%ld %s\n", sc_now_ms() - t0, reply);
	free(reply);
	/* The stalled one has had no answer: its line is not finished. */
	reply = sc_read_line(&a, 100, &why);
	sc_close(&a);
	if (reply != NULL) {
		printf("stalled client got: %s\n", reply);
		free(reply);
		return 1;
	}
	return 0;
}

/* A barrier that opens after a while even if not everyone arrived. */
struct gate {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int waiting, n;
};

static void gate_wait(struct gate *g, int seconds)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += seconds;
	pthread_mutex_lock(&g->lock);
	if (++g->waiting >= g->n)
		pthread_cond_broadcast(&g->cond);
	while (g->waiting < g->n)
		if (pthread_cond_timedwait(&g->cond, &g->lock, &ts) != 0)
			break;
	pthread_mutex_unlock(&g->lock);
}

struct flooder {
	pthread_t t;
	const char *sock;
	struct gate *bar;
	int good;
	char err[128];
};

static void *flood_one(void *arg)
{
	struct flooder *f = arg;
	struct sc_conn c = {0};
	cJSON *rep;
	char *line;
	int why = 0;

	c.fd = sc_dial(f->sock, 0);
	if (c.fd < 0)
		snprintf(f->err, sizeof f->err, "connect: %s", strerror(errno));
	/* Everyone connected before anyone asks: they are all clients at once. */
	gate_wait(f->bar, 10);
	if (c.fd < 0)
		return NULL;
	if (sc_send_all(c.fd, "{\"op\":\"version\",\"protocol\":1}\n", 30) != 0) {
		snprintf(f->err, sizeof f->err, "send: %s", strerror(errno));
		close(c.fd);
		return NULL;
	}
	line = sc_read_line(&c, 30000, &why);
	sc_close(&c);
	if (line == NULL) {
		snprintf(f->err, sizeof f->err, "%s", why == SC_CLOSED ? "closed" : "timeout");
		return NULL;
	}
	rep = cJSON_Parse(line);
	if (rep != NULL && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "ok")) &&
	    cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(rep, "protocol")) == 1)
		f->good = 1;
	else
		snprintf(f->err, sizeof f->err, "bad reply: %.100s", line);
	cJSON_Delete(rep);
	free(line);
	return NULL;
}

static int cmd_flood(const char *sock, int n)
{
	struct flooder *fs = calloc((size_t)n, sizeof *fs);
	struct gate bar = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, n};
	pthread_attr_t attr;
	struct rlimit rl;
	int i, good = 0, shown = 0;

	if (fs == NULL)
		return 2;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 128 * 1024);
	for (i = 0; i < n; i++) {
		fs[i].sock = sock;
		fs[i].bar = &bar;
		if (pthread_create(&fs[i].t, &attr, flood_one, &fs[i]) != 0) {
			fprintf(stderr, "daemon-client: cannot start thread %d\n", i);
			exit(2);
		}
	}
	for (i = 0; i < n; i++) {
		pthread_join(fs[i].t, NULL);
		good += fs[i].good;
		if (!fs[i].good && shown++ < 5)
			fprintf(stderr, "client %d: %s\n", i, fs[i].err);
	}
	printf("%d\n", good);
	free(fs);
	return 0;
}

/* One connection of a burst: connect without waiting, as many tools do. */
static int burst_dial(const char *sock)
{
	int fd = sc_dial(sock, SOCK_NONBLOCK);

	if (fd < 0)
		return -1;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

/*
 * A burst of clients while the daemon's loop is busy (stopped): they all
 * wait in the listen backlog, so each must connect and then be answered.
 */
static int cmd_burst(const char *sock, int n, pid_t pid)
{
	int *fds = calloc((size_t)n, sizeof *fds);
	struct sc_conn c = {0};
	int i, connected = 0, answered = 0, shown = 0, why;
	char *line;

	if (fds == NULL || kill(pid, SIGSTOP) != 0)
		return 2;
	for (i = 0; i < n; i++) {
		fds[i] = burst_dial(sock);
		if (fds[i] >= 0)
			connected++;
		else if (shown++ < 5)
			fprintf(stderr, "client %d: connect: %s\n", i, strerror(errno));
	}
	kill(pid, SIGCONT);
	for (i = 0; i < n; i++) {
		if (fds[i] < 0)
			continue;
		c = (struct sc_conn){.fd = fds[i]};
		line = sc_send_all(c.fd, "{\"op\":\"version\",\"protocol\":1}\n", 30) == 0
			       ? sc_read_line(&c, 10000, &why)
			       : NULL;
		if (line != NULL && strstr(line, "\"ok\":true") != NULL)
			answered++;
		else if (shown++ < 5)
			fprintf(stderr, "client %d: %s\n", i, line ? line : "no answer");
		free(line);
		sc_close(&c);
	}
	printf("%d %d\n", connected, answered);
	free(fds);
	return 0;
}

static void print_value(const cJSON *v)
{
	char *t;

	if (cJSON_IsString(v)) {
		printf("%s\n", v->valuestring);
		return;
	}
	t = cJSON_PrintUnformatted(v);
	printf("%s\n", t != NULL ? t : "?");
	free(t);
}

/* Walk PATH from v: KEY or INDEX steps, '#' counts an array, '*' maps over it. */
static int walk(const cJSON *v, char *path)
{
	char *dot, *tok = path;
	const cJSON *e;

	while (v != NULL && tok != NULL && *tok != '\0') {
		dot = strchr(tok, '.');
		if (dot != NULL)
			*dot++ = '\0';
		if (strcmp(tok, "#") == 0) {
			if (!cJSON_IsArray(v))
				return 1;
			printf("%d\n", cJSON_GetArraySize(v));
			return 0;
		}
		if (strcmp(tok, "*") == 0) {
			if (!cJSON_IsArray(v))
				return 1;
			cJSON_ArrayForEach(e, v) {
				char *copy = strdup(dot != NULL ? dot : "");

				walk(e, copy);
				free(copy);
			}
			return 0;
		}
		if (cJSON_IsArray(v))
			v = cJSON_GetArrayItem(v, atoi(tok));
		else
			v = cJSON_GetObjectItemCaseSensitive(v, tok);
		tok = dot;
	}
	if (v == NULL)
		return 1;
	print_value(v);
	return 0;
}

static int cmd_get(const char *path)
{
	static char buf[4 * 1024 * 1024];
	size_t n = 0;
	ssize_t r;
	cJSON *doc;
	char *p;
	int rc;

	while (n < sizeof buf - 1 && (r = read(0, buf + n, sizeof buf - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = '\0';
	doc = cJSON_Parse(buf);
	if (doc == NULL)
		return 1;
	p = strdup(path);
	rc = walk(doc, p);
	free(p);
	cJSON_Delete(doc);
	return rc;
}

static int cmd_valid(const char *file)
{
	FILE *f = fopen(file, "r");
	static char buf[16 * 1024 * 1024];
	size_t n;
	cJSON *doc;
	int ok;

	if (f == NULL)
		return 1;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	doc = cJSON_ParseWithLength(buf, n);
	ok = doc != NULL && cJSON_IsObject(doc);
	cJSON_Delete(doc);
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && strcmp(argv[1], "req") == 0)
		return cmd_req(argv[2], argc - 3, argv + 3);
	if (argc == 4 && strcmp(argv[1], "pipe") == 0)
		return cmd_pipe(argv[2], atoi(argv[3]));
	if (argc == 3 && strcmp(argv[1], "noread") == 0)
		return cmd_noread(argv[2]);
	if (argc == 5 && strcmp(argv[1], "longline") == 0)
		return cmd_longline(argv[2], argv[3], argv[4]);
	if (argc == 3 && strcmp(argv[1], "stall") == 0)
		return cmd_stall(argv[2]);
	if (argc == 4 && strcmp(argv[1], "flood") == 0)
		return cmd_flood(argv[2], atoi(argv[3]));
	if (argc == 5 && strcmp(argv[1], "burst") == 0)
		return cmd_burst(argv[2], atoi(argv[3]), (pid_t)atoi(argv[4]));
	if (argc == 3 && strcmp(argv[1], "get") == 0)
		return cmd_get(argv[2]);
	if (argc == 3 && strcmp(argv[1], "valid") == 0)
		return cmd_valid(argv[2]);
	fprintf(stderr,
		"usage: daemon-client req|pipe|noread|longline|stall|flood|burst|get|valid ...\n");
	return 2;
}

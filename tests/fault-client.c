/* SPDX-License-Identifier: MIT */
/*
 * fault-client: misbehaving clients and probes for the fault tests
 * (tests/fault-*.sh).  Every command is bounded in time.
 *
 *   fault-client latency SOCKET N GAP_MS
 *       one connection; N version requests, one at a time, GAP_MS apart;
 *       print "median_us max_us answered" (exit 4 if one is not answered
 *       within 5 s, 3 if the connection closes)
 *   fault-client blast SOCKET SECONDS
 *       pipeline version requests as fast as the socket takes them and never
 *       read a reply; reconnect whenever the daemon drops us; print
 *       "requests_sent connections"
 *   fault-client storm SOCKET SECONDS
 *       connect, send one request, close without reading, over and over;
 *       print the number of connections
 *   fault-client stall SOCKET SECONDS
 *       hold a half-sent line on one connection for SECONDS; print
 *       "stalled" if the daemon kept it open, "closed" if it dropped it,
 *       "answered" if it replied to the half line
 *   fault-client midreply SOCKET SECONDS
 *       over and over: send a burst of list requests, read a few bytes of
 *       the replies, then vanish with the rest unread (the close resets the
 *       connection); print the number of connections
 *   fault-client hold SOCKET N SECONDS
 *       open up to N connections without blocking (stop at the first
 *       failure, e.g. a full backlog), keep them for SECONDS (or until
 *       SIGTERM), print "opened N" once they are open (stdout flushed) and
 *       "done" when they are closed
 *   fault-client hoard SOCKET N K LINE SECONDS
 *       open up to N connections; on each, send LINE (a request; each %d
 *       in it becomes the connection's number, from 0) K times and never read
 *       a reply; keep them for SECONDS (or until SIGTERM); print "opened N
 *       sent M" once they are sent (stdout flushed), then "open N" (those
 *       the daemon has not closed) when done
 *   fault-client write FILE BYTES
 *       open FILE for writing (create, truncate) and write BYTES zero bytes
 *       with write(2); print "ok BYTES" or "ERRNO_NAME written" (e.g.
 *       "ENOSPC 12288") on the first failure
 *
 * Exit status: 0 done, 2 usage or system error, 3 closed, 4 no reply in time.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "tests/sockclient.h"

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

static int cmd_latency(const char *sock, int n, int gap_ms)
{
	static const char req[] = "{\"op\":\"version\",\"id\":\"lat\"}\n";
	long long *t = calloc((size_t)n, sizeof *t), t0;
	struct sc_conn c;
	char *line;
	int i, rc = 0;

	if (t == NULL || n <= 0)
		return 2;
	c = (struct sc_conn){.fd = sc_dial(sock, 0)};
	if (c.fd < 0) {
		fprintf(stderr, "fault-client: connect %s: %s\n", sock, strerror(errno));
		return 2;
	}
	for (i = 0; i < n; i++) {
		t0 = sc_now_us();
		if (sc_send_all(c.fd, req, sizeof req - 1) != 0) {
			fprintf(stderr, "fault-client: request %d: send: %s\n", i + 1, strerror(errno));
			return 3;
		}
		line = sc_read_line(&c, 5000, &rc);
		if (line == NULL) {
			fprintf(stderr, "fault-client: request %d: %s\n", i + 1,
				rc == SC_CLOSED ? "connection closed" : "no reply within 5 s");
			printf("- - %d\n", i);
			return rc;
		}
		t[i] = sc_now_us() - t0;
		if (strstr(line, "\"ok\":true") == NULL || strstr(line, "\"lat\"") == NULL) {
			fprintf(stderr, "fault-client: request %d: bad reply: %.200s\n", i + 1, line);
			return 2;
		}
		free(line);
		if (gap_ms > 0)
			usleep((useconds_t)gap_ms * 1000);
	}
	sc_close(&c);
	qsort(t, (size_t)n, sizeof *t, cmp_ll);
	printf("%lld %lld %d\n", t[n / 2], t[n - 1], n);
	free(t);
	return 0;
}

static int cmd_blast(const char *sock, int seconds)
{
	static const char req[] = "{\"op\":\"version\"}\n";
	char chunk[65536];
	size_t per = sizeof req - 1, k = sc_repeat(chunk, sizeof chunk, req);
	long long end = sc_now_us() + seconds * 1000000LL, sent = 0;
	long conns = 0;
	struct pollfd pfd;
	ssize_t r;
	int fd = -1;

	while (sc_now_us() < end) {
		if (fd < 0) {
			fd = sc_dial(sock, 0);
			if (fd < 0) {
				usleep(10000);
				continue;
			}
			conns++;
			fcntl(fd, F_SETFL, O_NONBLOCK);
		}
		r = send(fd, chunk, k, MSG_NOSIGNAL);
		if (r > 0) {
			sent += r / (ssize_t)per;
			continue;
		}
		if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
			pfd.fd = fd;
			pfd.events = POLLOUT;
			pfd.revents = 0;
			poll(&pfd, 1, 50);
			if (!(pfd.revents & (POLLERR | POLLHUP)))
				continue;
		}
		close(fd); /* dropped by the daemon: come back */
		fd = -1;
	}
	if (fd >= 0)
		close(fd);
	printf("%lld %ld\n", sent, conns);
	return 0;
}

/*
 * Connect over and over for seconds, handing each connection to one (which
 * closes it); print how many there were.
 */
static int churn(const char *sock, int seconds, void (*one)(int fd))
{
	long long end = sc_now_us() + seconds * 1000000LL;
	long conns = 0;
	int fd;

	while (sc_now_us() < end) {
		fd = sc_dial(sock, 0);
		if (fd < 0) {
			usleep(1000);
			continue;
		}
		conns++;
		one(fd);
	}
	printf("%ld\n", conns);
	return 0;
}

/* storm: one request, then gone without reading */
static void storm_one(int fd)
{
	static const char req[] = "{\"op\":\"version\"}\n";

	send(fd, req, sizeof req - 1, MSG_NOSIGNAL);
	close(fd);
}

static int cmd_stall(const char *sock, int seconds)
{
	struct pollfd pfd;
	char c;
	int fd = sc_dial(sock, 0);

	if (fd < 0)
		return 2;
	if (sc_send_all(fd, "{\"op\":\"vers", 11) != 0)
		return 3;
	pfd.fd = fd;
	pfd.events = POLLIN;
	if (poll(&pfd, 1, seconds * 1000) <= 0)
		printf("stalled\n");
	else
		printf("%s\n", read(fd, &c, 1) <= 0 ? "closed" : "answered");
	close(fd);
	return 0;
}

/* midreply: a burst of list requests, a few bytes of the first reply, gone */
static void midreply_one(int fd)
{
	static char burst[64 * 32];
	static size_t k;
	char buf[64];
	struct pollfd pfd = {.fd = fd, .events = POLLIN};

	if (k == 0)
		k = sc_repeat(burst, sizeof burst, "{\"op\":\"list\"}\n");
	sc_send_all(fd, burst, k);
	if (poll(&pfd, 1, 1000) > 0)
		(void)!read(fd, buf, sizeof buf);
	close(fd);
}

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static int cmd_hold(const char *sock, int n, int seconds)
{
	int *fds = calloc((size_t)n, sizeof *fds), i, opened = 0;

	if (fds == NULL)
		return 2;
	for (i = 0; i < n; i++) {
		fds[i] = sc_dial(sock, SOCK_NONBLOCK);
		if (fds[i] < 0) {
			fprintf(stderr, "fault-client: connection %d: %s\n", i + 1, strerror(errno));
			break;
		}
		opened++;
	}
	printf("opened %d\n", opened);
	fflush(stdout);
	signal(SIGTERM, on_term);
	for (i = 0; i < seconds * 10 && !stop; i++)
		usleep(100000);
	for (i = 0; i < opened; i++)
		close(fds[i]);
	printf("done\n");
	free(fds);
	return 0;
}

/* Has the daemon closed fd (an end of file, or an error, with nothing read)? */
static bool closed_by_peer(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN | POLLRDHUP};

	return poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

static int cmd_hoard(const char *sock, int n, int k, const char *line, int seconds)
{
	int *fds = calloc((size_t)n, sizeof *fds), i, j, opened = 0, open_now = 0;
	/* each %d (2 bytes) becomes at most 10 digits */
	size_t cap = strlen(line) * 5 + 2, len;
	char *req = malloc(cap);
	const char *at, *from;
	long sent = 0;

	if (fds == NULL || req == NULL)
		return 2;
	for (i = 0; i < n; i++) {
		fds[i] = sc_dial(sock, 0);
		if (fds[i] < 0)
			break;
		opened++;
		/* every %d: a create's name and its folder both carry the number */
		for (len = 0, from = line; (at = strstr(from, "%d")) != NULL; from = at + 2)
			len += (size_t)snprintf(req + len, cap - len, "%.*s%d", (int)(at - from),
						from, i);
		len += (size_t)snprintf(req + len, cap - len, "%s", from);
		req[len++] = '\n';
		/* a line the socket does not take at once: the rest are not sent */
		for (j = 0; j < k && send(fds[i], req, len, MSG_DONTWAIT | MSG_NOSIGNAL) ==
					     (ssize_t)len;
		     j++)
			sent++;
	}
	printf("opened %d sent %ld\n", opened, sent);
	fflush(stdout);
	signal(SIGTERM, on_term);
	for (i = 0; i < seconds * 10 && !stop; i++)
		usleep(100000);
	for (i = 0; i < opened; i++) {
		open_now += !closed_by_peer(fds[i]);
		close(fds[i]);
	}
	printf("open %d\n", open_now);
	free(fds);
	free(req);
	return 0;
}

static const char *errno_name(int e)
{
	switch (e) {
	case ENOSPC: return "ENOSPC";
	case EDQUOT: return "EDQUOT";
	case EIO: return "EIO";
	case EROFS: return "EROFS";
	case EFBIG: return "EFBIG";
	case ENOTCONN: return "ENOTCONN";
	case EACCES: return "EACCES";
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	default: return "EOTHER";
	}
}

static int cmd_write(const char *file, const char *bytes)
{
	static char zero[65536];
	long long want = strtoll(bytes, NULL, 10), done = 0;
	ssize_t r;
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0) {
		printf("%s 0 (open: %s)\n", errno_name(errno), strerror(errno));
		return 0;
	}
	while (done < want) {
		size_t len = want - done < (long long)sizeof zero ? (size_t)(want - done) : sizeof zero;

		r = write(fd, zero, len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			printf("%s %lld\n", errno_name(errno), done);
			close(fd);
			return 0;
		}
		done += r;
	}
	/* a delayed error shows on close */
	if (fsync(fd) != 0 && errno != EINVAL) {
		printf("%s %lld (fsync)\n", errno_name(errno), done);
		close(fd);
		return 0;
	}
	if (close(fd) != 0) {
		printf("%s %lld (close)\n", errno_name(errno), done);
		return 0;
	}
	printf("ok %lld\n", done);
	return 0;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc == 5 && strcmp(argv[1], "latency") == 0)
		return cmd_latency(argv[2], atoi(argv[3]), atoi(argv[4]));
	if (argc == 4 && strcmp(argv[1], "blast") == 0)
		return cmd_blast(argv[2], atoi(argv[3]));
	if (argc == 4 && strcmp(argv[1], "storm") == 0)
		return churn(argv[2], atoi(argv[3]), storm_one);
	if (argc == 4 && strcmp(argv[1], "stall") == 0)
		return cmd_stall(argv[2], atoi(argv[3]));
	if (argc == 4 && strcmp(argv[1], "midreply") == 0)
		return churn(argv[2], atoi(argv[3]), midreply_one);
	if (argc == 5 && strcmp(argv[1], "hold") == 0)
		return cmd_hold(argv[2], atoi(argv[3]), atoi(argv[4]));
	if (argc == 4 && strcmp(argv[1], "write") == 0)
		return cmd_write(argv[2], argv[3]);
	if (argc == 7 && strcmp(argv[1], "hoard") == 0)
		return cmd_hoard(argv[2], atoi(argv[3]), atoi(argv[4]), argv[5], atoi(argv[6]));
	fprintf(stderr,
		"usage: fault-client latency|blast|storm|stall|midreply|hold|hoard|write ...\n");
	return 2;
}

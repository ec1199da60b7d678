/* SPDX-License-Identifier: MIT */
/*
 * agentfsd's JSON socket, for the plugin: one request line, one reply line
 * (progress lines are never asked for), within a deadline, so a stalled
 * daemon makes a call fail with UNAVAILABLE (kubelet tries again) instead
 * of holding a gRPC thread and the publish lock for ever.
 */
#include "csi/csi.h"
#include "src/common/agentfs.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#define AFSD_TIMEOUT_MS 20000	   /* a mount job of agentfsd's may be queued */
#define AFSD_REPLY_MAX (4u << 20) /* a plan is a few KiB; more is not agentfsd */

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait for fd to be ready for events until deadline; 0, or -ETIMEDOUT. */
static int wait_fd(int fd, short events, long deadline)
{
	struct pollfd p = {.fd = fd, .events = events};
	long left;
	int r;

	for (;;) {
		left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&p, 1, (int)left);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

static int afsd_connect(const char *path, long deadline)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, e;

	if (strlen(path) >= sizeof sa.sun_path)
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* a full backlog (EAGAIN): the daemon is busy; try again until the deadline */
	while (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		e = errno;
		if ((e != EAGAIN && e != EINTR) || now_ms() >= deadline) {
			close(fd);
			return -e;
		}
		usleep(10000);
	}
	return fd;
}

static int send_all(int fd, const char *buf, size_t len, long deadline)
{
	size_t off = 0;
	ssize_t n;
	int r;

	while (off < len) {
		n = send(fd, buf + off, len - off, MSG_NOSIGNAL);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		if ((r = wait_fd(fd, POLLOUT, deadline)) != 0)
			return r;
	}
	return 0;
}

/* The first line fd sends, NUL-terminated in *out; 0 or -errno. */
static int read_line(int fd, char **out, long deadline)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap), *nb;
	ssize_t r;
	int e;

	if (buf == NULL)
		return -ENOMEM;
	for (;;) {
		if (n + 1 >= cap) {
			if (cap >= AFSD_REPLY_MAX || (nb = realloc(buf, cap * 2)) == NULL) {
				free(buf);
				return -E2BIG;
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r > 0) {
			char *nl = memchr(buf + n, '\n', (size_t)r);

			n += (size_t)r;
			if (nl != NULL) {
				*nl = '\0';
				*out = buf;
				return 0;
			}
			continue;
		}
		if (r == 0) {
			free(buf);
			return -ECONNRESET;
		}
		if (errno != EAGAIN && errno != EINTR) {
			e = errno;
			free(buf);
			return -e;
		}
		if ((e = wait_fd(fd, POLLIN, deadline)) != 0) {
			free(buf);
			return e;
		}
	}
}

int csi_afsd_request(const struct csi_conf *c, const cJSON *req, cJSON **reply, char *msg,
		     size_t len)
{
	long deadline = now_ms() + AFSD_TIMEOUT_MS;
	char *text = cJSON_PrintUnformatted(req), *line = NULL;
	int fd, r;

	*reply = NULL;
	if (text == NULL) {
		snprintf(msg, len, "out of memory");
		return CSI_INTERNAL;
	}
	fd = afsd_connect(c->socket, deadline);
	if (fd < 0) {
		free(text);
		snprintf(msg, len, "cannot reach agentfsd at %s: %s (is it running?)", c->socket,
			 strerror(-fd));
		return CSI_UNAVAILABLE;
	}
	r = send_all(fd, text, strlen(text), deadline);
	if (r == 0)
		r = send_all(fd, "\n", 1, deadline);
	free(text);
	if (r == 0)
		r = read_line(fd, &line, deadline);
	close(fd);
	if (r != 0) {
		snprintf(msg, len, "agentfsd at %s did not answer: %s", c->socket,
			 r == -ETIMEDOUT ? "timed out" : strerror(-r));
		return CSI_UNAVAILABLE;
	}
	*reply = cJSON_Parse(line);
	free(line);
	if (*reply == NULL) {
		snprintf(msg, len, "agentfsd sent a reply that is not JSON");
		return CSI_INTERNAL;
	}
	return CSI_OK;
}

int csi_probe(const struct csi_conf *c, char *msg, size_t len)
{
	cJSON *req = cJSON_CreateObject(), *rep = NULL;
	int code;

	if (req == NULL) {
		snprintf(msg, len, "out of memory");
		return CSI_INTERNAL;
	}
	cJSON_AddStringToObject(req, "op", "version");
	cJSON_AddNumberToObject(req, "protocol", PROTOCOL_VERSION);
	code = csi_afsd_request(c, req, &rep, msg, len);
	cJSON_Delete(req);
	if (code == CSI_OK && !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "ok"))) {
		snprintf(msg, len, "agentfsd at %s answers, but not to this protocol", c->socket);
		code = CSI_FAILED_PRECONDITION;
	}
	cJSON_Delete(rep);
	return code;
}

/* SPDX-License-Identifier: MIT */
/* sockclient: see sockclient.h. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "tests/sockclient.h"

long long sc_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

long sc_now_ms(void)
{
	return (long)(sc_now_us() / 1000);
}

int sc_dial(const char *path, int flags)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, e;

	if (strlen(path) >= sizeof sa.sun_path) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int sc_send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t r;

	while (len > 0) {
		r = send(fd, p, len, MSG_NOSIGNAL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

size_t sc_repeat(char *buf, size_t cap, const char *req)
{
	size_t per = strlen(req), k;

	for (k = 0; k + per <= cap; k += per)
		memcpy(buf + k, req, per);
	return k;
}

/* Take the first line out of c's buffer, or NULL if it holds no newline yet. */
static char *take_line(struct sc_conn *c)
{
	char *nl = c->n > 0 ? memchr(c->buf, '\n', c->n) : NULL, *line;
	size_t len;

	if (nl == NULL)
		return NULL;
	len = (size_t)(nl - c->buf);
	line = malloc(len + 1);
	if (line == NULL)
		exit(2);
	memcpy(line, c->buf, len);
	line[len] = '\0';
	memmove(c->buf, nl + 1, c->n - len - 1);
	c->n -= len + 1;
	return line;
}

char *sc_read_line(struct sc_conn *c, int ms, int *why)
{
	long deadline = sc_now_ms() + ms;
	struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
	char *line;
	ssize_t r;
	int left;

	for (;;) {
		line = take_line(c);
		if (line != NULL)
			return line;
		left = (int)(deadline - sc_now_ms());
		if (left <= 0) {
			*why = SC_TIMEOUT;
			return NULL;
		}
		r = poll(&pfd, 1, left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0)
			continue;
		if (c->n + 4096 > c->cap) {
			c->cap = c->cap * 2 + 8192;
			c->buf = realloc(c->buf, c->cap);
			if (c->buf == NULL)
				exit(2);
		}
		r = read(c->fd, c->buf + c->n, c->cap - c->n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			*why = SC_CLOSED;
			return NULL;
		}
		c->n += (size_t)r;
	}
}

void sc_close(struct sc_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->buf);
	c->buf = NULL;
	c->n = c->cap = 0;
}

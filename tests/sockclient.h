/* SPDX-License-Identifier: MIT */
/*
 * sockclient: the socket and line plumbing of the test clients
 * (tests/daemon-client.c, tests/fault-client.c): connect to agentfsd's Unix
 * socket, send a whole buffer, read newline-ended replies with a deadline.
 * Errors are returned, never printed: each client says what failed its way.
 */
#ifndef TESTS_SOCKCLIENT_H
#define TESTS_SOCKCLIENT_H

#include <stddef.h>

/* What sc_read_line says when it returns no line (also the clients' exit codes). */
#define SC_CLOSED 3  /* the daemon closed the connection */
#define SC_TIMEOUT 4 /* no whole line in time */

/* A connection's read side: bytes received but not yet returned as lines. */
struct sc_conn {
	int fd;
	char *buf;
	size_t n, cap;
};

/* CLOCK_MONOTONIC in microseconds and milliseconds. */
long long sc_now_us(void);
long sc_now_ms(void);

/*
 * Connect to the Unix socket at path; flags are added to socket(2)'s type
 * (0, or SOCK_NONBLOCK so a full backlog is EAGAIN rather than a wait).
 * Returns the fd, or -1 with errno (ENAMETOOLONG for a path that does not
 * fit sun_path).
 */
int sc_dial(const char *path, int flags);

/* Send all len bytes (no SIGPIPE); 0, or -1 with errno. */
int sc_send_all(int fd, const void *buf, size_t len);

/* Fill buf (cap bytes) with copies of the string req; returns the bytes used. */
size_t sc_repeat(char *buf, size_t cap, const char *req);

/*
 * Read one line (without its newline) within ms milliseconds. Returns a
 * malloc'd string, or NULL with *why SC_CLOSED or SC_TIMEOUT.  Exits 2 when
 * out of memory.
 */
char *sc_read_line(struct sc_conn *c, int ms, int *why);

/* Close c's fd and free what it buffered. */
void sc_close(struct sc_conn *c);

#endif

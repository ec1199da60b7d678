/* SPDX-License-Identifier: MIT */
/*
 * The transport's records, private to the two files that keep them:
 * server.c (the peers: framing, replies, reading whole lines) and listen.c
 * (the sockets: who may connect, the shares of max_clients, accept, bind,
 * listen and close). All of it is the event loop's thread's alone.
 */
#ifndef AGENTFS_SERVER_INT_H
#define AGENTFS_SERVER_INT_H

#include "src/common/agentfs.h"

#include <sys/socket.h>

/*
 * The operator's clients and the control socket run at a higher priority
 * than every bot's (PRIO_OPERATOR): a bot's flood of requests never stands
 * between the operator and its answer.
 */
#define PRIO_OPERATOR 0
#define PRIO_DEFAULT 1
#define NPRIO 2

struct listener {
	struct server *srv;
	int fd;
	struct event *ev;    /* readable: clients wait (listener_ready) */
	struct event *retry; /* out of descriptors: accept again after a pause */
	char *path;
	char store_name[BOT_NAME_MAX + 8]; /* in the fd store: "ctl" or "bot.NAME" */
	struct bot *bot; /* NULL: the control socket */
	uid_t owner;	 /* besides root, the uid allowed to connect */
	LIST_ENTRY(listener) entry;
};

struct peer {
	struct server *srv;
	struct bufferevent *bev;
	struct bot *bot; /* NULL: the operator */
	uid_t uid;
	gid_t gid;
	pid_t pid;
	bool dead;	     /* lost: no more reading or replies */
	bool busy;	     /* a request is being answered; later lines wait */
	bool skipping;	     /* dropping the rest of an over-long line */
	bool eof;	     /* the client shut its side; close once answered */
	struct event *again; /* a bot's client with lines left after its turn */
	/* a stream (log --follow): told once when the peer goes; its input is ignored */
	void (*closed)(void *arg);
	void *closed_arg;
	unsigned refs;
	/* what it holds is charged to (held): its bot's family, and its operator */
	struct account *fam, *op;
	unsigned long long charged; /* reply bytes charged and not yet given back */
	TAILQ_ENTRY(peer) entry;
};

struct server {
	struct event_base *base;
	struct config *cfg;
	LIST_HEAD(, listener) listeners;
	TAILQ_HEAD(, peer) peers;
	unsigned npeers;
	unsigned nctl; /* of them, on the control socket */
	/* out of descriptors (listen.c): */
	int reserve;		     /* /dev/null, given up to tell a waiting client why */
	int64_t short_since;	     /* accepts fail for want of descriptors since (mono_ms; 0: no) */
	int64_t short_last;	     /* ... and the last failed then */
	unsigned long told;	     /* clients told so in this shortage */
	bool closed;		     /* server_shutdown or server_handover: no more sockets */
};

/* server.c: serve a client listen.c admitted; fd, fam and op are its (held) */
int server_peer_add(struct server *srv, int fd, struct bot *bot, const struct ucred *cred,
		    struct account *fam, struct account *op);
/* server.c: cut off every client connected through bot's socket */
void server_peers_cut(struct server *srv, struct bot *bot);

#endif

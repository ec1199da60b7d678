/* SPDX-License-Identifier: MIT */
/*
 * Sending a descriptor over a unix socket (SCM_RIGHTS): agentfsd's fd store
 * and keeper (src/daemon/fdstore.c, keeper.c) and the in-sandbox step that
 * hands its seccomp listener out (src/cli/exec-as.c). It calls the C
 * library alone, so agentfs-enter links it too.
 */
#include "src/common/agentfs.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

/* A datagram or message msg to s (to: its address, or NULL), carrying fd unless -1; 0 or -errno */
int fdpass_send(int s, const struct sockaddr_un *to, socklen_t tolen, const char *msg, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {(void *)msg, strlen(msg)};
	struct msghdr mh = {.msg_name = (void *)to,
			    .msg_namelen = to != NULL ? tolen : 0,
			    .msg_iov = &iov,
			    .msg_iovlen = 1};
	struct cmsghdr *c;

	if (fd >= 0) {
		memset(cbuf, 0, sizeof cbuf);
		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof cbuf;
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof fd);
	}
	return sendmsg(s, &mh, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * agentfsd's configuration file (agentfsd.json, agentfsd(8)): read at
 * start, read again on SIGHUP. conffile.c; main and the loop in agentfsd.c.
 */
#ifndef AGENTFS_DAEMON_CONFFILE_H
#define AGENTFS_DAEMON_CONFFILE_H

#include "src/common/agentfs.h"

/* What a configuration file does not say (agentfsd(8)) */
#define CONFIG_DEFAULTS                                                                            \
	{                                                                                          \
		.default_sandbox = SANDBOX_WORKSPACE_WRITE, .workers = 4, .max_bots = 200,         \
		.max_clients = 4096, .max_changes = 100000, .changes_memory = 256,                 \
		.restart_grace = RESTART_GRACE_DEFAULT,                                            \
	}

/* Read FILE into CFG: every field optional, an unknown or ill-typed one an error naming it */
int config_read(struct config *cfg, const char *file, char *err, size_t len);
/* What main and config_read allocated in CFG */
void config_free(struct config *cfg);
/* The operators besides root: the configured group's gid, if the group exists */
int operators_group(struct config *cfg, char *err, size_t len);
/* SIGHUP: the file read again; what may change while bots run takes effect */
int config_reload(struct config *cfg, char *err, size_t len);

#endif

/* SPDX-License-Identifier: MIT */
/* The sandboxes' cgroups (src/daemon/cgroup.c), for agentfsd's sandbox.c and plan.c. */
#ifndef AGENTFS_CGROUP_H
#define AGENTFS_CGROUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum cg_mode {
	CG_OFF,	   /* the config's "cgroup" is "": no limits */
	CG_V1,	   /* the v1 memory and pids hierarchies */
	CG_V2,	   /* cgroup v2 */
	CG_BROKEN, /* configured, but the host has none usable: sandboxes are refused */
};

/* A sandbox's cgroup name: BOT.ID, 16 hex digits, and the NUL */
#define CG_NAME_MAX (BOT_NAME_MAX + 18)

void cgroup_init(const char *cfg);
void cgroup_unlock(void);
void cgroup_stop(void);
enum cg_mode cgroup_mode(void);
const char *cgroup_why(void);
const char *cgroup_where(void);
uint64_t cgroup_default_memory(void);
int cgroup_sandbox_make(const char *name, uint64_t memory, uint64_t pids, char *why, size_t len);
int cgroup_sandbox_enter(const char *name, pid_t pid, char *why, size_t len);
void cgroup_sandbox_kill(const char *name);
int cgroup_sandbox_remove(const char *name);
bool cgroup_sandbox_name(const char *name);
int cgroup_sweep(bool (*owned)(const char *name), void (*gone)(const char *name));
void cgroup_sandbox_usage(const char *name, long long *memory, long long *pids);

#endif

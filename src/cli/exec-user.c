/* SPDX-License-Identifier: MIT */
/*
 * agentfs exec: becoming the bot's user for good inside the sandbox
 * (agentfs-enter) or, for danger-full-access, outside, and the ids it is
 * given on agentfs-enter's command line. Who the user is comes from the
 * plan (exec-bwrap.c): nothing here loads an NSS module.
 */
#include "src/common/agentfs.h"
#include "fusefs/fusefs.h"
#include "src/cli/exec.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

/*
 * Drop whatever capability is left (bwrap hands its own down as inheritable
 * and ambient ones; securebits could keep others) and check none is.
 */
static bool caps_left(void)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct c[2] = {{0, 0, 0}, {0, 0, 0}};

	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
		return true;
	if (syscall(SYS_capset, &h, c) != 0 || syscall(SYS_capget, &h, c) != 0)
		return true;
	return (c[0].effective | c[0].permitted | c[0].inheritable | c[1].effective |
		c[1].permitted | c[1].inheritable) != 0;
}

/*
 * Become id for good, from root (fs_become, the one identity switch). Any
 * failure ends here: nothing runs as the wrong user, and nothing can win
 * root back (no_new_privs: a setuid program it runs gains nothing).
 */
void exec_become(const struct ids *id)
{
	int r = fs_become(id->uid, id->gid, id->groups, id->ngroups);

	if (r != 0)
		die("could not become uid %u (gid %u, %d groups): %s: refusing to run",
		    (unsigned)id->uid, (unsigned)id->gid, id->ngroups, strerror(-r));
	if (id->uid != 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		die("cannot set no_new_privs: %s", strerror(errno));
	if (id->uid != 0 && caps_left())
		die("capabilities survived the switch to uid %u: refusing to run",
		    (unsigned)id->uid);
}

/*
 * In a user namespace an operator's bwrap made, agentfs-enter already is the
 * bot's user (the operator): it checks so, and takes the rest of
 * exec_become: no_new_privs, no capability.
 */
void exec_stay(uid_t uid)
{
	if (getuid() != uid || geteuid() != uid)
		die("running as uid %u, not %u: refusing to run", (unsigned)geteuid(),
		    (unsigned)uid);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		die("cannot set no_new_privs: %s", strerror(errno));
	if (caps_left())
		die("capabilities survived in the sandbox of uid %u: refusing to run",
		    (unsigned)uid);
}

/* "UID:GID:G1,G2,...", what the in-sandbox step (exec_as) is given. */
char *exec_ids_format(const struct ids *id)
{
	char *s, *t;
	int i;

	if (asprintf(&s, "%u:%u:", (unsigned)id->uid, (unsigned)id->gid) < 0)
		die("out of memory");
	for (i = 0; i < id->ngroups; i++) {
		if (asprintf(&t, "%s%s%u", s, i > 0 ? "," : "", (unsigned)id->groups[i]) < 0)
			die("out of memory");
		free(s);
		s = t;
	}
	return s;
}

/*
 * One id: decimal digits only (strtoul would take a sign and spaces), and
 * within an id_t without being -1, the kernel's "leave unchanged": a number
 * that narrowed to another id would run as that one.
 */
static bool parse_id(const char *s, char **end, uint32_t *out)
{
	unsigned long v;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoul(s, end, 10);
	if (errno != 0 || v >= UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

/*
 * "UID:GID:G1,G2,...": the ids to become; "=UID": the ids to stay (in an
 * operator's user namespace), ngroups -1.
 */
bool exec_ids_parse(const char *s, struct ids *id)
{
	uint32_t v;
	char *end;

	if (*s == '=') {
		if (!parse_id(s + 1, &end, &v) || *end != '\0')
			return false;
		id->uid = v;
		id->gid = (gid_t)-1;
		id->ngroups = -1;
		return true;
	}
	if (!parse_id(s, &end, &v) || *end != ':')
		return false;
	id->uid = v;
	if (!parse_id(end + 1, &end, &v) || *end != ':')
		return false;
	id->gid = v;
	s = end + 1;
	for (id->ngroups = 0; *s != '\0' && id->ngroups < MAX_GROUPS; s = end + (*end == ',')) {
		if (!parse_id(s, &end, &v) || (*end != ',' && *end != '\0'))
			return false;
		id->groups[id->ngroups++] = v;
	}
	return *s == '\0';
}

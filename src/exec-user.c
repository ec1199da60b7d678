/* SPDX-License-Identifier: MIT */
/*
 * agentfs exec: who the bot's user is, and becoming that user for good
 * inside the sandbox (exec --as) or, for danger-full-access, outside.
 */
#include "src/agentfs.h"
#include "src/exec.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

/*
 * The ids of uid from the host's user database (a uid without a name gets
 * its own number as group), and, as su and sudo do, its HOME, USER and
 * LOGNAME in our environment, which the command inherits.
 */
void exec_user_ids(uid_t uid, struct ids *id)
{
	struct passwd pw, *pwp = NULL;
	char buf[16384];

	id->uid = uid;
	id->gid = (gid_t)uid;
	id->groups[0] = id->gid;
	id->ngroups = 1;
	if (getpwuid_r(uid, &pw, buf, sizeof buf, &pwp) != 0 || pwp == NULL)
		return;
	id->gid = pw.pw_gid;
	id->ngroups = MAX_GROUPS;
	if (getgrouplist(pw.pw_name, pw.pw_gid, id->groups, &id->ngroups) < 0)
		die("%s is in more than %d groups", pw.pw_name, MAX_GROUPS);
	if (setenv("HOME", pw.pw_dir, 1) != 0 || setenv("USER", pw.pw_name, 1) != 0 ||
	    setenv("LOGNAME", pw.pw_name, 1) != 0)
		die("out of memory");
}

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
 * Become id for good, from root. Any failure ends here: nothing runs as
 * the wrong user, and nothing can win root back (no_new_privs: a setuid
 * program it runs gains nothing).
 */
void exec_become(const struct ids *id)
{
	uid_t r, e, s;
	gid_t rg, eg, sg;

	if (setgroups((size_t)id->ngroups, id->groups) != 0)
		die("cannot set the groups of uid %u: %s", (unsigned)id->uid, strerror(errno));
	if (setresgid(id->gid, id->gid, id->gid) != 0)
		die("cannot become group %u: %s", (unsigned)id->gid, strerror(errno));
	if (setresuid(id->uid, id->uid, id->uid) != 0)
		die("cannot become uid %u: %s", (unsigned)id->uid, strerror(errno));
	if (getresuid(&r, &e, &s) != 0 || r != id->uid || e != id->uid || s != id->uid ||
	    getresgid(&rg, &eg, &sg) != 0 || rg != id->gid || eg != id->gid || sg != id->gid ||
	    (id->uid != 0 && setuid(0) == 0))
		die("could not drop root for uid %u: refusing to run", (unsigned)id->uid);
	if (id->uid != 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		die("cannot set no_new_privs: %s", strerror(errno));
	if (id->uid != 0 && caps_left())
		die("capabilities survived the switch to uid %u: refusing to run",
		    (unsigned)id->uid);
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

bool exec_ids_parse(const char *s, struct ids *id)
{
	unsigned long v;
	char *end;

	v = strtoul(s, &end, 10);
	if (end == s || *end != ':')
		return false;
	id->uid = (uid_t)v;
	s = end + 1;
	v = strtoul(s, &end, 10);
	if (end == s || *end != ':')
		return false;
	id->gid = (gid_t)v;
	s = end + 1;
	for (id->ngroups = 0; *s != '\0' && id->ngroups < MAX_GROUPS; s = end + (*end == ',')) {
		v = strtoul(s, &end, 10);
		if (end == s || (*end != ',' && *end != '\0'))
			return false;
		id->groups[id->ngroups++] = (gid_t)v;
	}
	return *s == '\0';
}

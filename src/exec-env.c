/* SPDX-License-Identifier: MIT */
/*
 * agentfs exec: what it runs, and with which environment: bwrap and setsid
 * found in PATH only where no bot could have written them, and the loader
 * variables kept from bwrap and agentfs exec --as and given back to the
 * command.
 */
#include "src/agentfs.h"
#include "src/exec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#define FUSE_MAGIC 0x65735546 /* statfs f_type of every FUSE mount, a bot's roots among them */
#define MSDOS_MAGIC 0x4d44
#define EXFAT_MAGIC 0x2011BAB0
#define NTFS3_MAGIC 0x7366746e
#define NTFS_MAGIC 0x5346544e

/*
 * bwrap runs as root outside the sandbox, and setsid as root inside it
 * before the switch to the bot's user: a copy a bot wrote (a PATH entry in a
 * root, `.` in PATH) would run its code as root. So the program agentfs
 * finds must be one no bot could have written: the file and every folder
 * above it (symbolic links resolved) belong to root or the caller and no
 * one else may write them (a sticky folder's owned children excepted), and
 * it is on no FUSE file system. The resolved path is what is run.
 */
static char *trusted_prog(const char *found)
{
	char *real = realpath(found, NULL), *walk, *cut;
	struct statfs sfs;
	struct stat st;
	bool child_ok = true;

	if (real == NULL || (walk = strdup(real)) == NULL)
		die("cannot resolve %s: %s", found, strerror(errno));
	if (statfs(real, &sfs) != 0)
		die("cannot check %s: %s", real, strerror(errno));
	/* FUSE (a bot's root), and file systems whose owners are a mount option */
	if (sfs.f_type == FUSE_MAGIC || sfs.f_type == MSDOS_MAGIC || sfs.f_type == EXFAT_MAGIC ||
	    sfs.f_type == NTFS3_MAGIC || sfs.f_type == NTFS_MAGIC)
		die("%s is on a file system whose owners prove nothing (FUSE, FAT, exFAT, NTFS): "
		    "agentfs will not run it as root",
		    real);
	/* the file, then each folder above it: WALK is cut one name shorter each time */
	for (;;) {
		const char *at = *walk ? walk : "/";

		if (stat(at, &st) != 0)
			die("cannot check %s: %s", at, strerror(errno));
		if ((st.st_uid != 0 && st.st_uid != geteuid()) ||
		    ((st.st_mode & (S_IWGRP | S_IWOTH)) &&
		     !(S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX) && child_ok)))
			die("%s is not trusted: agentfs runs it as root, so it and every folder "
			    "above it must belong to root and be writable by no one else "
			    "(%s: owner uid %u, mode %04o)",
			    found, at, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
		child_ok = st.st_uid == 0 || st.st_uid == geteuid();
		if (!*walk)
			break;
		cut = strrchr(walk, '/');
		*cut = '\0';
	}
	free(walk);
	return real;
}

char *exec_find_in_path(const char *prog)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL, *full;

	if (path == NULL || *path == '\0')
		path = "/usr/local/bin:/usr/bin:/bin";
	copy = strdup(path);
	if (copy == NULL)
		die("out of memory");
	for (dir = strtok_r(copy, ":", &save); dir != NULL; dir = strtok_r(NULL, ":", &save)) {
		if (asprintf(&full, "%s/%s", dir, prog) < 0)
			die("out of memory");
		if (access(full, X_OK) == 0) {
			char *real = trusted_prog(full);

			free(full);
			free(copy);
			return real;
		}
		free(full);
	}
	free(copy);
	return NULL;
}

/*
 * The loader's and glibc's variables may name libraries, modules or files
 * inside a bot's roots (LD_PRELOAD, GCONV_PATH, LD_PROFILE's output...):
 * bwrap runs as root and exec --as with CAP_SETUID, so both start without
 * them, and exec --as gives them back to the command once it is the bot's
 * user.
 */
static const char *const loader_vars[] = {
	"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT",	   "LD_PROFILE",     "LD_DEBUG_OUTPUT",
	"GCONV_PATH", "LOCPATH",	 "GLIBC_TUNABLES", "MALLOC_TRACE",
};
#define SAVED_PREFIX "AGENTFS_SAVED_"

void exec_loader_vars_hold(struct argv_buf *a)
{
	char name[64];
	const char *v;
	size_t i;

	for (i = 0; i < sizeof loader_vars / sizeof loader_vars[0]; i++) {
		snprintf(name, sizeof name, SAVED_PREFIX "%s", loader_vars[i]);
		if ((v = getenv(loader_vars[i])) != NULL) {
			exec_arg(a, "--setenv");
			exec_arg(a, name);
			exec_arg(a, v);
		}
		exec_arg(a, "--unsetenv");
		exec_arg(a, loader_vars[i]);
	}
}

void exec_loader_vars_restore(void)
{
	char name[64];
	const char *v;
	size_t i;

	for (i = 0; i < sizeof loader_vars / sizeof loader_vars[0]; i++) {
		snprintf(name, sizeof name, SAVED_PREFIX "%s", loader_vars[i]);
		if ((v = getenv(name)) != NULL && setenv(loader_vars[i], v, 1) != 0)
			die("out of memory");
		unsetenv(name);
	}
}

/* Is there a file named prog in a PATH folder? */
bool exec_in_path(const char *prog)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL, *full;
	struct stat st;
	bool found = false;

	copy = strdup(path != NULL && *path != '\0' ? path : "/usr/local/bin:/usr/bin:/bin");
	if (copy == NULL)
		die("out of memory");
	for (dir = strtok_r(copy, ":", &save); dir != NULL && !found;
	     dir = strtok_r(NULL, ":", &save)) {
		if (asprintf(&full, "%s/%s", dir, prog) < 0)
			die("out of memory");
		found = stat(full, &st) == 0 && !S_ISDIR(st.st_mode);
		free(full);
	}
	free(copy);
	return found;
}

/* For bwrap itself, which runs as root: none of the loader variables */
void exec_loader_vars_clear(void)
{
	size_t i;

	for (i = 0; i < sizeof loader_vars / sizeof loader_vars[0]; i++)
		unsetenv(loader_vars[i]);
}

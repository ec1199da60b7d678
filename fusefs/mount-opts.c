/* SPDX-License-Identifier: MIT */
/* A mount's -o options (fs_mount_params.options) and the kernel flags they make. */
#include "fusefs/fs-int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

/* The kernel mount's flags (as mount_setattr's MOUNT_ATTR_*) for options o. */
unsigned mount_attrs(const struct mount_opts *o, bool readonly)
{
	return (o->suid ? 0 : MOUNT_ATTR_NOSUID) | (o->dev ? 0 : MOUNT_ATTR_NODEV) |
	       (o->noexec ? MOUNT_ATTR_NOEXEC : 0) | (readonly ? MOUNT_ATTR_RDONLY : 0) |
	       (o->noatime ? MOUNT_ATTR_NOATIME : MOUNT_ATTR_RELATIME) |
	       (o->nodiratime ? MOUNT_ATTR_NODIRATIME : 0);
}

/* The same flags for mount(2). */
unsigned long mount_ms_flags(unsigned attrs)
{
	return (attrs & MOUNT_ATTR_NOSUID ? MS_NOSUID : 0) |
	       (attrs & MOUNT_ATTR_NODEV ? MS_NODEV : 0) |
	       (attrs & MOUNT_ATTR_NOEXEC ? MS_NOEXEC : 0) |
	       (attrs & MOUNT_ATTR_RDONLY ? MS_RDONLY : 0) |
	       ((attrs & MOUNT_ATTR__ATIME) == MOUNT_ATTR_NOATIME ? MS_NOATIME : MS_RELATIME) |
	       (attrs & MOUNT_ATTR_NODIRATIME ? MS_NODIRATIME : 0);
}

int mount_parse_options(const char *s, struct mount_opts *o, struct fs_error *err)
{
	char *copy, *tok, *save = NULL, *end;
	int res = 0;

	if (s == NULL || *s == '\0')
		return 0;
	copy = strdup(s);
	if (copy == NULL)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		if (strcmp(tok, "suid") == 0)
			o->suid = true;
		else if (strcmp(tok, "nosuid") == 0)
			o->suid = false;
		else if (strcmp(tok, "dev") == 0)
			o->dev = true;
		else if (strcmp(tok, "nodev") == 0)
			o->dev = false;
		else if (strcmp(tok, "exec") == 0)
			o->noexec = false;
		else if (strcmp(tok, "noexec") == 0)
			o->noexec = true;
		else if (strcmp(tok, "noatime") == 0)
			o->noatime = true;
		else if (strcmp(tok, "relatime") == 0)
			o->noatime = false;
		else if (strcmp(tok, "nodiratime") == 0)
			o->nodiratime = true;
		else if (strcmp(tok, "nonempty") == 0)
			o->nonempty = true;
		else if (strcmp(tok, "debug") == 0)
			o->debug = true;
		else if (strcmp(tok, "ro") == 0)
			o->readonly = true;
		else if (strcmp(tok, "noguard") == 0)
			o->noguard = true;
		else if (strcmp(tok, "nopassthrough") == 0)
			o->nopassthrough = true;
		else if (strcmp(tok, "uring") == 0)
			o->uring = true;
		else if (strcmp(tok, "rw") == 0 || strcmp(tok, "allow_other") == 0 ||
			 strcmp(tok, "default_permissions") == 0 ||
			 strcmp(tok, "auto_unmount") == 0)
			; /* always on, the default, or the caller's (auto_unmount) */
		else if (strncmp(tok, "fsname=", 7) == 0 && strlen(tok + 7) < sizeof o->fsname)
			strcpy(o->fsname, tok + 7);
		else if (strncmp(tok, "poll=", 5) == 0) {
			errno = 0;
			long v = strtol(tok + 5, &end, 10);
			if (errno != 0 || *end != '\0' || end == tok + 5 || v < 0 || v > 10000) {
				fs_seterr(err, EINVAL,
					  "bad -o poll=%s: give microseconds, 0 (never) to 10000",
					  tok + 5);
				res = -EINVAL;
				break;
			}
			o->poll_us = v == 0 ? -1 : (int)v;
		} else if (strncmp(tok, "timeout=", 8) == 0) {
			errno = 0;
			o->timeout = strtod(tok + 8, &end);
			if (errno != 0 || *end != '\0' || end == tok + 8 || o->timeout < 0 ||
			    o->timeout > 3600) {
				fs_seterr(err, EINVAL, "bad -o timeout=%s: give seconds, 0 to 3600",
					  tok + 8);
				res = -EINVAL;
				break;
			}
		} else {
			fs_seterr(err, EINVAL, "unknown mount option '%s'", tok);
			res = -EINVAL;
			break;
		}
	}
	free(copy);
	return res;
}

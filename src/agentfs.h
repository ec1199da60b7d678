/* agentfs: the command-line client and its commands. */
#ifndef AGENTFS_AGENTFS_H
#define AGENTFS_AGENTFS_H

#include <stdbool.h>

/* agentfs.c */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void die_usage(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));
void usage_error(const char *cmd, const char *arg, int opt) __attribute__((noreturn));

/* cmd-mount.c */
int cmd_mount(int argc, char **argv);
int cmd_umount(int argc, char **argv);

#endif

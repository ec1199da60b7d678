/* SPDX-License-Identifier: MIT */
/*
 * tests/keyring: the kernel keyring calls exec-keys.sh makes, without
 * keyutils (not installed by .ci/setup). One call per run; it prints what
 * the kernel answered: a key id, a payload, a description, or the errno's
 * name (EPERM, ENOKEY...), and exits 0 either way (1 for a usage error).
 *
 *   keyring add DESC DATA KEYRING [PERM]  add_key("user", DESC, DATA), PERM in hex
 *   keyring read ID                       the payload
 *   keyring describe ID                   the description
 *   keyring search KEYRING DESC           the id of the "user" key DESC in KEYRING's tree
 *   keyring link ID KEYRING               link ID into KEYRING
 *   keyring unlink ID KEYRING
 *   keyring session -- CMD [ARGS...]      run CMD in a new anonymous session keyring
 *
 * KEYRING and ID: a number, or @s, @u, @us, @p, @t.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/keyctl.h>
#include <sys/syscall.h>

static long key_id(const char *s)
{
	static const struct {
		const char *name;
		long id;
	} special[] = {
		{"@s", KEY_SPEC_SESSION_KEYRING}, {"@u", KEY_SPEC_USER_KEYRING},
		{"@us", KEY_SPEC_USER_SESSION_KEYRING}, {"@p", KEY_SPEC_PROCESS_KEYRING},
		{"@t", KEY_SPEC_THREAD_KEYRING},
	};
	char *end;
	long v;
	size_t i;

	for (i = 0; i < sizeof special / sizeof special[0]; i++)
		if (strcmp(s, special[i].name) == 0)
			return special[i].id;
	v = strtol(s, &end, 0);
	if (end == s || *end != '\0') {
		fprintf(stderr, "keyring: bad key %s\n", s);
		exit(1);
	}
	return v;
}

static int answer(long r)
{
	if (r < 0)
		printf("%s\n", strerrorname_np(errno));
	else
		printf("%ld\n", r);
	return 0;
}

int main(int argc, char **argv)
{
	char buf[4096];
	long r;

	if (argc >= 5 && strcmp(argv[1], "add") == 0) {
		r = syscall(SYS_add_key, "user", argv[2], argv[3], strlen(argv[3]),
			    key_id(argv[4]));
		if (r >= 0 && argc >= 6 &&
		    syscall(SYS_keyctl, KEYCTL_SETPERM, r, strtoul(argv[5], NULL, 16)) != 0)
			r = -1;
		return answer(r);
	}
	if (argc == 3 && (strcmp(argv[1], "read") == 0 || strcmp(argv[1], "describe") == 0)) {
		r = syscall(SYS_keyctl, strcmp(argv[1], "read") == 0 ? KEYCTL_READ : KEYCTL_DESCRIBE,
			    key_id(argv[2]), buf, sizeof buf - 1);
		if (r < 0)
			return answer(r);
		buf[r < (long)sizeof buf ? r : (long)sizeof buf - 1] = '\0';
		printf("%s\n", buf);
		return 0;
	}
	if (argc == 4 && strcmp(argv[1], "search") == 0)
		return answer(syscall(SYS_keyctl, KEYCTL_SEARCH, key_id(argv[2]), "user", argv[3],
				      0));
	if (argc == 4 && (strcmp(argv[1], "link") == 0 || strcmp(argv[1], "unlink") == 0))
		return answer(syscall(SYS_keyctl,
				      strcmp(argv[1], "link") == 0 ? KEYCTL_LINK : KEYCTL_UNLINK,
				      key_id(argv[2]), key_id(argv[3])));
	if (argc >= 4 && strcmp(argv[1], "session") == 0 && strcmp(argv[2], "--") == 0) {
		if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) < 0) {
			perror("keyring: join a session keyring");
			return 1;
		}
		execvp(argv[3], argv + 3);
		perror(argv[3]);
		return 127;
	}
	fprintf(stderr, "usage: keyring add DESC DATA KEYRING [PERM] | read ID | describe ID |\n"
			"       search KEYRING DESC | link ID KEYRING | unlink ID KEYRING |\n"
			"       session -- CMD [ARGS...]\n");
	return 1;
}

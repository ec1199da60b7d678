/* SPDX-License-Identifier: MIT */
/*
 * tests/fault-inject.so: an LD_PRELOAD library that makes calls fail, for
 * tests/daemon-failclosed.sh. Set in the environment of the process:
 *
 *   FAULT_SETGROUPS_GID=G  every setgroups (the libc call and the raw
 *                          syscall) whose list holds gid G fails with EPERM
 *   FAULT_ALLOC=1          armed by SIGUSR2 with the number N written to
 *                          FAULT_ALLOC_ARM (a file): the Nth malloc, calloc,
 *                          realloc, strdup or asprintf called by the program
 *                          itself (not by a library) after that fails with
 *                          ENOMEM, once
 *   FAULT_ALLOC_LIBS=WORD  count the calls from the libraries whose file
 *                          name holds WORD too (say libcjson)
 *   FAULT_PIDFD=1          every pidfd_open (the raw syscall) fails with
 *                          EMFILE, as it does for a process out of
 *                          descriptors
 *   FAULT_MOUNTINFO=1      every open of /proc/self/mountinfo (open, open64,
 *                          fopen, fopen64) fails with EMFILE, as it does
 *                          for a process out of descriptors
 *   FAULT_OPEN_NAME=NAME   every open of a path whose last parts are NAME
 *                          ("sandboxes.json", "mnt/e/0": the path is NAME or
 *                          ends with "/NAME"; open, open64, openat, openat64, fopen,
 *                          fopen64) fails with EMFILE; with
 *                          FAULT_OPEN_WHILE=FILE, only while FILE exists
 *   FAULT_OPEN_HOLD=NAME   with FAULT_OPEN_WHILE=FILE: an open of a path whose
 *                          last parts are NAME waits while FILE exists, then
 *                          goes on (a step caught in the middle)
 *   FAULT_LOG=FILE         a line is appended for each failure made (and
 *                          each open held)
 *
 * Only calls from the program's own code (and the libraries named) are
 * counted, so the others (libevent, libc) run as always and the failure
 * lands in the code under test.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <link.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/types.h>

static gid_t bad_gid;
static int bad_gid_set;
/* The executable code of the program and of the libraries named */
static struct {
	uintptr_t lo, hi;
} code[8];
static int ncode;
static atomic_long alloc_left; /* > 0: counting down to the call that fails */

static void note(const char *what)
{
	const char *path = getenv("FAULT_LOG");
	char line[128];
	int fd, n;

	if (path == NULL)
		return;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	n = snprintf(line, sizeof line, "%d %s\n", (int)getpid(), what);
	if (write(fd, line, (size_t)n) < 0)
		n = 0;
	close(fd);
}

static int code_ranges(struct dl_phdr_info *info, size_t size, void *arg)
{
	const char *libs = getenv("FAULT_ALLOC_LIBS");
	int *nth = arg, i;

	(void)size;
	/* the first object is the program */
	if ((*nth)++ > 0 && (libs == NULL || *libs == '\0' || info->dlpi_name == NULL ||
			     strstr(info->dlpi_name, libs) == NULL))
		return 0;
	for (i = 0; i < info->dlpi_phnum && ncode < 8; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			code[ncode].lo = info->dlpi_addr + ph->p_vaddr;
			code[ncode].hi = code[ncode].lo + ph->p_memsz;
			ncode++;
		}
	}
	return 0;
}

/* SIGUSR2: arm the allocation fault with the count in FAULT_ALLOC_ARM. */
static void arm(int sig)
{
	const char *path = getenv("FAULT_ALLOC_ARM");
	char buf[32] = {0};
	int fd;

	(void)sig;
	if (path == NULL || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return;
	if (read(fd, buf, sizeof buf - 1) > 0)
		atomic_store(&alloc_left, strtol(buf, NULL, 10));
	close(fd);
}

__attribute__((constructor)) static void fault_init(void)
{
	const char *g = getenv("FAULT_SETGROUPS_GID");

	if (g != NULL && *g != '\0') {
		bad_gid = (gid_t)strtoul(g, NULL, 10);
		bad_gid_set = 1;
	}
	if (getenv("FAULT_ALLOC") != NULL) {
		int nth = 0;

		dl_iterate_phdr(code_ranges, &nth);
		signal(SIGUSR2, arm);
	}
}

static int groups_hit(size_t n, const gid_t *list)
{
	size_t i;

	if (!bad_gid_set || list == NULL)
		return 0;
	for (i = 0; i < n; i++)
		if (list[i] == bad_gid) {
			note("setgroups");
			return 1;
		}
	return 0;
}

int setgroups(size_t n, const gid_t *list)
{
	static int (*real)(size_t, const gid_t *);

	if (groups_hit(n, list)) {
		errno = EPERM;
		return -1;
	}
	if (real == NULL)
		real = (int (*)(size_t, const gid_t *))dlsym(RTLD_NEXT, "setgroups");
	return real(n, list);
}

long syscall(long nr, ...)
{
	static long (*real)(long, ...);
	long a[6];
	va_list ap;
	int i;

	va_start(ap, nr);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (nr == SYS_setgroups && groups_hit((size_t)a[0], (const gid_t *)a[1])) {
		errno = EPERM;
		return -1;
	}
#ifdef SYS_pidfd_open
	if (nr == SYS_pidfd_open && getenv("FAULT_PIDFD") != NULL) {
		note("pidfd_open");
		errno = EMFILE;
		return -1;
	}
#endif
	if (real == NULL)
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* Should this allocation, made from ret, fail? */
static int alloc_fails(void *ret)
{
	uintptr_t r = (uintptr_t)ret;
	int i;

	if (atomic_load(&alloc_left) <= 0)
		return 0;
	for (i = 0; i < ncode; i++)
		if (r >= code[i].lo && r < code[i].hi)
			break;
	if (i == ncode)
		return 0;
	if (atomic_fetch_sub(&alloc_left, 1) != 1)
		return 0;
	note("alloc");
	errno = ENOMEM;
	return 1;
}

/* The real allocators, found without allocating (glibc exports these names). */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

void *malloc(size_t n)
{
	if (alloc_fails(__builtin_return_address(0)))
		return NULL;
	return __libc_malloc(n);
}

void *calloc(size_t k, size_t n)
{
	if (alloc_fails(__builtin_return_address(0)))
		return NULL;
	return __libc_calloc(k, n);
}

void *realloc(void *p, size_t n)
{
	if (alloc_fails(__builtin_return_address(0)))
		return NULL;
	return __libc_realloc(p, n);
}

char *strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p;

	if (alloc_fails(__builtin_return_address(0)))
		return NULL;
	p = __libc_malloc(n);
	if (p != NULL)
		memcpy(p, s, n);
	return p;
}

int asprintf(char **out, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (alloc_fails(__builtin_return_address(0)))
		return -1;
	va_start(ap, fmt);
	n = vasprintf(out, fmt, ap);
	va_end(ap);
	return n;
}

/* Is path NAME, or does it end with "/NAME"? */
static int path_ends(const char *path, const char *name)
{
	size_t n = name != NULL ? strlen(name) : 0, len = strlen(path);

	return n > 0 && len >= n && strcmp(path + len - n, name) == 0 &&
	       (len == n || path[len - n - 1] == '/');
}

/* FAULT_OPEN_HOLD: wait here while FAULT_OPEN_WHILE exists */
static void open_hold(const char *path)
{
	const char *file = getenv("FAULT_OPEN_WHILE");

	if (file == NULL || !path_ends(path, getenv("FAULT_OPEN_HOLD")) || access(file, F_OK) != 0)
		return;
	note("hold");
	while (access(file, F_OK) == 0)
		usleep(50 * 1000);
}

/* FAULT_MOUNTINFO, FAULT_OPEN_NAME: is the open of path to be refused? */
static int open_fails(const char *path)
{
	if (path == NULL)
		return 0;
	open_hold(path);
	if (path_ends(path, getenv("FAULT_OPEN_NAME")) &&
	    (getenv("FAULT_OPEN_WHILE") == NULL || access(getenv("FAULT_OPEN_WHILE"), F_OK) == 0)) {
		note("open");
		errno = EMFILE;
		return 1;
	}
	if (getenv("FAULT_MOUNTINFO") == NULL || strcmp(path, "/proc/self/mountinfo") != 0)
		return 0;
	note("mountinfo");
	errno = EMFILE;
	return 1;
}

/* The mode that follows an open's flags, if they say one does; else 0 */
#define OPEN_MODE(flags, mode)                                 \
	do {                                                   \
		va_list ap_;                                   \
		if ((flags) & (O_CREAT | O_TMPFILE)) {         \
			va_start(ap_, flags);                  \
			(mode) = va_arg(ap_, mode_t);          \
			va_end(ap_);                           \
		}                                              \
	} while (0)
#define NO_DIRFD INT_MIN /* open, open64: no dirfd argument */

/* An interposed open: the fault, or the real call of that name. */
static int open_real(const char *name, int dirfd, const char *path, int flags, mode_t mode)
{
	void *real = dlsym(RTLD_NEXT, name);

	if (open_fails(path))
		return -1;
	if (dirfd == NO_DIRFD)
		return ((int (*)(const char *, int, ...))real)(path, flags, mode);
	return ((int (*)(int, const char *, int, ...))real)(dirfd, path, flags, mode);
}

int open(const char *path, int flags, ...)
{
	mode_t mode = 0;

	OPEN_MODE(flags, mode);
	return open_real("open", NO_DIRFD, path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
	mode_t mode = 0;

	OPEN_MODE(flags, mode);
	return open_real("open64", NO_DIRFD, path, flags, mode);
}

int openat(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;

	OPEN_MODE(flags, mode);
	return open_real("openat", dirfd, path, flags, mode);
}

int openat64(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;

	OPEN_MODE(flags, mode);
	return open_real("openat64", dirfd, path, flags, mode);
}

static FILE *fopen_real(const char *name, const char *path, const char *how)
{
	if (open_fails(path))
		return NULL;
	return ((FILE * (*)(const char *, const char *)) dlsym(RTLD_NEXT, name))(path, how);
}

FILE *fopen(const char *path, const char *how)
{
	return fopen_real("fopen", path, how);
}

FILE *fopen64(const char *path, const char *how)
{
	return fopen_real("fopen64", path, how);
}

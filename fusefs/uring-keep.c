/* SPDX-License-Identifier: MIT */
/*
 * What lets an io_uring mount (uring.c) outlive its server, as the rest of
 * a mount does (keep.c, restore.c; doc/URING.md 3a).
 *
 * The kernel keeps the *addresses* of each entry's buffers, and copies
 * requests and replies there in whichever process commits. So the arena
 * is a memfd kept with the mount (m<key>.ring) and mapped at the same
 * address by every server: each process that may serve such a mount
 * reserves one window of address space (URING_WINDOW_BASE, far from where
 * the kernel and ASan place mappings: nothing else lands there) at its
 * first -o uring mount or takeover, and gives each mount its place in it,
 * written in the table (ring_addr).
 *
 * A clean handover (uring_handover) leaves no entry free: an entry free
 * when the process ends is dropped by the kernel, and a request it gives
 * one in the meantime fails with ECANCELED. So each ring thread, pinned to
 * its CPU, closes one file of the mount per free entry, opened beforehand
 * through the mount (folders would not do: agentfs refuses OPENDIR, so
 * the kernel sends no RELEASEDIR). Opens reply FOPEN_NOFLUSH, so a close
 * sends only the RELEASE, a background request made on that CPU, which
 * nobody waits for; it takes the free entry, and the next server answers
 * it with every other request held. The file is one the kernel holds,
 * opened by the kernel's own handle for it (open_by_handle_at).
 *
 * The next server maps the arena (uring_adopt), takes every entry over by
 * its record (uring.c), and pokes each queue (uring_poke): a GETATTR of
 * the mount's root from a thread on that CPU, so that requests that waited
 * in the queue while no server ran are fetched (a new REGISTER does not).
 * The root is opened by its path and checked by its mount id, as
 * mount-kernel.c's mount_abort does: no descriptor of the mount itself is
 * kept (it would keep it busy at a stop).
 */
#include "fusefs/fs-int.h"
#include "fusefs/uring.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>

#ifdef __SANITIZE_THREAD__
/*
 * ThreadSanitizer's layout keeps 32 TiB for itself (its mmap fails there:
 * every -o uring mount fell back to /dev/fuse); its low application range
 * ends at 512 GiB, and nothing of a PIE process lands below it
 */
#define URING_WINDOW_BASE 0x4000000000ull /* 256 GiB */
#define URING_WINDOW_LEN 0x4000000000ull  /* 256 GiB: 16,384 mounts of 16 MiB */
#else
#define URING_WINDOW_BASE 0x200000000000ull /* 32 TiB: above ASan's shadow, below its heap */
#define URING_WINDOW_LEN 0x10000000000ull   /* 1 TiB: 65,536 mounts of 16 MiB */
#endif
#define URING_ALIGN (2ull << 20)

struct range {
	uint64_t addr, len;
};

static pthread_mutex_t wlock = PTHREAD_MUTEX_INITIALIZER;
static bool window;	     /* [wlock] reserved */
static struct range *used;   /* [wlock] arenas placed, by address */
static size_t nused;

/* [wlock] The window every server maps arenas in, reserved once: true if it is */
static bool window_reserve(void)
{
	void *p;

	if (!window) {
		p = mmap((void *)(uintptr_t)URING_WINDOW_BASE, URING_WINDOW_LEN, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
		if (p == (void *)(uintptr_t)URING_WINDOW_BASE)
			window = true;
		else if (p != MAP_FAILED)
			munmap(p, URING_WINDOW_LEN); /* a kernel that took it as a hint */
	}
	return window;
}

/* [wlock] where [addr, addr + len) would go in used, or -1: not in the window, or not free */
static ssize_t range_at(uint64_t addr, uint64_t len)
{
	size_t k;

	if (addr < URING_WINDOW_BASE || len > URING_WINDOW_LEN ||
	    addr - URING_WINDOW_BASE > URING_WINDOW_LEN - len)
		return -1;
	for (k = 0; k < nused && used[k].addr < addr + len; k++)
		if (used[k].addr + used[k].len > addr)
			return -1;
	return (ssize_t)k;
}

/*
 * Map memfd (len bytes) in the window: at WANT (a takeover: the place the
 * last server gave it), or at the first free place. NULL: no room.
 */
char *uring_arena_place(size_t len, int memfd, uint64_t want)
{
	uint64_t addr = want != 0 ? want : URING_WINDOW_BASE;
	struct range *v;
	ssize_t at = -1;
	size_t k;
	void *p = NULL;

	pthread_mutex_lock(&wlock);
	if (!window_reserve())
		goto out;
	if (want != 0)
		at = range_at(addr, len);
	for (k = 0; want == 0 && at < 0 && k <= nused; k++) {
		if ((at = range_at(addr, len)) >= 0 || k == nused)
			break;
		if (used[k].addr + used[k].len > addr)
			addr = (used[k].addr + used[k].len + URING_ALIGN - 1) & ~(URING_ALIGN - 1);
	}
	if (at < 0 || (v = realloc(used, (nused + 1) * sizeof *v)) == NULL)
		goto out;
	used = v;
	p = mmap((void *)(uintptr_t)addr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
		 memfd, 0);
	if (p == MAP_FAILED) {
		p = NULL;
		goto out;
	}
	memmove(&used[at + 1], &used[at], (nused - (size_t)at) * sizeof *used);
	used[at].addr = addr;
	used[at].len = len;
	nused++;
out:
	pthread_mutex_unlock(&wlock);
	return p;
}

/* The arena at addr is no longer used: its place is reserved again */
void uring_arena_release(char *addr, size_t len)
{
	uint64_t a = (uint64_t)(uintptr_t)addr;
	size_t k;

	pthread_mutex_lock(&wlock);
	for (k = 0; k < nused && used[k].addr != a; k++)
		;
	if (k < nused) {
		mmap(addr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
		     -1, 0);
		memmove(&used[k], &used[k + 1], (nused - k - 1) * sizeof *used);
		nused--;
	}
	pthread_mutex_unlock(&wlock);
}

/*
 * A takeover of a mount whose table says it was served over io_uring:
 * its arena (MEMFD, the handed m<key>.ring, taken) mapped where the last
 * server had it, before INIT is replayed. NULL, or why it cannot be.
 */
const char *uring_adopt(struct fs_mount *m, int memfd)
{
	const struct table_hdr *h = m->tab.hdr;
	struct stat st;
	char *arena;

	if (memfd < 0)
		return "its io_uring arena was not handed over";
	if (h->ring_nq != (uint32_t)get_nprocs_conf() || h->ring_epq != URING_EPQ_MAX ||
	    h->ring_slot != URING_HDR_PAGE + h->ring_payload ||
	    h->ring_len != (uint64_t)h->ring_nq * h->ring_epq * h->ring_slot ||
	    fstat(memfd, &st) != 0 || (uint64_t)st.st_size != h->ring_len) {
		close(memfd);
		return "its io_uring arena has another layout than this agentfsd reads";
	}
	arena = uring_arena_place(h->ring_len, memfd, h->ring_addr);
	if (arena == NULL) {
		close(memfd);
		return "its io_uring arena cannot be mapped at its address";
	}
	if (uring_prepare_at(m, h->ring_payload, arena, memfd) != 0)
		return "its io_uring rings cannot be set up";
	return NULL;
}

/* The mount's root, by its path, checked by its mount id: an O_PATH descriptor, or -1 */
int uring_self_open(struct fs_mount *m)
{
	int fd = open(m->mountpoint, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (!mount_fd_ours(m, fd)) {
		close(fd);
		return -1;
	}
	return fd;
}

struct poke {
	int fd;
	unsigned cpu;
};

static void *poke_main(void *arg)
{
	struct poke *p = arg;
	struct statx stx;
	cpu_set_t cpus;

	CPU_ZERO(&cpus);
	CPU_SET(p->cpu, &cpus);
	if (sched_setaffinity(0, sizeof cpus, &cpus) == 0)
		statx(p->fd, "", AT_EMPTY_PATH | AT_STATX_FORCE_SYNC, STATX_MODE, &stx);
	close(p->fd);
	free(p);
	return NULL;
}

/*
 * After a takeover, once queue CPU's entries are all registered again or
 * taken over (a request made before would wait behind the others, and a
 * REGISTER fetches none of them): one GETATTR of the root on that queue,
 * from a thread pinned to its CPU (see the top).
 */
void uring_poke(struct fs_mount *m, unsigned cpu)
{
	struct poke *p = malloc(sizeof *p);
	pthread_attr_t a;
	pthread_t t;

	if (p == NULL || (p->fd = uring_self_open(m)) < 0) {
		free(p);
		fs_log(m->fs, FS_LOG_WARN, "%s: io_uring: cannot open the mount's root: requests "
		       "that waited for the restart on CPU %u wait for the next one made there",
		       m->mountpoint, cpu);
		return;
	}
	p->cpu = cpu;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &a, poke_main, p) != 0) {
		close(p->fd);
		free(p);
	}
	pthread_attr_destroy(&a);
}

/* A regular file the kernel holds in m (a node id it looked up), or 0 */
static uint64_t regular_node(struct fs_mount *m)
{
	uint64_t id = 0;
	struct inode *i;
	uint32_t k;

	pthread_mutex_lock(&m->fs->lock);
	for (k = 1; k < m->tab.node_hwm && id == 0; k++) {
		i = node_at(m, k);
		if (i != NULL && i->type == S_IFREG && i->nlookup > 0)
			id = node_id(m, i);
	}
	pthread_mutex_unlock(&m->fs->lock);
	return id;
}

/*
 * Open the file of node id ID through the mount, by the kernel's own file
 * handle for it (FUSE's: node id and generation, ours its upper half; the
 * kernel finds it in its cache, no path is followed): n times, into fds.
 */
static unsigned open_node(int self, uint64_t id, int *fds, unsigned n)
{
	struct {
		struct file_handle fh;
		uint32_t raw[3];
	} h;
	unsigned k;

	h.fh.handle_bytes = sizeof h.raw;
	h.fh.handle_type = 0x81; /* FILEID_INO64_GEN */
	h.raw[0] = (uint32_t)(id >> 32);
	h.raw[1] = (uint32_t)id;
	h.raw[2] = (uint32_t)(id >> 32);
	for (k = 0; k < n; k++)
		if ((fds[k] = open_by_handle_at(self, &h.fh, O_RDONLY | O_NONBLOCK | O_NOCTTY |
								O_CLOEXEC)) < 0)
			break;
	return k;
}

/*
 * A restart (fs_handover, the mounts' readers stopped): each io_uring
 * mount's queues get open files for the fill, then the ring threads hold
 * what comes, fill their free entries and end.
 */
void uring_handover(struct fs *fs)
{
	struct fs_mount *m;
	uint64_t id;
	unsigned k;
	int self;

	for (m = fs->mounts; m != NULL; m = m->next) {
		if (!m->handing_over || m->uring == NULL)
			continue;
		/* open_by_handle_at takes no O_PATH descriptor; OPENDIR is refused, so this sends none */
		self = uring_self_open(m);
		if (self >= 0) {
			int dir = openat(self, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

			close(self);
			self = dir;
		}
		id = self >= 0 ? regular_node(m) : 0;
		for (k = 0; k < m->uring->nq && id != 0; k++) {
			struct uring_q *q = &m->uring->q[k];

			q->nfill = open_node(self, id, q->fill, atomic_load(&q->nent));
		}
		if (id == 0)
			fs_log(fs, FS_LOG_INFO, "%s: io_uring: no file to fill the free entries with "
			       "at the handover: a request that comes meanwhile may fail with "
			       "ECANCELED", m->mountpoint);
		if (self >= 0)
			close(self);
	}
	for (m = fs->mounts; m != NULL; m = m->next) /* every mount at once */
		if (m->handing_over && m->uring != NULL)
			uring_hold(m, false);
	for (m = fs->mounts; m != NULL; m = m->next)
		if (m->handing_over && m->uring != NULL)
			uring_hold(m, true);
}

/* SPDX-License-Identifier: MIT */
/*
 * Requests that come twice. A server killed after it made a name, removed
 * one, renamed or wrote, but before it answered, leaves the request in the
 * kernel's queue; the next server asks the kernel to send it again
 * (FUSE_NOTIFY_RESEND, restore.c) and gets it with FUSE_UNIQUE_RESEND set
 * in its id. Done a second time, a mkdir would fail with EEXIST, an unlink
 * with ENOENT, a rename could move a file made since under the old name,
 * an append would be written twice: the bot would see an error, or worse.
 *
 * So every thread that serves requests notes, in the mount's table (which
 * outlives the process), the one name change or write it is doing: its id,
 * then "started" before the syscall and "done" with the result after it.
 * The next server moves what it finds there to the table's replay list
 * (journal_adopt), and a request that comes again is answered from it:
 * done, with the result the first one had, without doing it again; started
 * (killed between note and result: the syscall may or may not have run),
 * done again, its "already so" error (EEXIST, ENOENT) taken as success.
 * "May" is the rule, not the exception: a SIGKILL that comes while a
 * thread is in a syscall takes effect when the syscall returns. So a
 * rename and an unlink also note, before their syscall, the inode they
 * move or remove, an append the size of its file (journal_note): started,
 * a rename whose inode is under its new name and no longer under the old
 * one, an unlink whose name is gone (ops-name.c), an append whose bytes
 * are where the file ended (ops-file.c), was done.
 * Stores only, in program order (a compiler fence, no syscall): the memory
 * is shared, and what a killed process stored is there for the next one.
 */
#include "fusefs/fs-int.h"

#include <signal.h>
#include <string.h>

#define UNIQUE_RESEND (1ull << 63)

/*
 * For tests/daemon-handover.sh only: AGENTFSD_TEST_CRASH=after:N[,M...]
 * (fs_new) kills the server right after it did a request of opcode N, and
 * before it answered: the worst moment for a name change; handle:N[,M...]
 * kills it once a create also opened its handle (journal_made); resent:N
 * [,M...] just before it answers a request of opcode N that the kernel sent
 * again (journal_replying): armed in the server after one killed by
 * during:N, the request comes a third time, its note two takeovers old.
 */
static bool crash_now(uint64_t set)
{
	return fs_cur.opcode < 64 && (set & (1ull << fs_cur.opcode)) != 0;
}

/* This thread's slot: 0 for a mount's reader, 1 + n for the pool's worker n */
static __thread unsigned tl_slot;

void journal_thread(unsigned slot)
{
	tl_slot = slot < JOURNAL_SLOTS ? slot : JOURNAL_SLOTS - 1;
}

static struct journal_slot *mine(struct fs_mount *m)
{
	return &m->tab.hdr->journal[tl_slot];
}

/* The name change or write this thread serves is about to be done */
void journal_begin(struct fs_mount *m)
{
	struct journal_slot *j = mine(m);

	__atomic_store_n(&j->state, 0, __ATOMIC_RELAXED);
	atomic_signal_fence(memory_order_seq_cst);
	j->unique = fs_cur.unique & ~UNIQUE_RESEND;
	j->opcode = fs_cur.opcode;
	j->aux = 0;
	atomic_signal_fence(memory_order_seq_cst);
	__atomic_store_n(&j->state, JS_STARTED, __ATOMIC_RELAXED);
}

/*
 * Its syscall returned (tests only: AGENTFSD_TEST_CRASH=during:N dies
 * here); journal_end() says so too, for a handler whose syscall is its end.
 */
void journal_syscalled(struct fs_mount *m)
{
	if (m->fs->crash_during != 0 && crash_now(m->fs->crash_during))
		raise(SIGKILL);
}

/* A reply is about to go out for the request this thread serves (tests only) */
void journal_replying(struct fs_mount *m)
{
	if ((fs_cur.unique & UNIQUE_RESEND) && crash_now(m->fs->crash_resent)) {
		fs_log(m->fs, FS_LOG_WARN,
		       "AGENTFSD_TEST_CRASH: dying before the answer to opcode %u, sent again",
		       fs_cur.opcode);
		raise(SIGKILL);
	}
}

/*
 * ...and was done with result r (0, a count, or -errno). AGAIN is what
 * journal_seen() said: a request that may have been done before takes
 * ALREADY (EEXIST for a name made, ENOENT for one removed) as done.
 */
int64_t journal_end(struct fs_mount *m, int64_t r, int again, int already)
{
	struct journal_slot *j = mine(m);

	journal_syscalled(m);
	if (again < 0 && already != 0 && r == -already)
		r = 0;
	j->result = r;
	atomic_signal_fence(memory_order_seq_cst);
	__atomic_store_n(&j->state, JS_DONE, __ATOMIC_RELAXED);
	if (m->fs->crash_after != 0 && crash_now(m->fs->crash_after))
		raise(SIGKILL);
	return r;
}

/*
 * What the request this thread serves is about to change, noted before
 * its syscall (after journal_begin): the inode a rename moves or an unlink
 * removes, the size of a file before an append. A request killed between
 * that syscall and journal_end comes again as "started"; journal_aux()
 * gives this back so its handler can see whether it was done.
 */
void journal_note(struct fs_mount *m, uint64_t aux)
{
	mine(m)->aux = aux;
	atomic_signal_fence(memory_order_seq_cst);
}

/*
 * The newest note of the request being served in the last server's list
 * (MADE: done, with the handle a create opened); NULL: none.
 */
static const struct journal_slot *replayed(struct fs_mount *m, bool made)
{
	const struct journal_slot *j;
	uint64_t u = fs_cur.unique & ~UNIQUE_RESEND;
	unsigned k;

	if (!(fs_cur.unique & UNIQUE_RESEND) || !m->adopted)
		return NULL;
	for (k = JOURNAL_SLOTS; k-- > 0;) {
		j = &m->tab.hdr->replay[k];
		if (j->state != 0 && j->unique == u && j->opcode == fs_cur.opcode &&
		    (!made || (j->state == JS_DONE && j->aux != 0)))
			return j;
	}
	return NULL;
}

/* The note of the request being served, from before a restart; 0: none */
uint64_t journal_aux(struct fs_mount *m)
{
	const struct journal_slot *j = replayed(m, false);

	return j != NULL ? j->aux : 0;
}

/*
 * Is the request being served one the kernel sent again? 0: no (or not a
 * name change or write we noted); 1: it was done, *result is what it gave;
 * -1: it was started, and may have been done. A request sent again twice
 * (its second server killed too) has two notes: the newer one is believed,
 * as journal_aux() believes it.
 */
int journal_seen(struct fs_mount *m, int64_t *result)
{
	const struct journal_slot *j = replayed(m, false);

	if (j == NULL)
		return 0;
	*result = j->result;
	return j->state == JS_DONE ? 1 : -1;
}

/*
 * The create this thread serves (done: journal_end) opened the handle fh,
 * about to be answered. AGENTFSD_TEST_CRASH=handle:N (tests only) kills
 * the server here: a handle the kernel never learns of.
 */
void journal_made(struct fs_mount *m, uint64_t fh)
{
	mine(m)->aux = fh;
	atomic_signal_fence(memory_order_seq_cst);
	if (m->fs->crash_handle != 0 && crash_now(m->fs->crash_handle))
		raise(SIGKILL);
}

/*
 * The handle the create being served opened before a restart, as the last
 * server noted it (the newest such note); 0 if it got no handle that far.
 */
uint64_t journal_made_before(struct fs_mount *m)
{
	const struct journal_slot *j = replayed(m, true);

	return j != NULL ? j->aux : 0;
}

/*
 * A mount taken over (restore.c): what the last server's threads were doing
 * goes to the replay list, kept there until the next takeover replaces it,
 * so a server killed again before it served them leaves them for the next.
 */
void journal_adopt(struct fs_mount *m)
{
	struct journal_slot all[2 * JOURNAL_SLOTS];
	struct table_hdr *h = m->tab.hdr;
	unsigned k, n = 0, from;

	for (k = 0; k < JOURNAL_SLOTS; k++) /* the last takeover's first: older */
		if (h->replay[k].state != 0)
			all[n++] = h->replay[k];
	for (k = 0; k < JOURNAL_SLOTS; k++)
		if (h->journal[k].state != 0)
			all[n++] = h->journal[k];
	from = n > JOURNAL_SLOTS ? n - JOURNAL_SLOTS : 0; /* the newest are kept */
	memset(h->replay, 0, sizeof h->replay);
	memcpy(h->replay, all + from, (n - from) * sizeof *all);
	memset(h->journal, 0, sizeof h->journal);
}

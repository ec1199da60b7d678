/* SPDX-License-Identifier: MIT */
/*
 * Accounts: who holds how much of what the daemon shares (agentfsd(8),
 * LIMITS). Every bot is charged to two accounts: its family's (the bot the
 * operator made, with every bot made under it, keyed by that top bot's
 * name) and its operator's (keyed by uid). A client of the control socket
 * is charged to its operator's alone. The share rule, the same for every
 * resource: one family holds at most a quarter of the daemon's limit, one
 * operator other than root at most a quarter, and, for what operators use
 * too (reply memory, log streams), the bots together leave a quarter to
 * the control socket's clients. So a bot, however it multiplies itself
 * into bots, cannot take what another family, another operator or root
 * needs.
 *
 * The mounts' share (open files, lock waiters, mounts) is kept by fusefs,
 * in each account's fs_group (share.c), by the same rule.
 *
 * Counters are atomics: mount workers and the changes saver charge and
 * give back from their threads. The list of accounts is under lock;
 * accounts are made on the loop and freed by whichever thread lets go of
 * the last reference.
 */
#include "src/common/agentfs.h"
#include "fusefs/fusefs.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct account {
	struct account *next; /* acc.list */
	char *family;	      /* a family's top bot; NULL: an operator's */
	uid_t uid;	      /* an operator's */
	atomic_uint refs;
	atomic_ullong used[AR_N];
	struct fs_group *fsg; /* its mounts' share in fusefs (immutable) */
};

static const char *const res_names[AR_N] = {
	[AR_OUTPUT] = "reply memory",
	[AR_STREAMS] = "log streams",
	[AR_CHANGES] = "change records",
	[AR_STATE] = "the state file",
};

static struct {
	pthread_mutex_t lock; /* list */
	struct account *list;
	unsigned long long cap[AR_N];
	atomic_ullong total[AR_N]; /* everyone's */
	atomic_ullong bots[AR_N];  /* of it, charged to a family */
} acc = {.lock = PTHREAD_MUTEX_INITIALIZER};

void accounts_init(const struct config *cfg)
{
	acc.cap[AR_OUTPUT] = ACCT_OUTPUT_MAX;
	acc.cap[AR_STREAMS] = ACCT_STREAMS_MAX;
	acc.cap[AR_CHANGES] = (unsigned long long)cfg->changes_memory << 20;
	acc.cap[AR_STATE] = STATE_MAX - 4096; /* the rest for the file's head */
}

/* A quarter of cap, at least min (and at most cap). */
unsigned long long acct_share(unsigned long long cap, unsigned long long min)
{
	unsigned long long s = cap / 4;

	if (s < min)
		s = min;
	return s < cap ? s : cap;
}

unsigned long long acct_cap(enum acct_res r)
{
	return acc.cap[r];
}

static struct account *find_or_make(const char *family, uid_t uid)
{
	struct account *a;

	pthread_mutex_lock(&acc.lock);
	for (a = acc.list; a != NULL; a = a->next) {
		if (family != NULL ? a->family != NULL && strcmp(a->family, family) == 0
				   : a->family == NULL && a->uid == uid) {
			atomic_fetch_add(&a->refs, 1);
			break;
		}
	}
	if (a == NULL && (a = calloc(1, sizeof *a)) != NULL) {
		char name[BOT_NAME_MAX + 32];

		if (family != NULL)
			snprintf(name, sizeof name, "bot %s's family", family);
		else
			snprintf(name, sizeof name, "uid %u", (unsigned)uid);
		a->family = family != NULL ? strdup(family) : NULL;
		a->fsg = fs_group_new(name);
		if ((family != NULL && a->family == NULL) || a->fsg == NULL) {
			free(a->family);
			fs_group_put(a->fsg);
			free(a);
			a = NULL;
		} else {
			a->uid = uid;
			atomic_init(&a->refs, 1);
			a->next = acc.list;
			acc.list = a;
		}
	}
	pthread_mutex_unlock(&acc.lock);
	return a;
}

struct account *acct_family(const char *top)
{
	return find_or_make(top, 0);
}

struct account *acct_operator(uid_t uid)
{
	return find_or_make(NULL, uid);
}

struct account *acct_hold(struct account *a)
{
	if (a != NULL)
		atomic_fetch_add(&a->refs, 1);
	return a;
}

void acct_put(struct account *a)
{
	struct account **pp;

	if (a == NULL)
		return;
	pthread_mutex_lock(&acc.lock);
	if (atomic_fetch_sub(&a->refs, 1) != 1) {
		pthread_mutex_unlock(&acc.lock);
		return;
	}
	for (pp = &acc.list; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == a) {
			*pp = a->next;
			break;
		}
	}
	pthread_mutex_unlock(&acc.lock);
	fs_group_put(a->fsg);
	free(a->family);
	free(a);
}

/* Its share of the mounts' open files, lock waiters and mounts; NULL for root's, unbounded. */
struct fs_group *acct_fs_group(const struct account *a)
{
	return a != NULL && (a->family != NULL || a->uid != 0) ? a->fsg : NULL;
}

/* Add n to *c unless that passes lim; false (and *c unchanged) if it would. */
static bool add_within(atomic_ullong *c, unsigned long long n, unsigned long long lim)
{
	unsigned long long old = atomic_load(c);

	do {
		if (old + n > lim || old + n < old)
			return false;
	} while (!atomic_compare_exchange_weak(c, &old, old + n));
	return true;
}

static void sub(atomic_ullong *c, unsigned long long n)
{
	atomic_fetch_sub(c, n);
}

bool acct_take(struct account *fam, struct account *op, enum acct_res r, unsigned long long n,
	       char *why, size_t len)
{
	unsigned long long cap = acc.cap[r], share = acct_share(cap, 1);
	bool reserve = r == AR_OUTPUT || r == AR_STREAMS;

	if (!add_within(&acc.total[r], n, cap)) {
		snprintf(why, len, "the daemon's %s (%llu) is all in use", res_names[r], cap);
		return false;
	}
	if (fam != NULL && !add_within(&acc.bots[r], n, reserve ? cap - share : cap)) {
		sub(&acc.total[r], n);
		snprintf(why, len,
			 "the bots together hold all of the daemon's %s they may (%llu): "
			 "the rest is kept for the operators",
			 res_names[r], cap - share);
		return false;
	}
	if (fam != NULL && !add_within(&fam->used[r], n, share)) {
		sub(&acc.total[r], n);
		sub(&acc.bots[r], n);
		snprintf(why, len,
			 "bot %s and the bots it made hold their share of %s (%llu of %llu)",
			 fam->family, res_names[r], share, cap);
		return false;
	}
	if (op != NULL && op->uid != 0 && !add_within(&op->used[r], n, share)) {
		sub(&acc.total[r], n);
		if (fam != NULL) {
			sub(&acc.bots[r], n);
			sub(&fam->used[r], n);
		}
		snprintf(why, len, "uid %u holds its share of %s (%llu of %llu)", (unsigned)op->uid,
			 res_names[r], share, cap);
		return false;
	}
	if (op != NULL && op->uid == 0)
		atomic_fetch_add(&op->used[r], n);
	return true;
}

void acct_give(struct account *fam, struct account *op, enum acct_res r, unsigned long long n)
{
	sub(&acc.total[r], n);
	if (fam != NULL) {
		sub(&acc.bots[r], n);
		sub(&fam->used[r], n);
	}
	if (op != NULL)
		sub(&op->used[r], n);
}

/* Charge what was there before the limits (a state read back at start): no check. */
void acct_force(struct account *fam, struct account *op, enum acct_res r, unsigned long long n)
{
	atomic_fetch_add(&acc.total[r], n);
	if (fam != NULL) {
		atomic_fetch_add(&acc.bots[r], n);
		atomic_fetch_add(&fam->used[r], n);
	}
	if (op != NULL)
		atomic_fetch_add(&op->used[r], n);
}

unsigned long long acct_used(const struct account *a, enum acct_res r)
{
	return a != NULL ? atomic_load(&a->used[r]) : atomic_load(&acc.total[r]);
}

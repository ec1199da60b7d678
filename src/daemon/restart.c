/* SPDX-License-Identifier: MIT */
/*
 * What outlives a mount or the daemon: a root unmounted from outside (the
 * mount table watched, or the FUSE connection ended) is marked lost until a
 * configure or a restart mounts it again; at start, stale mounts of a dead
 * predecessor are detached, leftovers removed, and the saved bots restored.
 */
#include "src/daemon/bots-int.h"
#include "fusefs/fusefs.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/mount.h>

#include <event2/event.h>

/*
 * For tests/daemon-handover.sh only: AGENTFSD_TEST_CRASH=NAME makes the
 * daemon kill itself (SIGKILL, as a crash would) at the step NAME of a
 * restart, to show that no step loses a descriptor.
 */
void restart_crash_point(const char *name)
{
	const char *at = getenv("AGENTFSD_TEST_CRASH");

	char path[PATH_MAX];

	if (at != NULL && strcmp(at, name) == 0) {
		log_msg(LOG_WARNING, "AGENTFSD_TEST_CRASH: dying at %s", name);
		/* for the test to see it died there, not elsewhere */
		snprintf(path, sizeof path, "%s/crashed", bots_state.cfg->state_dir);
		write_file_atomic(bots_state.cfg->state_dir, "crashed", name, strlen(name));
		raise(SIGKILL);
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int collect_ours(void *arg, uint64_t id, const char *mp, const char *fstype)
{
	struct paths *ps = arg;

	(void)id;
	if (strcmp(fstype, "fuse.agentfs") == 0 && path_within(mp, bots_state.cfg->mount_dir))
		return paths_add(ps, mp) != 0;
	return 0;
}

/*
 * Mark the roots whose mount is no longer in the mount table: unmounted
 * from outside (umount -l, fusermount3 -uz) while a sandbox still holds it,
 * so the FUSE connection lives on. Their mounts keep serving those
 * sandboxes; exec refuses the bot and show says "lost" until a configure
 * or a restart mounts them again. Only bot, if given; busy bots are left
 * alone. Fails open to nothing: without the table, nothing is marked.
 */
void restart_check_lost(struct bot *only)
{
	struct paths ours = {0};
	struct bot *b;
	size_t i;

	if (fs_mountinfo_each(collect_ours, &ours) != 0) {
		paths_free(&ours);
		return;
	}
	if (ours.n > 0) /* qsort and bsearch take no NULL array, even empty */
		qsort(ours.v, ours.n, sizeof *ours.v, cmp_str);
	TAILQ_FOREACH(b, &bots_state.bots, entry) {
		if ((only != NULL && b != only) || b->busy || b->deleting)
			continue;
		for (i = 0; i < b->nroots; i++) {
			struct root *rt = &b->roots[i];

			if (rt->m == NULL || rt->lost ||
			    (ours.n > 0 && bsearch(&rt->mountpoint, ours.v, ours.n, sizeof *ours.v,
						   cmp_str) != NULL))
				continue;
			log_msg(LOG_WARNING,
				"bot %s: %s was unmounted from outside; "
				"agentfs configure %s mounts it again",
				b->name, rt->mountpoint, b->name);
			events_bot(b, "mount_lost", rt->path,
				   "%s was unmounted from outside; agentfs configure %s mounts it "
				   "again",
				   rt->mountpoint, b->name);
			rt->lost = true;
			free(rt->error);
			rt->error = strdup("unmounted from outside");
		}
	}
	paths_free(&ours);
}

/* The mount table changed (edge-triggered: any mount on the host). */
static void mountinfo_changed(evutil_socket_t fd, short what, void *arg)
{
	restart_check_lost(NULL);
}

/* A mount ended from outside (umount by someone): note it on its root. */
static void done_lost(struct job *j)
{
	struct bot *b;
	size_t i;

	TAILQ_FOREACH(b, &bots_state.bots, entry) {
		for (i = 0; i < b->nroots; i++) {
			if (b->roots[i].m == j->lost) {
				log_msg(LOG_WARNING, "bot %s: %s was unmounted from outside",
					b->name, b->roots[i].mountpoint);
				if (!b->roots[i].lost)
					events_bot(
						b, "mount_lost", b->roots[i].path,
						"%s was unmounted from outside; agentfs configure "
						"%s mounts it again",
						b->roots[i].mountpoint, b->name);
				fs_mount_free(j->lost);
				b->roots[i].m = NULL;
				b->roots[i].lost = true;
				free(b->roots[i].error);
				b->roots[i].error = strdup("unmounted from outside");
				j->lost = NULL;
			}
		}
	}
	job_finish(j);
}

void restart_lost_cb(void *arg, struct fs_mount *m)
{
	struct job *j = calloc(1, sizeof *j);

	if (j == NULL)
		return;
	j->lost = m;
	j->done = done_lost;
	job_post_done(j);
}

/*
 * Detach mounts a dead predecessor left under our mount folder, but those
 * it handed over: they are taken over, not mounted again.
 */
static int clean_stale(void *arg, uint64_t id, const char *mp, const char *fstype)
{
	if (strcmp(fstype, "fuse.agentfs") == 0 && path_within(mp, bots_state.cfg->mount_dir) &&
	    strcmp(mp, bots_state.cfg->mount_dir) != 0 &&
	    !fs_handover_has(bots_state.handover, id)) {
		if (umount2(mp, MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
			log_msg(LOG_INFO, "detached stale mount %s", mp);
		else
			log_msg(LOG_WARNING, "cannot detach stale mount %s: %s", mp,
				strerror(errno));
	}
	return 0;
}

/* Bots whose ttl ran out while no daemon ran go, with what they made, before anything mounts. */
static void drop_expired(void)
{
	struct bot *b, **v = NULL;
	time_t now = time(NULL);
	size_t n = 0, i;
	bool again = true, dropped = false;

	while (again) {
		again = false;
		TAILQ_FOREACH(b, &bots_state.bots, entry) {
			if (b->expires != 0 && b->expires <= now) {
				if (!bots_collect(b, &v, &n)) {
					/* restored instead: its ttl timer ends it at once */
					log_msg(LOG_ERR, "out of memory dropping expired bots");
					free(v);
					bots_save_state();
					return;
				}
				for (i = 0; i < n; i++) {
					log_msg(LOG_INFO,
						"bot %s: ttl ran out while agentfsd was down",
						v[i]->name);
					TAILQ_REMOVE(&bots_state.bots, v[i], entry);
					bot_free(v[i]);
				}
				dropped = true;
				free(v);
				v = NULL;
				n = 0;
				again = true;
				break;
			}
		}
	}
	/* only then: a restart's gap waited on this write (and its fsync) for nothing */
	if (dropped)
		bots_save_state();
}

/*
 * A daemon killed mid-change may leave a bot's socket file or an empty
 * mount folder for a bot the state does not hold: remove them.
 */
static void clean_leftovers(void)
{
	char path[PATH_MAX], name[BOT_NAME_MAX + 8];
	struct dirent *de;
	DIR *dir;
	size_t n;

	snprintf(path, sizeof path, "%s.d", bots_state.cfg->socket_path);
	if ((dir = opendir(path)) != NULL) {
		while ((de = readdir(dir)) != NULL) {
			n = strlen(de->d_name);
			if (n < 6 || n - 5 > BOT_NAME_MAX ||
			    strcmp(de->d_name + n - 5, ".sock") != 0)
				continue;
			memcpy(name, de->d_name, n - 5);
			name[n - 5] = '\0';
			if (bot_find(name) == NULL && unlinkat(dirfd(dir), de->d_name, 0) == 0)
				log_msg(LOG_INFO, "removed the socket of a bot that is gone: %s",
					de->d_name);
		}
		closedir(dir);
	}
	if ((dir = opendir(bots_state.cfg->mount_dir)) != NULL) {
		while ((de = readdir(dir)) != NULL)
			if (de->d_name[0] != '.' && bot_find(de->d_name) == NULL)
				unlinkat(dirfd(dir), de->d_name, AT_REMOVEDIR); /* only if empty */
		closedir(dir);
	}
}

/*
 * Every bot is restored: what the last agentfsd kept and no bot took is
 * let go of (mounts of bots gone since: ended), and systemd hears we serve.
 */
static void restored_all(void)
{
	restart_crash_point("restored");
	fs_handover_free(bots_state.fs, bots_state.handover);
	bots_state.handover = NULL;
	fdstore_handed_done();
	fdstore_notify("READY=1");
	log_msg(LOG_INFO, "restored %u bot%s; %u mount%s taken over from the last agentfsd",
		bots_state.nbots, bots_state.nbots == 1 ? "" : "s", bots_state.taken,
		bots_state.taken == 1 ? "" : "s");
	/* served by the pool until now, so that no bot waited for threads to start */
	fs_readers_start(bots_state.fs);
}

static void done_restore(struct job *j)
{
	char err[512];
	size_t i, n = 0, taken = 0;

	j->bot->busy = false;
	for (i = 0; i < j->bot->nroots; i++) {
		n += j->bot->roots[i].m != NULL;
		taken += j->bot->roots[i].m != NULL && fs_mount_adopted(j->bot->roots[i].m);
	}
	bots_state.taken += (unsigned)taken;
	events_bot(j->bot, "bot_restored", j->bot->folder,
		   "restored at agentfsd's start: %zu of %zu roots mounted%s", n, j->bot->nroots,
		   taken == 0	? ""
		   : taken == n ? " (taken over from the last agentfsd)"
				: " (some taken over from the last agentfsd)");
	if (!bot_activate(j->bot, err, sizeof err))
		log_msg(LOG_ERR, "bot %s: %s", j->bot->name, err);
	job_finish(j);
	if (taken > 0)
		restart_crash_point("adopting");
	if (--bots_state.restoring == 0)
		restored_all();
}

/* Watch the mount table, so a root unmounted from outside is noticed at once. */
static void watch_mounts(void)
{
	bots_state.mountinfo_fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	if (bots_state.mountinfo_fd < 0)
		return;
	bots_state.mountinfo_ev = event_new(bots_state.base, bots_state.mountinfo_fd,
					    EV_READ | EV_ET | EV_PERSIST, mountinfo_changed, NULL);
	if (bots_state.mountinfo_ev == NULL || event_add(bots_state.mountinfo_ev, NULL) != 0)
		log_msg(LOG_WARNING, "cannot watch the mount table: lost mounts are "
				     "noticed at exec and show only");
}

/* Restore the saved bots: plan their roots and mount them on the job thread. */
static int restore_bots(char *err, size_t errlen)
{
	char why[512];
	struct bot *b;
	struct job *j;

	TAILQ_FOREACH(b, &bots_state.bots, entry) {
		bots_state.nbots++;
		if (bot_plan_roots(b) != 0) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		j = calloc(1, sizeof *j);
		if (j == NULL) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		b->busy = true;
		b->fam = acct_family(auth_family_top(&bots_state.bots, b)->name);
		b->op = acct_operator(b->owner_uid);
		/* written within the shares, or before them: charged as it is */
		b->state_bytes = state_entry_size(b);
		acct_force(b->fam, b->op, AR_STATE, b->state_bytes);
		b->ring = events_ring_new(b->name);
		b->changes = changes_new(b->name, true, b->fam, b->op, b->owner_uid);
		j->bot = b;
		j->uid = b->owner_uid; /* a root mounted afresh is checked again (roots.c) */
		j->lane = b->fam;      /* families are restored side by side (jobs.c) */
		j->run = roots_restore_bot;
		/* its clients wait from now on, served once done_restore starts its socket */
		if (!bot_socket_hold(b, why, sizeof why))
			log_msg(LOG_WARNING, "bot %s: %s (tried again once its roots are back)",
				b->name, why);
		bots_state.restoring++;
		j->done = done_restore;
		job_submit(j);
	}
	return 0;
}

/*
 * At start, once the job thread runs: watch the mount table, detach what a
 * dead predecessor left mounted, load the state, drop what expired while no
 * daemon ran and restore the rest.
 */
static bool take_handed(void *arg, const char *name, int fd)
{
	if (!fs_handover_add(arg, name, fd))
		return false;
	if (strcmp(name, "gitlocks") == 0) /* gitlock.c's for good: it is never closed */
		fdstore_back(name, fd, false);
	return true;
}

/*
 * How many restarts this daemon's mounts lived through, kept in a memfd in
 * the store beside them ("daemon"): one more than the last agentfsd said.
 */
static void count_restart(void)
{
	uint32_t n = 0;
	int fd = fdstore_take("daemon");

	if (fd >= 0 && pread(fd, &n, sizeof n, 0) == (ssize_t)sizeof n)
		bots_state.restarts = ++n;
	if (fd >= 0) /* ours until restart_stop */
		fdstore_back("daemon", fd, false);
	if (fd < 0 && fdstore_kind() != FDSTORE_NONE &&
	    (fd = memfd_create("agentfsd", MFD_CLOEXEC)) >= 0 && fdstore_put("daemon", fd) != 0) {
		close(fd);
		fd = -1;
	}
	if (fd >= 0 && pwrite(fd, &n, sizeof n, 0) != (ssize_t)sizeof n)
		log_msg(LOG_WARNING, "cannot count restarts: %s", strerror(errno));
	bots_state.restarts_fd = fd;
}

int restart_start(char *err, size_t errlen)
{
	int r;

	watch_mounts();
	restart_crash_point("taken");
	count_restart();
	bots_state.handover = fs_handover_new();
	if (bots_state.handover != NULL)
		fdstore_handed_each(take_handed, bots_state.handover);
	fs_mountinfo_each(clean_stale, NULL);
	r = state_load(bots_state.cfg, &bots_state.bots, err, errlen);
	if (r != 0)
		return r;
	drop_expired();
	clean_leftovers();
	r = restore_bots(err, errlen);
	if (r == 0 && bots_state.restoring == 0)
		restored_all();
	return r;
}

void restart_stop(void)
{
	if (bots_state.restarts_fd >= 0) {
		fdstore_forget("daemon"); /* the store's stays, for the next agentfsd */
		close(bots_state.restarts_fd);
	}
	bots_state.restarts_fd = -1;
	if (bots_state.mountinfo_ev != NULL)
		event_free(bots_state.mountinfo_ev);
	bots_state.mountinfo_ev = NULL;
	if (bots_state.mountinfo_fd > 0)
		close(bots_state.mountinfo_fd);
	bots_state.mountinfo_fd = -1;
}

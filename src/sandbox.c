/* SPDX-License-Identifier: MIT */
/*
 * Sandboxes: the `agentfs exec` runs of a bot, held by pidfd so a signal
 * reaches only the processes that registered, and rm --force, which ends
 * them (SIGTERM, then SIGKILL) before the bot is deleted.
 */
#include "src/bots-int.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <sys/syscall.h>

#include <event2/event.h>

/*
 * A sandbox running a bot's commands: the `agentfs exec` that asked, and,
 * once bwrap reports it, the sandbox's init (whose death ends every process
 * in it). Both are held by pidfd, so a signal can only reach the processes
 * that registered, never a later one with the same pid. The record goes
 * when the exec ends (its pidfd becomes readable).
 */
struct sandbox_run {
	struct bot *bot;
	pid_t pid, init;   /* init: 0 until reported, and for an unconfined bot */
	int pidfd, initfd; /* -1: none */
	uid_t uid;	   /* who registered it */
	struct event *ev;
	LIST_ENTRY(sandbox_run) entry;
};

#define SANDBOXES_MAX 256 /* per bot */

static int pidfd_open_pid(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static int pidfd_signal(int fd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0);
}

static void sandbox_free(struct sandbox_run *sb)
{
	LIST_REMOVE(sb, entry);
	sb->bot->nsandboxes--;
	if (sb->ev != NULL)
		event_free(sb->ev);
	if (sb->pidfd >= 0)
		close(sb->pidfd);
	if (sb->initfd >= 0)
		close(sb->initfd);
	free(sb);
}

void sandboxes_free(struct bot *b)
{
	while (!LIST_EMPTY(&b->sandboxes))
		sandbox_free(LIST_FIRST(&b->sandboxes));
}

/* The exec ended: it no longer holds the bot. */
static void sandbox_gone(evutil_socket_t fd, short what, void *arg)
{
	sandbox_free(arg);
}

/* A process's parent, from /proc; -1 if it is gone. */
static pid_t parent_of(pid_t pid)
{
	pid_t ppid;
	char state;

	return proc_stat(pid, &state, &ppid) == 0 ? ppid : -1;
}

/* Is pid a descendant of anc, within a few generations (bwrap's two)? */
static bool descends_from(pid_t pid, pid_t anc)
{
	int i;

	for (i = 0; i < 4 && pid > 1; i++) {
		pid = parent_of(pid);
		if (pid == anc)
			return true;
	}
	return false;
}

/*
 * May the daemon signal the process for whoever registered it? Root's are
 * fine; a user's only while the process still runs as that user (its real
 * or saved uid, as kill(2) asks), so a process that became privileged is
 * left alone. The pidfd, checked after reading, makes sure /proc spoke of it.
 */
static bool may_signal(int pidfd, pid_t pid, uid_t uid)
{
	char path[64], line[256];
	unsigned r = 0, e = 0, sv = 0;
	bool ok = false;
	FILE *f;

	if (uid == 0)
		return true;
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return false;
	while (fgets(line, sizeof line, f) != NULL)
		if (sscanf(line, "Uid: %u %u %u", &r, &e, &sv) == 3) {
			ok = r == uid || sv == uid;
			break;
		}
	fclose(f);
	return ok && pidfd_signal(pidfd, 0) == 0;
}

static void sandbox_signal(struct sandbox_run *sb, int sig)
{
	if (sig == SIGKILL && sb->initfd >= 0 && may_signal(sb->initfd, sb->init, sb->uid))
		pidfd_signal(sb->initfd, SIGKILL);
	if (may_signal(sb->pidfd, sb->pid, sb->uid))
		pidfd_signal(sb->pidfd, sig);
}

/* The live record of pid; one whose process has ended (its pid reused) goes. */
static struct sandbox_run *sandbox_of(struct bot *b, pid_t pid)
{
	struct sandbox_run *sb;

	LIST_FOREACH(sb, &b->sandboxes, entry) {
		if (sb->pid != pid)
			continue;
		if (pidfd_signal(sb->pidfd, 0) == 0)
			return sb;
		sandbox_free(sb);
		return NULL;
	}
	return NULL;
}

/* A new record of the client pid running b; NULL after failing the request. */
static struct sandbox_run *sandbox_add(struct request *r, struct bot *b, pid_t pid)
{
	struct sandbox_run *sb;

	if (b->nsandboxes >= SANDBOXES_MAX) {
		fail(r, "limit", "bot %s has %d sandboxes running", b->name, SANDBOXES_MAX);
		return NULL;
	}
	sb = calloc(1, sizeof *sb);
	if (sb == NULL) {
		fail(r, "internal", "out of memory");
		return NULL;
	}
	sb->bot = b;
	sb->pid = pid;
	sb->initfd = -1;
	sb->uid = server_peer_uid(r->peer);
	sb->pidfd = pidfd_open_pid(pid);
	sb->ev = sb->pidfd >= 0 ? event_new(ds.base, sb->pidfd, EV_READ, sandbox_gone, sb) : NULL;
	if (sb->ev == NULL || event_add(sb->ev, NULL) != 0) {
		if (sb->ev != NULL)
			event_free(sb->ev);
		if (sb->pidfd >= 0)
			close(sb->pidfd);
		free(sb);
		fail(r, "internal", "cannot follow the client's process: %s", strerror(errno));
		return NULL;
	}
	LIST_INSERT_HEAD(&b->sandboxes, sb, entry);
	b->nsandboxes++;
	return sb;
}

/* Hold init as sb's sandbox init; false after failing the request. */
static bool sandbox_set_init(struct request *r, struct sandbox_run *sb, pid_t init)
{
	int fd;

	/* Checked again once held: the pidfd is of a process that descends from the client. */
	fd = pidfd_open_pid(init);
	if (fd < 0 || !descends_from(init, sb->pid) || pidfd_signal(fd, 0) != 0) {
		if (fd >= 0)
			close(fd);
		fail(r, "forbidden", "process %d is not a sandbox this client started", (int)init);
		return false;
	}
	sb->init = init;
	sb->initfd = fd;
	return true;
}

/*
 * `agentfs exec` says it runs the bot's commands: first before it starts
 * them (no pid), then with its sandbox's init once bwrap reports it. The
 * client is the peer itself (SO_PEERCRED); the init must descend from it.
 */
void bots_exec_register(struct request *r, const char *name, bool has_pid, double pidv)
{
	struct bot *b;
	pid_t pid = r->peer != NULL ? server_peer_pid(r->peer) : 0;
	struct sandbox_run *sb;

	if ((b = visible_bot(r, name)) == NULL)
		return;
	if (b->busy) {
		fail(r, "busy", "bot %s is being changed; ask again", b->name);
		return;
	}
	if (pid <= 0) {
		fail(r, "bad_request", "the client's pid is unknown");
		return;
	}
	if (has_pid && (pidv < 2 || pidv > 4194304 || pidv != (double)(pid_t)pidv)) {
		fail(r, "bad_value", "pid must be a process id");
		return;
	}
	/*
	 * The peer's process must run as the peer's uid: a connect a sandbox's
	 * guard made for a command (exec-unix.c) carries the bot's uid but the
	 * root supervisor's pid, which no bot may have followed or kept busy.
	 */
	if (proc_real_uid(pid) != (long)server_peer_uid(r->peer)) {
		fail(r, "forbidden",
		     "process %d does not run as uid %u: only a process that connected for itself "
		     "registers",
		     (int)pid, (unsigned)server_peer_uid(r->peer));
		return;
	}
	sb = sandbox_of(b, pid);
	if (sb == NULL && (sb = sandbox_add(r, b, pid)) == NULL)
		return;
	if (has_pid && sb->initfd < 0 && !sandbox_set_init(r, sb, (pid_t)pidv))
		return;
	request_reply(r, NULL);
}

/* rm --force waiting for a bot's sandboxes to end before it deletes the bot. */
struct force {
	struct request req;
	struct bot *bot;
	struct bot **victims;
	size_t nvictims;
	struct event *tick;
	long long start; /* mono_ms() */
	bool killed;
};

/* Milliseconds on the monotonic clock. */
static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

unsigned sandboxes_running(struct bot **v, size_t n)
{
	unsigned count = 0;
	size_t i;

	for (i = 0; i < n; i++)
		count += v[i]->nsandboxes;
	return count;
}

static void force_signal(struct force *f, int sig)
{
	struct sandbox_run *sb;
	size_t i;

	for (i = 0; i < f->nvictims; i++)
		LIST_FOREACH(sb, &f->victims[i]->sandboxes, entry)
			sandbox_signal(sb, sig);
}

static void force_tick(evutil_socket_t fd, short what, void *arg)
{
	struct force *f = arg;
	struct timeval tv = {0, 100 * 1000};
	long long waited = mono_ms() - f->start;
	struct peer *p = f->req.peer;
	size_t i;

	if (sandboxes_running(f->victims, f->nvictims) > 0) {
		if (waited < (FORCE_GRACE_S + FORCE_GIVE_UP_S) * 1000) {
			if (waited >= FORCE_GRACE_S * 1000 && !f->killed) {
				log_msg(LOG_INFO,
					"bot %s: sandboxes still running after %d s: SIGKILL",
					f->bot->name, FORCE_GRACE_S);
				force_signal(f, SIGKILL);
				f->killed = true;
			}
			evtimer_add(f->tick, &tv);
			return;
		}
		log_msg(LOG_WARNING, "bot %s: %u sandboxes outlived SIGKILL; deleting anyway",
			f->bot->name, sandboxes_running(f->victims, f->nvictims));
	}
	for (i = 0; i < f->nvictims; i++)
		f->victims[i]->busy = false;
	event_free(f->tick);
	/* bot_delete answers, and resumes the client, or fails at once and answers. */
	if (!bot_delete(&f->req, f->bot)) {
		cJSON_Delete(f->req.id);
		if (p != NULL)
			server_peer_resume(p);
	}
	if (p != NULL)
		server_peer_unref(p);
	free(f->victims);
	free(f);
}

/* End the sandboxes of b and its bots (SIGTERM, then SIGKILL), then delete them. */
bool force_delete(struct request *r, struct bot *b)
{
	struct timeval now = {0, 0};
	struct force *f = calloc(1, sizeof *f);
	size_t i;

	if (f == NULL || (f->tick = evtimer_new(ds.base, force_tick, f)) == NULL) {
		free(f);
		fail(r, "internal", "out of memory");
		return false;
	}
	if (!collect_idle(r, b, &f->victims, &f->nvictims)) {
		event_free(f->tick);
		free(f->victims);
		free(f);
		return false;
	}
	/* Busy: no exec, change or other delete starts meanwhile. */
	for (i = 0; i < f->nvictims; i++)
		f->victims[i]->busy = true;
	f->req = *r;
	f->bot = b;
	f->start = mono_ms();
	if (r->peer != NULL)
		server_peer_ref(r->peer);
	log_msg(LOG_INFO, "bot %s: rm --force: ending %u sandboxes (SIGTERM)", b->name,
		sandboxes_running(f->victims, f->nvictims));
	force_signal(f, SIGTERM);
	evtimer_add(f->tick, &now);
	return true;
}

/* "bot lead has 2 running sandboxes (pids 123, 456)" for b and its bots. */
void running_msg(struct bot **v, size_t n, char *out, size_t len)
{
	struct sandbox_run *sb;
	size_t i, off;

	off = (size_t)snprintf(out, len, "pid%s", sandboxes_running(v, n) == 1 ? "" : "s");
	for (i = 0; i < n; i++)
		LIST_FOREACH(sb, &v[i]->sandboxes, entry)
			if (off < len)
				off += (size_t)snprintf(out + off, len - off, " %d", (int)sb->pid);
}

/* The running `agentfs exec`s of b, in show: [{"pid": N, "init": M}] (init once known). */
void sandboxes_json(const struct bot *b, cJSON *bot)
{
	cJSON *arr = cJSON_AddArrayToObject(bot, "sandboxes"), *o;
	struct sandbox_run *sb;

	LIST_FOREACH(sb, &b->sandboxes, entry) {
		o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "pid", sb->pid);
		if (sb->init > 0)
			cJSON_AddNumberToObject(o, "init", sb->init);
		cJSON_AddItemToArray(arr, o);
	}
}

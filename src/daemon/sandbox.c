/* SPDX-License-Identifier: MIT */
/*
 * Sandboxes: the `agentfs exec` runs of a bot, registered before they start
 * (each in a cgroup of its own), held by pidfd so a signal reaches only the
 * processes that registered, and kept on disk (sandbox-disk.c) so a
 * restarted daemon still knows them. What is done to them (limits, signals, rm --force) and told
 * of them (show, ps): sandbox-ops.c.
 */
#include "src/daemon/sandbox-int.h"
#include "src/daemon/cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/syscall.h>

#include <event2/event.h>

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

#define ARGV_MAX_BYTES 4096 /* of a command kept for ps */
#define ARGV_MAX_ITEMS 64   /* of its arguments */

static void sandbox_free(struct sandbox_run *sb)
{
	LIST_REMOVE(sb, entry);
	sb->bot->nsandboxes--;
	if (sb->ev != NULL)
		event_free(sb->ev);
	close_fd(&sb->pidfd);
	close_fd(&sb->childfd);
	close_fd(&sb->initfd);
	cJSON_Delete(sb->argv);
	free(sb);
}

/* The exec ended, or rm --force gave up: its sandbox's cgroup goes, and the record. */
static void sandbox_end(struct sandbox_run *sb)
{
	sandbox_cgroup_end(sb->cg);
	sandbox_free(sb);
}

/* Set once the daemon stops: the file keeps what still runs, for the next daemon. */
static bool stopping;

void sandboxes_stop(void)
{
	stopping = true;
	sandbox_cgroups_stop(1000);
	sandboxes_disk_stop();
}

/*
 * A handover: the sandboxes live on, followed by the next agentfsd. The
 * cgroups of ended ones still waited for are tried once (the next one's
 * start sweeps what is left), and the base's lock let go of, before the
 * next one can start, for its sweep.
 */
void sandboxes_handover(void)
{
	sandbox_cgroups_stop(0);
	cgroup_unlock();
}

/* b is deleted: its sandboxes are no longer followed (they were ended, or rm --force gave up). */
void sandboxes_free(struct bot *b)
{
	bool any = !LIST_EMPTY(&b->sandboxes);

	while (!LIST_EMPTY(&b->sandboxes)) {
		if (stopping)
			sandbox_free(
				LIST_FIRST(&b->sandboxes)); /* it runs on, for the next daemon */
		else
			sandbox_end(LIST_FIRST(&b->sandboxes));
	}
	if (any && !stopping)
		sandboxes_save();
}

/* The exec ended: it no longer holds the bot. */
static void sandbox_gone(evutil_socket_t fd, short what, void *arg)
{
	bool whole = sandbox_log_end(arg);

	sandbox_end(arg);
	if (whole)
		sandboxes_save();
}

/*
 * The records of the sandboxes of the bots V[0..N) whose client has ended
 * but whose pidfd event the loop has not yet taken: a client that ran
 * `agentfs exec B -- true; agentfs rm B` has its rm read in the same turn
 * of the loop as its exec's end, maybe first. Ended here as the event would.
 */
void sandboxes_settle(struct bot **v, size_t n)
{
	struct sandbox_run *sb, *next;
	struct pollfd pfd;
	size_t i;

	for (i = 0; i < n; i++)
		for (sb = LIST_FIRST(&v[i]->sandboxes); sb != NULL; sb = next) {
			next = LIST_NEXT(sb, entry);
			pfd.fd = sb->pidfd;
			pfd.events = POLLIN;
			if (sb->pidfd >= 0 && poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN))
				sandbox_gone(sb->pidfd, EV_READ, sb);
		}
}

/*
 * Hold pid by pidfd, with its start time; the time is read once the pidfd
 * is held, and the pidfd checked alive after, so both name one process.
 * 0; -ESRCH if it is gone; another -errno if it could not be held (out
 * of descriptors), which says nothing of the process.
 */
static int hold(pid_t pid, int *fd, unsigned long long *start)
{
	char state;
	pid_t ppid;
	int e;

	*fd = pidfd_open_pid(pid);
	if (*fd < 0) {
		e = errno;
		return e == ESRCH || e == EINVAL ? -ESRCH : -e; /* EMFILE: not known to be gone */
	}
	if (proc_stat(pid, &state, &ppid, start) != 0 || pidfd_signal(*fd, 0) != 0) {
		close_fd(fd);
		return -ESRCH;
	}
	return 0;
}

/* Take pid back, if the process of that pid is still the one that started at start. */
static int hold_again(pid_t pid, unsigned long long start, int *fd)
{
	unsigned long long now;
	int r;

	if (pid <= 1)
		return -ESRCH;
	if ((r = hold(pid, fd, &now)) != 0)
		return r;
	if (now != start) {
		close_fd(fd);
		return -ESRCH;
	}
	return 0;
}

static bool sandbox_watch(struct sandbox_run *sb)
{
	sb->ev = event_new(bots_state.base, sb->pidfd, EV_READ, sandbox_gone, sb);
	return sb->ev != NULL && event_add(sb->ev, NULL) == 0;
}

static struct sandbox_run *sandbox_new(struct bot *b)
{
	struct sandbox_run *sb = calloc(1, sizeof *sb);

	if (sb == NULL)
		return NULL;
	sb->bot = b;
	sb->pidfd = sb->childfd = sb->initfd = -1;
	return sb;
}

static void sandbox_insert(struct sandbox_run *sb)
{
	LIST_INSERT_HEAD(&sb->bot->sandboxes, sb, entry);
	sb->bot->nsandboxes++;
}

static void sandbox_discard(struct sandbox_run *sb)
{
	if (sb->ev != NULL)
		event_free(sb->ev);
	close_fd(&sb->pidfd);
	close_fd(&sb->childfd);
	cJSON_Delete(sb->argv);
	free(sb);
}

static double num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/*
 * Records taken back at start whose process could not be held (pidfd_open
 * failed, out of descriptors, which says nothing of the process): not
 * followed, but not dropped either. They stay in the file as they were,
 * and their cgroups are not swept (which would kill what runs there), until
 * the next start looks again. Loop only.
 */
static cJSON *unsure;

const cJSON *sandboxes_unsure(void)
{
	return unsure;
}

static void unsure_keep(const cJSON *o, const struct bot *b, pid_t pid, const char *why)
{
	cJSON *copy;

	log_msg(LOG_WARNING,
		"bot %s: cannot take back its sandbox (agentfs exec pid %d): %s; left running, "
		"and on disk for the next start (rm does not see it meanwhile)",
		b->name, (int)pid, why);
	if (unsure == NULL)
		unsure = cJSON_CreateArray();
	if (unsure == NULL || (copy = cJSON_Duplicate(o, true)) == NULL) {
		log_msg(LOG_ERR, "bot %s: out of memory: the record of pid %d is lost", b->name,
			(int)pid);
		return;
	}
	cJSON_AddItemToArray(unsure, copy);
}

/* One record of the file: taken back if its bot and its exec still exist. */
static bool sandbox_restore_one(const cJSON *o)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "bot");
	const cJSON *argv = cJSON_GetObjectItemCaseSensitive(o, "argv");
	struct bot *b = cJSON_IsString(name) ? bot_find(name->valuestring) : NULL;
	struct sandbox_run *sb;
	int r;

	if (b == NULL || b->deleting || num(o, "pid") < 2 || num(o, "uid") < 0 ||
	    num(o, "run_uid") < 0 || b->nsandboxes >= SANDBOXES_MAX ||
	    (sb = sandbox_new(b)) == NULL)
		return false;
	sb->pid = (pid_t)num(o, "pid");
	sb->uid = (uid_t)num(o, "uid");
	sb->run_uid = (uid_t)num(o, "run_uid");
	sb->started = (time_t)num(o, "started");
	if (cJSON_IsArray(argv))
		sb->argv = cJSON_Duplicate(argv, true);
	if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "cgroup")))
		snprintf(sb->cg, sizeof sb->cg, "%s",
			 cJSON_GetObjectItemCaseSensitive(o, "cgroup")->valuestring);
	sb->memory_max = num(o, "memory_max") > 0 ? (uint64_t)num(o, "memory_max") : 0;
	sb->pids_max = num(o, "pids_max") > 0 ? (uint64_t)num(o, "pids_max") : 0;
	if ((r = hold_again(sb->pid, (unsigned long long)num(o, "pid_start"), &sb->pidfd)) != 0) {
		/* it ended while no daemon ran: what may be left of it goes */
		if (r == -ESRCH)
			sandbox_cgroup_end(sb->cg);
		else
			unsure_keep(o, b, sb->pid, strerror(-r));
		sandbox_discard(sb);
		return false;
	}
	sb->pid_start = (unsigned long long)num(o, "pid_start");
	/* a bwrap that ended already leaves its exec to be followed */
	if (num(o, "child") > 1 &&
	    hold_again((pid_t)num(o, "child"), (unsigned long long)num(o, "child_start"),
		       &sb->childfd) == 0) {
		sb->child = (pid_t)num(o, "child");
		sb->child_start = (unsigned long long)num(o, "child_start");
	}
	if (!sandbox_watch(sb)) {
		unsure_keep(o, b, sb->pid, "cannot watch it: out of memory");
		sandbox_discard(sb);
		return false;
	}
	sandbox_insert(sb);
	log_msg(LOG_INFO, "bot %s: a sandbox still runs (agentfs exec pid %d): taken back", b->name,
		(int)sb->pid);
	return true;
}

/* Is the sandbox of record o followed already, or kept as unsure? */
static bool known(const cJSON *o)
{
	unsigned long long start = (unsigned long long)num(o, "pid_start");
	pid_t pid = (pid_t)num(o, "pid");
	struct sandbox_run *sb;
	const cJSON *u;
	struct bot *b;

	TAILQ_FOREACH(b, &bots_state.bots, entry)
		LIST_FOREACH(sb, &b->sandboxes, entry)
			if (sb->pid == pid && sb->pid_start == start)
				return true;
	cJSON_ArrayForEach(u, unsure)
		if ((pid_t)num(u, "pid") == pid && (unsigned long long)num(u, "pid_start") == start)
			return true;
	return false;
}

/* Every record of arr taken back, but those known already (a second read). */
static void take_back(const cJSON *arr)
{
	const cJSON *o;

	cJSON_ArrayForEach(o, arr)
		if (!known(o))
			sandbox_restore_one(o);
}

/*
 * At start, once the bots are loaded: take back the sandboxes a previous
 * daemon knew (sandbox-disk.c), so rm still refuses a bot whose sandbox
 * runs and rm --force still ends it. A record whose process is gone, or
 * whose pid now names another process (its start time differs), is
 * dropped. What is taken back is then written whole, and the log emptied;
 * then the cgroups of sandboxes no one follows any more go (the sweep,
 * sandbox-ops.c), which must know every sandbox still running first: so
 * when the files could not be read (out of descriptors, say), neither the
 * rewrite nor the sweep happens, and the files are read again before any
 * later rewrite.
 */
void sandboxes_restore(void)
{
	cleanup_cjson cJSON *arr = sandboxes_read();

	take_back(arr);
	if (sandboxes_unread()) {
		log_msg(LOG_WARNING,
			"cgroups of ended sandboxes are not looked for at this start: a sandbox "
			"the unread files list may still run in one");
		return;
	}
	sandboxes_save();
	sandbox_cgroups_sweep();
}

/*
 * The start could not read the files (sandboxes_unread()): read them
 * again, before anything would rewrite them. True once read, and what they
 * list that no one follows yet taken back.
 */
bool sandboxes_take_back(void)
{
	cleanup_cjson cJSON *arr = sandboxes_read();

	if (sandboxes_unread())
		return false;
	log_msg(LOG_INFO, "the sandboxes' files are read now: sandboxes they list are taken back");
	take_back(arr);
	return true;
}

/* ---- registration ------------------------------------------------------------ */

/* A process's parent, from /proc; -1 if it is gone. */
static pid_t parent_of(pid_t pid)
{
	pid_t ppid;
	char state;

	return proc_stat(pid, &state, &ppid, NULL) == 0 ? ppid : -1;
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

/* The live record of pid; one whose process has ended (its pid reused) goes. */
static struct sandbox_run *sandbox_of(struct bot *b, pid_t pid)
{
	struct sandbox_run *sb;

	LIST_FOREACH(sb, &b->sandboxes, entry) {
		if (sb->pid != pid)
			continue;
		if (pidfd_signal(sb->pidfd, 0) == 0)
			return sb;
		sandbox_end(sb);
		return NULL;
	}
	return NULL;
}

/*
 * The client's process, held: by the pidfd the kernel gives for the
 * connection (SO_PEERPIDFD, Linux 6.5), or else by the pid SO_PEERCRED
 * gave, checked to be still that client's (same uid, alive once held).
 */
static int hold_peer(struct request *r, pid_t pid, int *fd, unsigned long long *start)
{
	char state;
	pid_t ppid;

	*fd = server_peer_pidfd(r->peer);
	if (*fd >= 0) {
		if (proc_stat(pid, &state, &ppid, start) != 0 || pidfd_signal(*fd, 0) != 0) {
			close_fd(fd);
			return -1;
		}
		return 0;
	}
	return hold(pid, fd, start);
}

/* The command, kept for ps: an array of strings, capped. NULL: none or not strings. */
static cJSON *argv_copy(const cJSON *argv)
{
	cJSON *out = cJSON_CreateArray();
	const cJSON *v;
	size_t bytes = 0, n = 0;

	if (out == NULL)
		return NULL;
	cJSON_ArrayForEach(v, argv) {
		if (!cJSON_IsString(v) || v->valuestring == NULL)
			break;
		bytes += strlen(v->valuestring);
		if (++n > ARGV_MAX_ITEMS || bytes > ARGV_MAX_BYTES) {
			cJSON_AddItemToArray(out, cJSON_CreateString("..."));
			break;
		}
		cJSON_AddItemToArray(out, cJSON_CreateString(v->valuestring));
	}
	return out;
}

/*
 * A cgroup of its own for a new sandbox, with its bot's limits, named
 * BOT.RANDOM (unique across daemons that share the base, and restarts).
 * Without one that the configuration asks for, nothing runs: false after
 * failing the request, saying why and what to do.
 */
static bool sandbox_cgroup(struct request *r, struct sandbox_run *sb)
{
	char why[PATH_MAX + 256];
	uint64_t id;

	sb->memory_max = bot_memory_max(sb->bot);
	sb->pids_max = bot_pids_max(sb->bot);
	if (cgroup_mode() == CG_OFF)
		return true;
	if (getrandom(&id, sizeof id, 0) != (ssize_t)sizeof id) {
		bots_fail(r, "internal", "no random name for the sandbox's cgroup: %s",
			  strerror(errno));
		return false;
	}
	snprintf(sb->cg, sizeof sb->cg, "%s.%016llx", sb->bot->name, (unsigned long long)id);
	if (cgroup_sandbox_make(sb->cg, sb->memory_max, sb->pids_max, why, sizeof why) != 0) {
		sb->cg[0] = '\0';
		bots_fail(r, "no_cgroup",
			  "%s: nothing was run. agentfsd puts each sandbox in a cgroup of its own "
			  "with its bot's memory and pids limits; the config's \"cgroup\" names "
			  "where "
			  "(\"\": none, and no limits)",
			  why);
		return false;
	}
	return true;
}

/* Put pid, held and not yet running the command, in sb's cgroup; false after failing. */
static bool sandbox_enter(struct request *r, struct sandbox_run *sb, pid_t pid)
{
	char why[PATH_MAX + 256];

	if (sb->cg[0] == '\0' || cgroup_sandbox_enter(sb->cg, pid, why, sizeof why) == 0)
		return true;
	bots_fail(r, "no_cgroup", "%s: nothing was run", why);
	return false;
}

/* A new record of the client pid running b; NULL after failing the request. */
static struct sandbox_run *sandbox_add(struct request *r, struct bot *b, pid_t pid,
				       const cJSON *argv)
{
	struct sandbox_run *sb;

	if (b->nsandboxes >= SANDBOXES_MAX) {
		bots_fail(r, "limit", "bot %s has %d sandboxes running", b->name, SANDBOXES_MAX);
		return NULL;
	}
	sb = sandbox_new(b);
	if (sb == NULL) {
		bots_fail(r, "internal", "out of memory");
		return NULL;
	}
	sb->pid = pid;
	sb->uid = server_peer_uid(r->peer);
	sb->run_uid = b->uid;
	sb->started = time(NULL);
	sb->argv = argv != NULL ? argv_copy(argv) : NULL;
	if (hold_peer(r, pid, &sb->pidfd, &sb->pid_start) != 0 || !sandbox_watch(sb)) {
		sandbox_discard(sb);
		bots_fail(r, "internal", "cannot follow the client's process: %s", strerror(errno));
		return NULL;
	}
	if (!sandbox_cgroup(r, sb)) {
		sandbox_discard(sb);
		return NULL;
	}
	sandbox_insert(sb);
	return sb;
}

/*
 * Hold child, a child of sb's client (its bwrap, not started yet: it waits
 * for this answer), in place of any bwrap held before (a setup tried again).
 * False after failing the request.
 */
static bool sandbox_set_child(struct request *r, struct sandbox_run *sb, pid_t child)
{
	unsigned long long start;
	int fd;

	/* Checked once held: the pidfd is of a process whose parent is the client. */
	if (hold(child, &fd, &start) != 0 || parent_of(child) != sb->pid ||
	    proc_real_uid(child) != (long)sb->uid || pidfd_signal(fd, 0) != 0) {
		close_fd(&fd);
		bots_fail(r, "forbidden", "process %d is not a child this client started",
			  (int)child);
		return false;
	}
	close_fd(&sb->childfd);
	sb->child = child;
	sb->childfd = fd;
	sb->child_start = start;
	return true;
}

/* Hold init as sb's sandbox init (a client that reports it); false after failing the request. */
static bool sandbox_set_init(struct request *r, struct sandbox_run *sb, pid_t init)
{
	int fd;

	/* Checked again once held: the pidfd is of a process that descends from the client. */
	fd = pidfd_open_pid(init);
	if (fd < 0 || !descends_from(init, sb->pid) || pidfd_signal(fd, 0) != 0) {
		close_fd(&fd);
		bots_fail(r, "forbidden", "process %d is not a sandbox this client started",
			  (int)init);
		return false;
	}
	sb->init = init;
	sb->initfd = fd;
	return true;
}

static bool pid_field(struct request *r, const cJSON *req, const char *k, pid_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, k);

	*out = 0;
	if (v == NULL)
		return true;
	if (!cJSON_IsNumber(v) || v->valuedouble < 2 || v->valuedouble > 4194304 ||
	    v->valuedouble != (double)(pid_t)v->valuedouble) {
		bots_fail(r, "bad_value", "%s must be a process id", k);
		return false;
	}
	*out = (pid_t)v->valuedouble;
	return true;
}

/*
 * Register the peer's process as running b's commands, with child (its
 * bwrap, waiting), init (an older client's) and argv (for ps): the work of
 * exec_register, and of an exec_plan that brings a child. The bot was
 * found, and is not busy. False after failing the request.
 */
static bool sandbox_register(struct request *r, struct bot *b, pid_t child, pid_t init,
			     const cJSON *argv)
{
	pid_t pid = r->peer != NULL ? server_peer_pid(r->peer) : 0;
	struct sandbox_run *sb;
	bool added = false;

	if (pid <= 0) {
		bots_fail(r, "bad_request", "the client's pid is unknown");
		return false;
	}
	/*
	 * The peer's process must run as the peer's uid: a connect a sandbox's
	 * guard made for a command (exec-guard.c) carries the bot's uid but the
	 * pid of a process that is not the command's.
	 */
	if (proc_real_uid(pid) != (long)server_peer_uid(r->peer)) {
		bots_fail(r, "forbidden",
			  "process %d does not run as uid %u: only a process that connected for "
			  "itself "
			  "registers",
			  (int)pid, (unsigned)server_peer_uid(r->peer));
		return false;
	}
	sb = sandbox_of(b, pid);
	if (sb == NULL) {
		if ((sb = sandbox_add(r, b, pid, argv)) == NULL)
			return false;
		added = true;
	}
	/*
	 * The bwrap goes into the sandbox's cgroup before it starts, so all it
	 * starts is there; a client that runs the command itself (an unconfined
	 * bot's) goes in itself. Either is held by pidfd first: the pid written
	 * is that process's.
	 */
	if ((child > 0 && (!sandbox_set_child(r, sb, child) || !sandbox_enter(r, sb, child))) ||
	    (init > 0 && sb->initfd < 0 && !sandbox_set_init(r, sb, init)) ||
	    (added && child <= 0 && init <= 0 && !sandbox_enter(r, sb, pid))) {
		if (added)
			sandbox_end(sb);
		return false;
	}
	sandbox_log_add(sb);
	return true;
}

/*
 * `agentfs exec` says it runs the bot's commands, before it runs anything:
 * the client is the peer itself (SO_PEERPIDFD, or SO_PEERCRED); "argv" is
 * its command, for ps; "child" its bwrap, which waits for this answer
 * before it starts (sent again for each try of a setup); "pid" a sandbox's
 * init (an older client). A bot registers only for a danger-full-access
 * bot, which it runs itself, unconfined, as its own user.
 */
void bots_exec_register(struct request *r, const char *name, const cJSON *req)
{
	pid_t child, init;
	struct bot *b;

	if ((b = bot_find_visible(r, name)) == NULL)
		return;
	if (!pid_field(r, req, "child", &child) || !pid_field(r, req, "pid", &init))
		return;
	if (b->busy) {
		bots_fail(r, "busy", "bot %s is being changed; ask again", b->name);
		return;
	}
	if (bots_caller(r) != NULL && b->sandbox != SANDBOX_DANGER_FULL_ACCESS) {
		bots_fail(r, "forbidden",
			  "a bot runs only danger-full-access bots' commands itself; "
			  "the operator runs the others");
		return;
	}
	if (sandbox_register(r, b, child, init, cJSON_GetObjectItemCaseSensitive(req, "argv")))
		request_reply(r, NULL);
}

/*
 * exec_plan's "child" (and "argv"): a confined bot's plan registers the
 * client with its bwrap, forked and waiting, as exec_register would, so
 * `agentfs exec` needs one round trip, not two. The plan was decided (the
 * bot is confined, not busy, and the caller its operator); registered says
 * whether a child came. False after failing the request: nothing may run.
 */
bool sandbox_plan_register(struct request *r, struct bot *b, const cJSON *req, bool *registered)
{
	pid_t child;

	*registered = false;
	if (!pid_field(r, req, "child", &child))
		return false;
	if (child <= 0)
		return true;
	if (!sandbox_register(r, b, child, 0, cJSON_GetObjectItemCaseSensitive(req, "argv")))
		return false;
	*registered = true;
	return true;
}

/* SPDX-License-Identifier: MIT */
/*
 * The daemon's bots, private to the files that keep them. Who owns what:
 *
 *   bots.c      the registry (find, make, remove), create, fork, delete,
 *               ttl, bots_init and bots_stop; owns bots_state, the daemon's state
 *   authority.c who may see, make and hold what: pure functions over bots,
 *               no libevent and no I/O (tests/unit-authority.c)
 *   configure.c configure: a bot's new limits, keeping the mounts that stay
 *   queries.c   the requests that change no bot: list, show, status, log,
 *               changes, shutdown
 *   plan.c      the exec plan: what agentfs exec may run for a bot, and how
 *               (the bwrap, the checks), the state folder's modes for it
 *   roots.c     planning a bot's roots, checking and mounting them (on the
 *               job thread), progress of a scan
 *   jobs.c      the job threads: submit, run (a family's jobs one at a
 *               time), finish back on the loop
 *   sandbox.c   `agentfs exec` runs of a bot: registration, pidfds,
 *               kept on disk for the next daemon, ps, signals, rm --force
 *   restart.c   what outlives a mount or the daemon: lost mounts, stale
 *               mounts and leftovers at start, restoring bots
 *
 * Errors (agentfs.h): functions answer bool or 0/-errno and fill
 * `char *err, size_t errlen` (or why, len); a job carries errno, a code and
 * a message (job_seterr) that its done step sends with bots_fail().
 */
#ifndef AGENTFS_BOTS_INT_H
#define AGENTFS_BOTS_INT_H

#include "src/common/agentfs.h"

#include <limits.h>
#include <pthread.h>

/*
 * Job threads: a bot's family's jobs run one at a time, and bots' jobs take
 * at most all but one thread, so one bot's flood of creates (each a walk of
 * its roots) keeps neither another family nor the operator waiting.
 */
#define JOB_THREADS 4

/*
 * Work for a job thread (jobs.c). Made on the loop by job_new (or by a
 * worker, for a lost mount: job_post_done), owned by the job threads'
 * queue (bots_state.lock) from job_submit, by the one thread that took it until
 * run returns, then by the loop again: its done step answers the request
 * and frees it (job_finish); job_abort frees one that was never submitted.
 * run may change only the job and its bots (busy, so the loop leaves them
 * alone); jobs of other families run on other threads at the same time,
 * so run touches nothing shared but what locks its own (fusefs, accounts'
 * atomics, the log, bots_state.prog under bots_state.lock).
 */
struct job {
	struct job *next;
	/*
	 * Who it is for (jobs.c): its lane, the family of the bot it concerns
	 * (NULL: none), runs one job at a time; a bot's jobs (by_bot) take at
	 * most JOB_THREADS - 1 threads. Set before job_submit. A restore at
	 * start is its bot's family's too: families are restored side by
	 * side, each taking its own mounts from the handover (fs_adopt).
	 */
	const void *lane;
	bool by_bot;
	unsigned slot; /* the job thread it runs on: set under bots_state.lock when taken */
	void (*run)(struct job *);  /* on the job thread */
	void (*done)(struct job *); /* on the loop */
	struct request req;
	struct bot *bot;      /* the bot made, changed or restored */
	struct bot **victims; /* delete: the bot and its descendants */
	size_t nvictims;
	struct root *roots; /* configure: roots to mount (new) */
	size_t nroots;
	struct fs_mount **unmount; /* configure: mounts to end */
	size_t nunmount;
	struct fs_mount *lost; /* a mount that ended from outside */
	uid_t uid;	       /* the operator whose access is checked; 0: none */
	struct paths ceiling;  /* a bot creator's roots: implicit git roots must be inside */
	bool ceiling_set;
	const char *scanning; /* the root being mounted, for progress */
	int error;	      /* nonzero: the job failed */
	char code[32];
	char msg[1024];
};

/*
 * The daemon's state (bots.c): one, filled by bots_init before the loop
 * runs and emptied by bots_stop after it ends (the job threads joined
 * first). Each field says what protects it: "loop" fields are read and
 * written only on the event loop's thread; "lock" fields only under
 * bots_state.lock, which is held only for moments (never across a job's run or
 * a client's reply); a bot with busy set is being worked on by a job
 * thread, and the loop does not change it then.
 */
struct daemon_state {
	struct event_base *base;	      /* immutable after bots_init */
	struct config *cfg;		      /* immutable after bots_init */
	struct server *srv;		      /* immutable after bots_init */
	struct fs *fs;			      /* immutable after bots_init; fusefs locks its own */
	struct bots bots;		      /* loop */
	unsigned nbots;			      /* loop */
	time_t started;			      /* immutable after bots_init */
	pthread_t threads[JOB_THREADS];	      /* loop: jobs_start, jobs_stop join them */
	unsigned nthreads;		      /* loop: how many started */
	/* protects todo, todo_tail, done, lanes, bot_jobs, stopping, prog */
	pthread_mutex_t lock;
	pthread_cond_t cond;		      /* with lock: a job may be taken, or stopping */
	struct job *todo, **todo_tail, *done; /* lock */
	const void *lanes[JOB_THREADS];	      /* lock: the lanes of the jobs running */
	unsigned bot_jobs;		      /* lock: of them, a bot's */
	struct event *done_ev;		      /* immutable while the threads run */
	bool stopping;			      /* lock */
	bool shutdown_requested;	      /* loop */
	bool restarting;		      /* loop: SIGTERM with a store (bots_stop_requested) */
	struct fs_handover *handover;	      /* what the last agentfsd kept: loop, then the job
					       * thread's while restores run (restart.c) */
	unsigned restoring;		      /* loop: restore jobs not done yet */
	unsigned taken;			      /* loop: mounts they took over */
	unsigned restarts;		      /* restarts of this daemon's lineage (restart.c) */
	int restarts_fd;		      /* the memfd counting them, in the store; -1: none */
	int mountinfo_fd;		      /* loop (restart.c) */
	struct event *mountinfo_ev;	      /* loop (restart.c) */
	/*
	 * The scan of the root each job thread is mounting, for a client that
	 * asked for progress (lock): a job thread fills its own (its job's
	 * slot), the loop sends them all. job is cleared by job_finish, so the
	 * loop never uses a gone peer.
	 */
	struct {
		struct job *job;
		char root[PATH_MAX];
		unsigned long entries, repos;
		bool pending;
	} prog[JOB_THREADS];
	struct event *prog_ev; /* immutable while the threads run */
};
extern struct daemon_state bots_state;

/* authority.c: pure, over the list all */
struct bot *auth_find(const struct bots *all, const char *name);
bool auth_descends(const struct bots *all, const struct bot *b, const struct bot *anc);
bool auth_visible(const struct bots *all, const struct bot *caller, uid_t op, const struct bot *b);
bool auth_path_ok(const char *p);
bool auth_may_write(const struct bot *b, const char *path);
bool auth_may_read(const struct bot *b, const char *path);
bool auth_pod_allowed(const struct bot *b, const char *pod);
bool auth_within_ceiling(const struct bot *b, const struct bot *c, char *why, size_t len);
const struct bot *auth_family_top(const struct bots *all, const struct bot *b);
bool auth_family_room(const struct bots *all, unsigned nbots, unsigned max_bots,
		      const struct bot *caller, char *why, size_t len);
bool auth_operator_room(const struct bots *all, unsigned max_bots, uid_t uid, char *why,
			size_t len);

/* bots.c */
struct bot *bot_find(const char *name);
struct bot *bots_caller(struct request *r);
uid_t bots_operator_uid(struct request *r);
bool bot_visible(struct request *r, const struct bot *b);
struct bot *bot_find_visible(struct request *r, const char *name);
void bots_fail(struct request *r, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
bool bots_ceiling_ok(struct request *r, const struct bot *b);
bool bots_readable_ok(struct request *r, const struct bot *b);
bool bots_pods_by_operator(struct request *r, const char *name, const struct bot_spec *s);
void bots_save_state(void);
void bot_arm_ttl(struct bot *b);
bool bot_activate(struct bot *b, char *err, size_t errlen);
bool bot_socket_hold(struct bot *b, char *err, size_t errlen);
void bot_remove(struct bot *b);
bool bots_collect(struct bot *b, struct bot ***v, size_t *n);
bool bots_collect_idle(struct request *r, struct bot *b, struct bot ***v, size_t *n);
bool bot_delete(struct request *r, struct bot *b);

/* configure.c: bots_configure (agentfs.h) */

/* jobs.c */
int jobs_start(char *err, size_t errlen);
void jobs_stop(void);
void jobs_free(void);
struct job *job_new(struct request *r);
void job_submit(struct job *j);
void job_post_done(struct job *j);
void job_finish(struct job *j);
void job_abort(struct job *j);
void job_seterr(struct job *j, int e, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* roots.c */
int roots_init(char *err, size_t errlen);
void roots_stop(void);
int bot_plan_roots(struct bot *b);
const char *roots_folder_error(int e);
int roots_open_folder(const char *path);
int roots_allowed(int fd, const char *path, char *why, size_t len);
void bot_unmount_all(struct bot *b);
void root_mount(struct job *j, struct bot *b, struct root *rt);
void roots_mount_bot(struct job *j);
void roots_restore_bot(struct job *j);

/* sandbox.c */
#define FORCE_GRACE_S 3	  /* rm --force: SIGTERM, then SIGKILL after this long */
#define FORCE_GIVE_UP_S 3 /* ... and delete anyway after this much longer */
void sandboxes_free(struct bot *b);
void sandboxes_stop(void);
void sandboxes_handover(void);
void sandboxes_restore(void);
unsigned sandboxes_running(struct bot **v, size_t n);
void sandboxes_settle(struct bot **v, size_t n);
bool sandboxes_known(void);
void sandbox_running_msg(struct bot **v, size_t n, char *out, size_t len);
bool sandbox_force_delete(struct request *r, struct bot *b);
bool sandbox_plan_register(struct request *r, struct bot *b, const cJSON *req, bool *registered);
void sandboxes_json(const struct bot *b, cJSON *bot);
void sandbox_limits_json(const struct bot *b, cJSON *bot);
void sandbox_cgroups_json(cJSON *body);

/* restart.c */
void restart_check_lost(struct bot *only);
void restart_lost_cb(void *arg, struct fs_mount *m);
int restart_start(char *err, size_t errlen);
void restart_stop(void);
void restart_crash_point(const char *name);

#endif

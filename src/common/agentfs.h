/* SPDX-License-Identifier: MIT */
/*
 * agentfs: the daemon (agentfsd), the command-line client and their parts.
 * The daemon's bots are split by job; src/daemon/bots-int.h says which file owns
 * what. Below, each group of declarations names the file that defines it.
 *
 * Errors, one convention per boundary:
 *  - src functions answer bool (false: failed) or int (0, or -errno; a
 *    descriptor, or -1 with errno set) and, where a person reads the
 *    reason, fill `char *err, size_t errlen` with it;
 *  - a request's error goes to its client once, as {code, message}
 *    (proto_error, request_fail; agentfs-protocol(7) lists the codes);
 *  - a job (bots-int.h) carries errno, a code and a message from the job
 *    thread (job_seterr) to the loop, which sends them as a request's error;
 *  - fusefs (struct fs_error: positive errno and a message) and gitguard
 *    (negative errno) answers are turned into these where src calls them.
 */
#ifndef AGENTFS_AGENTFS_H
#define AGENTFS_AGENTFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#define PROTOCOL_VERSION 1
/* A sandbox's limits (memory_max in bytes, pids_max): the bounds a bot's may take. */
#define MEMORY_MIN (16ULL << 20)
#define MEMORY_MAX (1ULL << 50)
#define PIDS_MIN 16
#define PIDS_MAX 4194304
#define LINE_MAX_BYTES (1024 * 1024)
#define BOT_NAME_MAX 64
/*
 * Why a user may not use the control socket: the daemon's reply to a client
 * it refuses and the client's message on EACCES both say it, in these words.
 */
#define CONTROL_SOCKET_DENIED "root only"
/*
 * Why a confined bot may not run as root, in the words create, fork,
 * configure and exec all use: the bot's name, then where root came from.
 */
#define ROOT_BOT_REFUSED                                                                           \
	"bot %s would run as root (%s): a bot runs as root only with sandbox "                     \
	"danger-full-access. Make it again with --user USER, or give the folder to its user "      \
	"(chown)"

/* Automatic cleanup, as bubblewrap does it. */
static inline void cleanup_freep(void *p)
{
	free(*(void **)p);
}
static inline void cleanup_cjsonp(cJSON **p)
{
	cJSON_Delete(*p);
}
#define cleanup_free __attribute__((cleanup(cleanup_freep)))
#define cleanup_cjson __attribute__((cleanup(cleanup_cjsonp)))

struct event_base;
struct fs;
struct fs_mount;
struct peer;
struct server;
struct listener;
struct event;
struct sandbox_run;
struct account;

enum sandbox { SANDBOX_READ_ONLY, SANDBOX_WORKSPACE_WRITE, SANDBOX_DANGER_FULL_ACCESS };

/* A list of absolute, normalised paths. */
struct paths {
	char **v;
	size_t n;
};

/* One mounted root of a bot. */
struct root {
	char *path;	  /* the host folder */
	char *mountpoint; /* where the daemon mounted it */
	bool writable;
	bool kept;	    /* configure: carried over from the previous plan */
	struct fs_mount *m; /* NULL when not mounted */
	char *error;	    /* why it is not mounted */
	bool lost;	    /* unmounted from outside: configure (or a restart) mounts it again */
	bool was_lost;	    /* configure: mounting it again after it was lost */
};

/* A bot: what it may touch, where it is mounted, who made it. */
struct bot {
	char *name;
	char *creator; /* NULL: the operator */
	enum sandbox sandbox;
	char *folder;
	struct paths writable, readable;
	struct paths git_roots; /* a worktree's git folders, found when it was made */
	/*
	 * The Kubernetes pods that may have its roots (agentfs-csi), as
	 * "NAMESPACE/SERVICEACCOUNT": set by the operator only, never copied.
	 */
	struct paths pods;
	bool network;
	bool allow_new_repos;
	long ttl; /* seconds, 0: none */
	time_t created, expires;
	char *request_id; /* the id of the create or fork that made it */
	uid_t owner_uid;  /* uid of the operator that made it, or of its creator */
	uid_t uid;	  /* the user its commands run as (with uid_set) */
	bool uid_set;	  /* unset: its folder's owner, found when it is first mounted */
	struct root *roots;
	size_t nroots;
	unsigned mount_seq; /* the next mount point number: never reused */
	uint64_t memory_max; /* each sandbox's memory, bytes; 0: the config's default (sandbox.c) */
	uint64_t pids_max;   /* each sandbox's processes; 0: the config's default */
	struct listener *sock;
	struct event *ttl_ev;
	bool deleting;
	bool busy; /* the job thread works on it: the loop leaves it alone */
	/* Set before its first mount, freed by bot_free after its last: workers read them. */
	struct evring *ring;	 /* its events (events.c) */
	struct changes *changes; /* what its mounts changed (changes.c) */
	/* Set with ring and changes, put by bot_free: what it holds is charged to them. */
	struct account *fam; /* its family's: the bot the operator made at its top */
	struct account *op;  /* its operator's (owner_uid) */
	size_t state_bytes;  /* charged to them for its entry in the state file */
	LIST_HEAD(, sandbox_run) sandboxes; /* `agentfs exec` runs of it, while they live */
	unsigned nsandboxes;
	TAILQ_ENTRY(bot) entry;
};
TAILQ_HEAD(bots, bot);

/* The daemon's settings, from built-in defaults, the config file and options. */
struct config {
	char *socket_path;
	char *state_dir;
	char *mount_dir;
	enum sandbox default_sandbox;
	bool default_network;
	struct paths extra_writable;
	unsigned workers;
	unsigned poll_us; /* with poll_set: 0 never polls */
	bool poll_set;
	unsigned max_bots;
	unsigned max_clients;
	unsigned max_changes; /* paths kept per list of a bot's changes */
	unsigned changes_memory; /* MiB for every bot's change records together */
	char *group;	  /* operators besides root: its members (NULL: "agentfs", "": none) */
	gid_t group_gid;  /* with group_found */
	bool group_found; /* the group exists: the control socket is 0660 to it */
	char *bwrap;	  /* the bwrap exec runs (NULL: the first in PATH; plan.c) */
	char *log_target; /* NULL: chosen at start (log.c) */
	char *cgroup;	  /* where sandboxes' cgroups go (NULL: /agentfs; "": none; cgroup.c) */
	uint64_t default_memory_max; /* a sandbox's memory, bytes (0: half the host's) */
	uint64_t default_pids_max;   /* a sandbox's processes (0: 4096) */
	unsigned restart_grace; /* seconds the keeper waits for the next agentfsd; 0: no handover */
	bool uring;		/* bots' mounts served over io_uring (-o uring, fusefs/uring.c) */
	bool nopassthrough;	/* "passthrough": false: bots' mounts with -o nopassthrough */
	const char *config_file; /* read at start and on SIGHUP; NULL: none */
};
#define RESTART_GRACE_DEFAULT 60

/*
 * agentfs's exit statuses, as podman's and docker's: 125 when agentfs itself
 * refuses or fails (a usage error, the daemon's refusal or error, a daemon
 * out of reach), so a script never takes it for what a command exited with;
 * exec's 126 (found, could not be run) and 127 (not found) are the shells'.
 */
#define EXIT_AGENTFS 125
#define EXIT_CANNOT_RUN 126
#define EXIT_NOT_FOUND 127

/* agentfs.c */
/* Print "agentfs: MESSAGE" (escaped, cli_escape) on stderr and exit EXIT_AGENTFS. */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void die_usage(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));
void usage_error(const char *cmd, const char *arg, int opt) __attribute__((noreturn));
char *default_socket_path(void);
const char *cli_escape(const char *s);
/* JSON text with DEL, C1, bidi controls and U+2028/9 as \uXXXX: the same JSON, safe to print. */
const char *cli_json(const char *t);

/* cmd-exec.c */
int cmd_exec(const char *socket_path, int argc, char **argv);

/* cmd-ps.c */
int cmd_ps(const char *socket_path, bool json, int argc, char **argv);

/* cmd-mount.c */
int cmd_mount(int argc, char **argv);
int cmd_umount(int argc, char **argv);

/* cmd-audit.c */
int cmd_audit(int argc, char **argv);

/* cmd-bots.c */
int cmd_client(const char *socket_path, bool json, int argc, char **argv);

/* client.c */
/* Where agentfs exec binds agentfs itself inside a sandbox (bwrap's own /dev). */
#define EXEC_SELF "/dev/.agentfs-exec"
cJSON *client_request(const char *socket_path, cJSON *req);
char *client_exchange(const char *path, const char *text);
int client_connect(const char *path);
const char *client_daemon_fate(const char *path);
void client_lost(const char *path) __attribute__((noreturn));
int client_error(const cJSON *rep, const char *raw);
void client_fail(cJSON *rep) __attribute__((noreturn));

/* cmd-log.c */
int cmd_events(const char *socket_path, bool json, int argc, char **argv);

/* Milliseconds on the monotonic clock (inline: the keeper links no util.c). */
static inline int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* util.c */
struct fs_event;
double event_now(void);
cJSON *event_from_fs(const struct fs_event *ev, const char *root);
void event_format(const cJSON *o, char *buf, size_t len);
int path_normalise(const char *in, char **out);
bool path_within(const char *inner, const char *outer);
bool bot_name_ok(const char *s);
bool pod_name_ok(const char *s);
bool paths_contains(const struct paths *ps, const char *p);
int paths_add(struct paths *ps, const char *p);
void paths_free(struct paths *ps);
int mkdir_p(const char *path, mode_t mode);
int write_file_atomic(const char *dir, const char *name, const char *data, size_t len);
int write_file_replace(const char *dir, const char *name, const char *data, size_t len,
		       bool durable);
const char *sandbox_name(enum sandbox s);
int sandbox_parse(const char *s, enum sandbox *out);
int user_parse(const char *s, uid_t *out);
char *user_name(uid_t uid);
ssize_t read_text(int dirfd, const char *name, char *buf, size_t cap);
void raise_nofile(void);
int proc_stat(pid_t pid, char *state, pid_t *ppid, unsigned long long *start);
long proc_real_uid(pid_t pid);
bool prog_beside_self(const char *name, char *buf);
char *prog_trusted(const char *path, char *why, size_t len);
int dir_trusted(const char *path, const char *shown, const char *what, char *why, size_t len);
char *prog_find_trusted(const char *prog, const char *search, char *why, size_t len);

/* fdpass.c (agentfs-enter compiles it too) */
struct sockaddr_un;
int fdpass_send(int s, const struct sockaddr_un *to, socklen_t tolen, const char *msg, int fd);

/* mounts.c: the file system type of the mount fd is on ("" if not found) */
void mounts_fstype(int fd, char *out, size_t len);

/* log.c */
void log_msg(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void log_text(int prio, const char *msg);
int log_open(const char *spec, bool foreground, const char *state_dir, char *err, size_t len);
bool log_target_ok(const char *spec);
const char *log_where(void);
bool log_uses_stderr(void);
void log_set_name(const char *name);

/* fdstore.c: descriptors that outlive agentfsd (systemd's fd store, or the keeper) */
enum fdstore_kind { FDSTORE_NONE, FDSTORE_KEEPER, FDSTORE_SYSTEMD };
int fdstore_early(void);
int fdstore_open(const char *state_dir, unsigned grace, char *err, size_t errlen);
enum fdstore_kind fdstore_kind(void);
int fdstore_put(const char *name, int fd);
int fdstore_give(const char *name, int fd);
void fdstore_back(const char *name, int fd, bool give);
void fdstore_forget(const char *name);
void fdstore_drop(const char *name);
int fdstore_take(const char *name);
void fdstore_handed_each(bool (*fn)(void *arg, const char *name, int fd), void *arg);
void fdstore_handed_done(void);
void fdstore_notify(const char *msg);
void fdstore_release(const char *state_dir);
void fdstore_set_grace(unsigned seconds);
void fdstore_watch(struct event_base *base);
void fdstore_unwatch(void);
ssize_t fdstore_recv(int s, char *buf, size_t len, int *fd);

/* keeper.c: agentfsd --keeper, and how agentfsd starts and reaches it */
struct sockaddr_un;
int keeper_main(int argc, char **argv);
int keeper_start(const char *self, const struct sockaddr_un *sa, const char *state_dir,
		 unsigned grace, char *err, size_t errlen);
int keeper_connect(const struct sockaddr_un *sa);

/* server.c (the peers) and listen.c (the sockets: server_listen, server_listen_hold,
 * server_accept_start, server_unlisten, server_listener_path, server_shutdown,
 * server_handover) */
struct server *server_create(struct event_base *base, struct config *cfg);
void server_handover(struct server *srv);
int server_listen(struct server *srv, const char *path, struct bot *bot, char *err, size_t errlen);
int server_listen_hold(struct server *srv, const char *path, struct bot *bot, char *err,
		       size_t errlen);
int server_accept_start(struct listener *ls);
bool server_closed(const struct server *srv);
void server_unlisten(struct server *srv, struct bot *bot);
const char *server_listener_path(const struct listener *ls);
void server_reply(struct peer *p, cJSON *reply);
void server_peer_resume(struct peer *p);
void server_peer_stream(struct peer *p, void (*closed)(void *arg), void *arg);
void server_peer_end(struct peer *p);
void server_peer_ref(struct peer *p);
void server_peer_unref(struct peer *p);
bool server_peer_alive(const struct peer *p);
struct bot *server_peer_bot(const struct peer *p);
uid_t server_peer_uid(const struct peer *p);
pid_t server_peer_pid(const struct peer *p);
int server_peer_pidfd(const struct peer *p);
void server_peer_accounts(const struct peer *p, struct account **fam, struct account **op);
void server_shutdown(struct server *srv);
void server_drain(struct server *srv, struct event_base *base);
void server_free(struct server *srv);
unsigned server_clients(const struct server *srv);

/* proto.c */
bool proto_dispatch(struct server *srv, struct peer *p, const char *line, size_t len);
cJSON *proto_error(const char *code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
cJSON *proto_error_line(const char *code, const char *msg);

/* The daemon's requests: struct request and struct bot_spec (bots-int.h lists the files) */
/* A request being answered: who asked and the id to echo. */
struct request {
	struct peer *peer; /* NULL: the daemon itself (ttl expiry) */
	cJSON *id;	   /* a copy of the request's "id", or NULL */
	bool progress;	   /* send progress lines before the reply */
};
/* The fields of create, configure and fork; has_* says which were given. */
struct bot_spec {
	char *name, *as, *folder;
	bool has_sandbox, has_writable, has_readable, has_network, has_allow_new_repos, has_ttl;
	enum sandbox sandbox;
	struct paths writable, readable;
	bool network, allow_new_repos;
	long ttl;
	bool has_user;
	uid_t user;
	bool has_pods;
	struct paths pods;
	bool has_memory_max, has_pids_max;
	uint64_t memory_max, pids_max; /* 0: the default */
};
/* bots.c */
int bots_init(struct event_base *base, struct config *cfg, struct server *srv, char *err,
	      size_t errlen);
void bots_stop(void);
bool bots_create(struct request *r, struct bot_spec *s);
void bots_stop_requested(int sig);
bool bots_restarting(void);
void bots_handover(void);
bool bots_fork(struct request *r, struct bot_spec *s);
bool bots_delete(struct request *r, const char *name, bool force);
/* configure.c */
bool bots_configure(struct request *r, struct bot_spec *s);
/* sandbox.c */
void bots_exec_register(struct request *r, const char *name, const cJSON *req);
void bots_ps(struct request *r);
uint64_t bot_memory_max(const struct bot *b);
uint64_t bot_pids_max(const struct bot *b);
bool sandbox_limits_within(const struct bot *b, const struct bot *c, char *why, size_t len);
/* queries.c */
void bots_list(struct request *r);
void bots_show(struct request *r, const char *name);
void bots_status(struct request *r);
void bots_shutdown(struct request *r);
bool bots_log(struct request *r, const char *name, uint64_t since, bool follow);
void bots_changes(struct request *r, const char *name, uint64_t since, const char *after,
		  bool mark);
/* plan.c */
void bots_exec_plan(struct request *r, const cJSON *req, const char *pod);
int plan_config(struct config *cfg, const cJSON *v, char *err, size_t len);
int plan_dirs(const struct config *cfg, char *err, size_t len);
/* proto.c */
void request_reply(struct request *r, cJSON *body);
void request_fail(struct request *r, cJSON *error);
void bot_spec_free(struct bot_spec *s);

/* events.c */
struct evring;
struct fs_event;
int events_init(struct event_base *base, struct bots *bots);
void events_stop(void);
struct evring *events_ring_new(const char *bot);
void events_ring_free(struct evring *r);
void events_refused(struct bot *b, struct fs_mount *m, const struct fs_event *fe);
void events_bot(struct bot *b, const char *type, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
bool events_log(struct request *r, struct bot *b, uint64_t since, bool follow);

/* accounts.c: who holds how much of what the daemon shares (agentfsd(8), LIMITS) */
enum acct_res { AR_OUTPUT, AR_STREAMS, AR_CHANGES, AR_STATE, AR_N };
#define ACCT_OUTPUT_MAX (256ull << 20) /* bytes of replies waiting for their clients */
#define ACCT_STREAMS_MAX 256	       /* log --follow streams */
void accounts_init(const struct config *cfg);
unsigned long long acct_share(unsigned long long cap, unsigned long long min);
unsigned long long acct_cap(enum acct_res r);
struct account *acct_family(const char *top);
struct account *acct_operator(uid_t uid);
struct account *acct_hold(struct account *a);
void acct_put(struct account *a);
bool acct_take(struct account *fam, struct account *op, enum acct_res r, unsigned long long n,
	       char *why, size_t len);
void acct_give(struct account *fam, struct account *op, enum acct_res r, unsigned long long n);
void acct_force(struct account *fam, struct account *op, enum acct_res r, unsigned long long n);
unsigned long long acct_used(const struct account *a, enum acct_res r);
struct fs_group;
struct fs_group *acct_fs_group(const struct account *a);

/* changes.c */
struct changes;
int changes_init(const struct config *cfg);
void changes_stop(void);
struct changes *changes_new(const char *bot, bool restore, struct account *fam, struct account *op,
			    uid_t owner);
void changes_forget(struct changes *cs);
void changes_free(struct changes *cs);
void changes_record(struct changes *cs, struct fs_mount *m, const struct fs_event *ev);
void changes_list(struct request *r, struct changes *cs, const char *asker, uint64_t since,
		  const char *after);
void changes_mark(struct request *r, struct changes *cs, const char *asker);

/* state.c */
#define STATE_MAX (64 * 1024 * 1024) /* bots.json: the most start reads, and so writes */
#define STATE_GIT_ROOTS_ROOM (2 * (6 * 4096 + 4)) /* a create's git folders, found later */
size_t state_entry_size(const struct bot *b);
int state_save(const struct config *cfg, struct bots *bots);
int state_load(const struct config *cfg, struct bots *bots, char *err, size_t errlen);
cJSON *bot_to_json(const struct bot *b, bool full);
void bot_free(struct bot *b);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * agentfsd.json: the daemon's configuration, read whole at start and on
 * SIGHUP (config_reload), every field optional, every error naming its
 * field (agentfsd(8) CONFIGURATION).
 */
#include "src/daemon/conffile.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

static int cfg_paths(const cJSON *v, struct paths *out, char *err, size_t len)
{
	const cJSON *e;
	char *p;

	if (!cJSON_IsArray(v)) {
		snprintf(err, len, "config field \"writable\" must be an array of absolute paths");
		return -EINVAL;
	}
	cJSON_ArrayForEach(e, v) {
		if (!cJSON_IsString(e) || path_normalise(e->valuestring, &p) != 0) {
			snprintf(err, len,
				 "config field \"writable\" must be an array of absolute "
				 "paths");
			return -EINVAL;
		}
		paths_add(out, p);
		free(p);
	}
	return 0;
}

static int cfg_uint(const cJSON *v, const char *name, unsigned lo, unsigned hi, unsigned *out,
		    char *err, size_t len)
{
	if (!cJSON_IsNumber(v) || v->valuedouble < lo || v->valuedouble > hi ||
	    v->valuedouble != (double)(unsigned)v->valuedouble) {
		snprintf(err, len, "config field \"%s\" must be a whole number from %u to %u", name,
			 lo, hi);
		return -EINVAL;
	}
	*out = (unsigned)v->valuedouble;
	return 0;
}

static int cfg_bool(const cJSON *v, const char *name, bool *out, char *err, size_t len)
{
	if (!cJSON_IsBool(v)) {
		snprintf(err, len, "config field \"%s\" must be true or false", name);
		return -EINVAL;
	}
	*out = cJSON_IsTrue(v);
	return 0;
}

/* What main and config_read allocated in CFG (an exit with it held is a leak to LeakSanitizer). */
void config_free(struct config *cfg)
{
	free(cfg->socket_path);
	free(cfg->state_dir);
	free(cfg->mount_dir);
	free(cfg->bwrap);
	free(cfg->cgroup);
	paths_free(&cfg->extra_writable);
	free(cfg->group);
	free(cfg->log_target);
}

/*
 * Read the config file as a raw document whose every field is optional,
 * then fold it into the effective settings. Unknown or ill-typed fields are
 * an error that names the field.
 */
int config_read(struct config *cfg, const char *file, char *err, size_t len)
{
	cleanup_cjson cJSON *doc = NULL;
	cleanup_free char *text = NULL;
	const cJSON *v;
	size_t cap = 0, n = 0;
	ssize_t r;
	int fd;

	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, len, "cannot read config %s: %s", file, strerror(errno));
		return -errno;
	}
	for (;;) {
		if (n + 4096 > cap) {
			char *t;

			if (cap > 16 * 1024 * 1024) {
				close(fd);
				snprintf(err, len, "config %s is larger than 16 MiB", file);
				return -EFBIG;
			}
			t = realloc(text, cap = cap * 2 + 8192);
			if (t == NULL) {
				close(fd);
				return -ENOMEM;
			}
			text = t;
		}
		r = read(fd, text + n, cap - n - 1);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	text[n] = '\0';
	doc = cJSON_ParseWithLength(text, n);
	if (doc == NULL || !cJSON_IsObject(doc)) {
		snprintf(err, len, "config %s is not a JSON object", file);
		return -EINVAL;
	}
	for (v = doc->child; v != NULL; v = v->next) {
		if (strcmp(v->string, "default_sandbox") == 0) {
			if (!cJSON_IsString(v) ||
			    sandbox_parse(v->valuestring, &cfg->default_sandbox) != 0) {
				snprintf(err, len,
					 "config field \"default_sandbox\" must be "
					 "read-only, workspace-write or danger-full-access");
				return -EINVAL;
			}
		} else if (strcmp(v->string, "default_network") == 0) {
			if (cfg_bool(v, "default_network", &cfg->default_network, err, len) != 0)
				return -EINVAL;
		} else if (strcmp(v->string, "writable") == 0) {
			if (cfg_paths(v, &cfg->extra_writable, err, len) != 0)
				return -EINVAL;
		} else if (strcmp(v->string, "workers") == 0) {
			if (cfg_uint(v, "workers", 1, 64, &cfg->workers, err, len) != 0)
				return -EINVAL;
		} else if (strcmp(v->string, "uring") == 0) {
			if (cfg_bool(v, "uring", &cfg->uring, err, len) != 0)
				return -EINVAL;
		} else if (strcmp(v->string, "passthrough") == 0) {
			bool pt;

			if (cfg_bool(v, "passthrough", &pt, err, len) != 0)
				return -EINVAL;
			cfg->nopassthrough = !pt;
		} else if (strcmp(v->string, "poll_us") == 0) {
			if (cfg_uint(v, "poll_us", 0, 10000, &cfg->poll_us, err, len) != 0)
				return -EINVAL;
			cfg->poll_set = true;
		} else if (strcmp(v->string, "max_bots") == 0) {
			if (cfg_uint(v, "max_bots", 1, 900, &cfg->max_bots, err, len) != 0)
				return -EINVAL;
		} else if (strcmp(v->string, "group") == 0) {
			if (!cJSON_IsString(v) || strlen(v->valuestring) > 64 ||
			    strpbrk(v->valuestring, "\"\\:, \t\n") != NULL) {
				snprintf(err, len,
					 "config field \"group\" must be a group name, or \"\"");
				return -EINVAL;
			}
			free(cfg->group);
			cfg->group = strdup(v->valuestring);
			if (cfg->group == NULL)
				return -ENOMEM;
		} else if (strcmp(v->string, "max_clients") == 0) {
			if (cfg_uint(v, "max_clients", 1, 100000, &cfg->max_clients, err, len) != 0)
				return -EINVAL;
		} else if (strcmp(v->string, "log_target") == 0) {
			if (!cJSON_IsString(v) || !log_target_ok(v->valuestring)) {
				snprintf(err, len,
					 "config field \"log_target\" must be \"journal\", "
					 "\"syslog\", \"stderr\" or \"file:/ABSOLUTE/PATH\"");
				return -EINVAL;
			}
			free(cfg->log_target);
			cfg->log_target = strdup(v->valuestring);
			if (cfg->log_target == NULL)
				return -ENOMEM;
		} else if (strcmp(v->string, "max_changes") == 0) {
			if (cfg_uint(v, "max_changes", 1, 10000000, &cfg->max_changes, err, len) !=
			    0)
				return -EINVAL;
		} else if (strcmp(v->string, "changes_memory") == 0) {
			if (cfg_uint(v, "changes_memory", 16, 65536, &cfg->changes_memory, err,
				     len) != 0)
				return -EINVAL;
		} else if (strcmp(v->string, "restart_grace") == 0) {
			if (cfg_uint(v, "restart_grace", 0, 86400, &cfg->restart_grace, err, len) !=
			    0)
				return -EINVAL;
		} else if ((r = plan_config(cfg, v, err, len)) != 0) {
			if (r < 0)
				return (int)r;
		} else {
			snprintf(err, len, "config has an unknown field \"%.64s\"", v->string);
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * The operators besides root: the members of the configured group, if it
 * exists; a group named in the config that does not exist is an error.
 */
int operators_group(struct config *cfg, char *err, size_t len)
{
	const char *name = cfg->group != NULL ? cfg->group : "agentfs";
	struct group gr, *grp = NULL;
	char buf[16384];
	int r;

	if (*name == '\0')
		return 0;
	r = getgrnam_r(name, &gr, buf, sizeof buf, &grp);
	if (grp != NULL) {
		cfg->group_gid = grp->gr_gid;
		cfg->group_found = true;
		return 0;
	}
	if (cfg->group == NULL)
		return 0; /* the default group is optional: without it, root only */
	snprintf(err, len, "config field \"group\": no group named %s%s%s", name,
		 r != 0 ? ": " : "", r != 0 ? strerror(r) : "");
	return -ENOENT;
}

/* Two optional settings the same (both unset, or equal) */
static bool same_str(const char *a, const char *b)
{
	return a == NULL ? b == NULL : b != NULL && strcmp(a, b) == 0;
}

/*
 * SIGHUP: the configuration file read again, whole, into a copy; if it is
 * valid, what can change while bots run takes effect at once (defaults
 * for new bots, limits, the restart grace); workers, poll_us and group
 * need a restart, and say so. Runs on the loop, which is what reads these.
 */
int config_reload(struct config *cfg, char *err, size_t len)
{
	struct config n = CONFIG_DEFAULTS;
	struct paths tmp;

	if (cfg->config_file != NULL && config_read(&n, cfg->config_file, err, len) != 0) {
		config_free(&n);
		return -EINVAL;
	}
	if (n.workers != cfg->workers || n.poll_set != cfg->poll_set || n.uring != cfg->uring ||
	    n.nopassthrough != cfg->nopassthrough ||
	    (n.poll_set && n.poll_us != cfg->poll_us) || !same_str(n.group, cfg->group) ||
	    n.max_changes != cfg->max_changes || n.changes_memory != cfg->changes_memory ||
	    !same_str(n.bwrap, cfg->bwrap) || !same_str(n.log_target, cfg->log_target))
		log_msg(LOG_WARNING,
			"SIGHUP: workers, poll_us, uring, passthrough, max_changes, changes_memory, "
			"group, bwrap and log_target take effect at the next start (systemctl "
			"restart agentfsd keeps the mounts; uring and passthrough apply to mounts "
			"made after it)");
	cfg->default_sandbox = n.default_sandbox;
	cfg->default_network = n.default_network;
	tmp = cfg->extra_writable;
	cfg->extra_writable = n.extra_writable;
	n.extra_writable = tmp;
	cfg->max_bots = n.max_bots;
	cfg->max_clients = n.max_clients;
	cfg->default_memory_max = n.default_memory_max;
	cfg->default_pids_max = n.default_pids_max;
	cfg->restart_grace = n.restart_grace;
	fdstore_set_grace(n.restart_grace);
	config_free(&n);
	return 0;
}

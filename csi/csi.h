/* SPDX-License-Identifier: MIT */
/*
 * agentfs-csi: the Kubernetes CSI node plugin. The gRPC side (main.cc)
 * only turns requests into these calls and their codes into statuses;
 * everything that mounts, and every decision, is here, in C:
 *
 *   node.c   publish (a bot's root, or its socket, into a pod's volume),
 *            unpublish, and the sweep at start of targets whose pod is gone
 *   afsd.c   agentfsd's JSON socket: one request, one reply, with a deadline
 *
 * agentfsd stays the one owner of mounts and bots: the plugin only binds
 * what agentfsd already mounted, and asks agentfsd (exec_plan with the
 * pod) whether the pod may have it.
 */
#ifndef AGENTFS_CSI_H
#define AGENTFS_CSI_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CSI_DRIVER_NAME "csi.agentfs.local"

/* Results: gRPC status codes, so main.cc passes them on as they are. */
enum csi_code {
	CSI_OK = 0,
	CSI_INVALID_ARGUMENT = 3,
	CSI_NOT_FOUND = 5,
	CSI_ALREADY_EXISTS = 6,
	CSI_PERMISSION_DENIED = 7,
	CSI_FAILED_PRECONDITION = 9,
	CSI_INTERNAL = 13,
	CSI_UNAVAILABLE = 14,
};

/* The plugin's settings, fixed at start. */
struct csi_conf {
	const char *socket;	 /* agentfsd's control socket */
	const char *kubelet_dir; /* targets must lie under it; normalised, no symlink */
};

/* One volume_context entry. */
struct csi_attr {
	const char *key, *value;
};

/* What NodePublishVolume asks, in C. */
struct csi_publish_req {
	const char *volume_id, *target_path;
	bool readonly;	      /* the request's readonly */
	bool has_capability;  /* volume_capability given */
	bool block;	      /* its access type is block */
	bool reader_only;     /* its access mode is a READER_ONLY one */
	size_t nmount_flags;  /* mount flags asked for: none are served */
	const struct csi_attr *attrs;
	size_t nattrs;
};

/* node.c: each fills msg (for the caller, in words) and answers a code. */
int csi_publish(const struct csi_conf *c, const struct csi_publish_req *p, char *msg, size_t len);
int csi_unpublish(const struct csi_conf *c, const char *volume_id, const char *target, char *msg,
		  size_t len);
unsigned csi_sweep(const struct csi_conf *c);

/*
 * afsd.c: csi_probe asks agentfsd its version (ready when it answers);
 * csi_afsd_request sends req (not freed) and parses the reply line: OK
 * with *reply set, UNAVAILABLE when agentfsd cannot be reached or does
 * not answer in time, INTERNAL for a reply that is not JSON.
 */
struct cJSON;
int csi_probe(const struct csi_conf *c, char *msg, size_t len);
int csi_afsd_request(const struct csi_conf *c, const struct cJSON *req, struct cJSON **reply,
		     char *msg, size_t len);

#ifdef __cplusplus
}
#endif

#endif

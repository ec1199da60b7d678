/* SPDX-License-Identifier: MIT */
/*
 * Internals of agentfs audit shared by audit.c (the walk, hooks, state,
 * config) and audit-git.c (refs, option files, names, gitlinks, lesskey).
 */
#ifndef GITGUARD_AUDIT_INT_H
#define GITGUARD_AUDIT_INT_H

#include "gitguard/guard-int.h"

/* One audit in progress */
struct audit {
	guard_audit_fn fn;
	void *arg;
	unsigned long entries;
	unsigned long findings;
	size_t hashsz; /* of the git folder being read: 20, or 32 for SHA-256 */
	int errors;
	int code; /* the first error's negative errno */
	struct guard_err *err;
	unsigned refs_depth; /* audit-git.c's walk of one refs/ folder */
	unsigned refs_files;
};

/* audit.c */
void audit_found(struct audit *a, const char *path, const char *kind, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void audit_failed(struct audit *a, const char *path, const char *what, int e);
/* A + "/" + B, malloc'd; NULL when out of memory */
char *audit_join(const char *a, const char *b);
/* The folder NAME in DFD for readdir, no link followed; -1 with errno */
int audit_open_dir(int dfd, const char *name);
/* Every entry of the folder NAME in DFD but "." and "..", as FN(a, dfd of it, entry name, path) */
void audit_each_entry(struct audit *a, int dfd, const char *name, const char *path,
		      void (*fn)(struct audit *, int, const char *, const char *));

/* audit-git.c */
void audit_refs(struct audit *a, int gfd, const char *path);
void audit_names(struct audit *a, int gfd, const char *path);
void audit_midx(struct audit *a, int gfd, const char *path);
void audit_state_refs(struct audit *a, int dfd, const char *name, const char *path);
void audit_merge_rr(struct audit *a, int dfd, const char *name, const char *path);
void audit_update_ref_line(struct audit *a, const char *path, const char *line);
void audit_gitlinks(struct audit *a, int gfd, int topfd, const char *top);
void audit_index_changes(struct audit *a, int gfd, int topfd, const char *top);
void audit_home_file(struct audit *a, int dfd, const char *name, const char *path);

#endif

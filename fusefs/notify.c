/* SPDX-License-Identifier: MIT */
/*
 * Cross-mount cache invalidations: a change through one mount is told to
 * every other mount of the same files, from the notifier thread.
 */
#include "fusefs/fs-int.h"

#include <stdlib.h>
#include <string.h>

static fuse_ino_t nodeid(struct fs_mount *m, struct inode *ino)
{
	return node_id(m, ino);
}

static void inval_queue(struct fs *fs, struct fs_mount *m, fuse_ino_t ino, fuse_ino_t parent,
			const char *name)
{
	size_t len = name != NULL ? strlen(name) : 0;
	struct inval *iv, *it;

	pthread_mutex_lock(&fs->nt_lock);
	for (it = fs->nt_head; it != NULL; it = it->next) {
		if (it->m == m && it->ino == ino && it->parent == parent &&
		    (name == NULL || strcmp(it->name, name) == 0)) {
			pthread_mutex_unlock(&fs->nt_lock);
			return;
		}
	}
	iv = malloc(sizeof *iv + len + 1);
	if (iv != NULL) {
		iv->next = NULL;
		iv->m = m;
		iv->ino = ino;
		iv->parent = parent;
		memcpy(iv->name, name != NULL ? name : "", len + 1);
		*fs->nt_tail = iv;
		fs->nt_tail = &iv->next;
		pthread_cond_signal(&fs->nt_cond);
	}
	pthread_mutex_unlock(&fs->nt_lock);
}

/*
 * After a change through mount `from`, tell every other mount that knows
 * the same inode or folder to drop its kernel cache. Sent from the notifier
 * thread, never a worker: fuse_lowlevel.h warns that can deadlock.
 */
void fs_invalidate(struct fs_mount *from, struct inode *ino, struct inode *parent, const char *name)
{
	struct fs *fs = from->fs;
	struct fs_mount *m;
	struct inode *o;
	fuse_ino_t target[2];

	if (atomic_load_explicit(&from->siblings, memory_order_relaxed) == 0)
		return;
	pthread_mutex_lock(&fs->lock);
	for (m = fs->mounts; m != NULL; m = m->next) {
		if (m == from || m->ended || m->source_dev != from->source_dev)
			continue;
		target[0] = target[1] = 0;
		if (ino != NULL && (o = inode_find(m, ino->dev, ino->ino)) != NULL)
			target[0] = nodeid(m, o);
		if (parent != NULL && (o = inode_find(m, parent->dev, parent->ino)) != NULL)
			target[1] = nodeid(m, o);
		pthread_mutex_unlock(&fs->lock);
		if (target[0] != 0)
			inval_queue(fs, m, target[0], 0, NULL);
		if (target[1] != 0) {
			inval_queue(fs, m, target[1], 0, NULL);
			if (name != NULL)
				inval_queue(fs, m, 0, target[1], name);
		}
		pthread_mutex_lock(&fs->lock);
	}
	pthread_mutex_unlock(&fs->lock);
}

/*
 * NAME in PARENT went behind the kernel's back (the server removed it on
 * its own): every mount that knows PARENT, this one too, drops the entry.
 */
void fs_invalidate_entry(struct fs_mount *m, struct inode *parent, const char *name)
{
	fuse_ino_t id;

	pthread_mutex_lock(&m->fs->lock);
	id = nodeid(m, parent);
	pthread_mutex_unlock(&m->fs->lock);
	inval_queue(m->fs, m, 0, id, name);
	fs_invalidate(m, NULL, parent, name);
}

void *notify_thread(void *arg)
{
	struct fs *fs = arg;
	struct inval *iv;

	pthread_mutex_lock(&fs->nt_lock);
	while (!fs->stopping) {
		if ((iv = fs->nt_head) == NULL) {
			pthread_cond_wait(&fs->nt_cond, &fs->nt_lock);
			continue;
		}
		fs->nt_head = iv->next;
		if (fs->nt_head == NULL)
			fs->nt_tail = &fs->nt_head;
		fs->nt_current = iv->m;
		pthread_mutex_unlock(&fs->nt_lock);
		if (iv->parent != 0)
			fuse_lowlevel_notify_inval_entry(iv->m->se, iv->parent, iv->name,
							 strlen(iv->name));
		else
			fuse_lowlevel_notify_inval_inode(iv->m->se, iv->ino, 0, 0);
		free(iv);
		pthread_mutex_lock(&fs->nt_lock);
		fs->nt_current = NULL;
		pthread_cond_broadcast(&fs->nt_cond);
	}
	pthread_mutex_unlock(&fs->nt_lock);
	return NULL;
}

/* Drop queued invalidations for m and wait until none is being sent. */
void notify_forget_mount(struct fs *fs, struct fs_mount *m)
{
	struct inval **pp, *iv;

	pthread_mutex_lock(&fs->nt_lock);
	for (pp = &fs->nt_head; (iv = *pp) != NULL;) {
		if (iv->m == m) {
			*pp = iv->next;
			free(iv);
		} else {
			pp = &iv->next;
		}
	}
	fs->nt_tail = &fs->nt_head;
	while (*fs->nt_tail != NULL)
		fs->nt_tail = &(*fs->nt_tail)->next;
	while (fs->nt_current == m)
		pthread_cond_wait(&fs->nt_cond, &fs->nt_lock);
	pthread_mutex_unlock(&fs->nt_lock);
}

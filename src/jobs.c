/* SPDX-License-Identifier: MIT */
/*
 * The job thread: anything that touches a path a client gave, or a mount,
 * runs here, never on the event loop, so a hung mount or a hostile path
 * cannot stop it. A job runs on this thread, then its done step runs back
 * on the loop (job_done), in the order the jobs finished.
 */
#include "src/bots-int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <event2/event.h>

void job_seterr(struct job *j, int e, const char *code, const char *fmt, ...)
{
	va_list ap;

	if (j->error != 0)
		return;
	j->error = e != 0 ? e : EINVAL;
	snprintf(j->code, sizeof j->code, "%s", code);
	va_start(ap, fmt);
	vsnprintf(j->msg, sizeof j->msg, fmt, ap);
	va_end(ap);
}

void job_finish(struct job *j)
{
	pthread_mutex_lock(&ds.lock);
	if (ds.prog.job == j)
		ds.prog.job = NULL;
	pthread_mutex_unlock(&ds.lock);
	if (j->req.peer != NULL) {
		server_peer_resume(j->req.peer);
		server_peer_unref(j->req.peer);
	}
	cJSON_Delete(j->req.id);
	paths_free(&j->ceiling);
	free(j->victims);
	free(j->unmount);
	free(j);
}

/* Drop a job that was never submitted; the request is answered by the caller. */
void job_abort(struct job *j)
{
	if (j->req.peer != NULL)
		server_peer_unref(j->req.peer);
	free(j->victims);
	free(j->unmount);
	free(j);
}

struct job *job_new(struct request *r)
{
	struct job *j = calloc(1, sizeof *j);

	if (j == NULL)
		return NULL;
	j->req = *r;
	if (r->peer != NULL)
		server_peer_ref(r->peer);
	return j;
}

static void *job_main(void *arg)
{
	struct job *j;

	pthread_mutex_lock(&ds.lock);
	for (;;) {
		while (ds.todo == NULL && !ds.stopping)
			pthread_cond_wait(&ds.cond, &ds.lock);
		if (ds.todo == NULL)
			break;
		j = ds.todo;
		ds.todo = j->next;
		if (ds.todo == NULL)
			ds.todo_tail = &ds.todo;
		pthread_mutex_unlock(&ds.lock);
		if (j->run != NULL)
			j->run(j);
		pthread_mutex_lock(&ds.lock);
		j->next = ds.done;
		ds.done = j;
		event_active(ds.done_ev, EV_READ, 0);
	}
	pthread_mutex_unlock(&ds.lock);
	return NULL;
}

void job_submit(struct job *j)
{
	pthread_mutex_lock(&ds.lock);
	j->next = NULL;
	*ds.todo_tail = j;
	ds.todo_tail = &j->next;
	pthread_cond_signal(&ds.cond);
	pthread_mutex_unlock(&ds.lock);
}

static void job_done(evutil_socket_t fd, short what, void *arg)
{
	struct job *list, *j, *rev = NULL;

	pthread_mutex_lock(&ds.lock);
	list = ds.done;
	ds.done = NULL;
	pthread_mutex_unlock(&ds.lock);
	while ((j = list) != NULL) { /* in the order they finished */
		list = j->next;
		j->next = rev;
		rev = j;
	}
	while ((j = rev) != NULL) {
		rev = j->next;
		j->done(j);
	}
}

/*
 * A job with only a done step, from any thread (a worker that saw a mount
 * end): straight to the loop.
 */
void job_post_done(struct job *j)
{
	pthread_mutex_lock(&ds.lock);
	j->next = ds.done;
	ds.done = j;
	event_active(ds.done_ev, EV_READ, 0);
	pthread_mutex_unlock(&ds.lock);
}

int jobs_start(char *err, size_t errlen)
{
	int r;

	pthread_mutex_init(&ds.lock, NULL);
	pthread_cond_init(&ds.cond, NULL);
	ds.todo_tail = &ds.todo;
	ds.done_ev = event_new(ds.base, -1, 0, job_done, NULL);
	if (ds.done_ev == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if ((r = pthread_create(&ds.thread, NULL, job_main, NULL)) != 0) {
		snprintf(err, errlen, "cannot start the job thread: %s", strerror(r));
		return -r;
	}
	ds.thread_started = true;
	return 0;
}

/* Stop the job thread and finish what it completed, so every client gets its answer. */
void jobs_stop(void)
{
	if (ds.thread_started) {
		pthread_mutex_lock(&ds.lock);
		ds.stopping = true;
		pthread_cond_signal(&ds.cond);
		pthread_mutex_unlock(&ds.lock);
		pthread_join(ds.thread, NULL);
		ds.thread_started = false;
		job_done(-1, 0, NULL);
	}
}

void jobs_free(void)
{
	if (ds.done_ev != NULL)
		event_free(ds.done_ev);
	ds.done_ev = NULL;
}

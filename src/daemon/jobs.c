/* SPDX-License-Identifier: MIT */
/*
 * The job threads: anything that touches a path a client gave, or a mount,
 * runs here, never on the event loop, so a hung mount or a hostile path
 * cannot stop it. A job runs on one of JOB_THREADS threads, then its done
 * step runs back on the loop (job_done), in the order the jobs finished.
 *
 * Fair by family: a job has a lane, the family of the bot it concerns,
 * and a lane runs one job at a time; the operator's jobs are taken before
 * bots' (also within a lane), and bots' jobs take at most JOB_THREADS - 1
 * threads. So 48 creates of one bot, each walking a large root, run one
 * after another on one thread while another family's and the operator's
 * run beside them; two jobs on one bot never run at once (busy) either way.
 */
#include "src/daemon/bots-int.h"

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
	size_t i;

	pthread_mutex_lock(&bots_state.lock);
	for (i = 0; i < JOB_THREADS; i++)
		if (bots_state.prog[i].job == j)
			bots_state.prog[i].job = NULL;
	pthread_mutex_unlock(&bots_state.lock);
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
	if (r->peer != NULL) {
		server_peer_ref(r->peer);
		j->by_bot = server_peer_bot(r->peer) != NULL;
	}
	return j;
}

/* Under bots_state.lock: is a job of lane running? */
static bool lane_busy(const void *lane)
{
	size_t i;

	for (i = 0; lane != NULL && i < JOB_THREADS; i++)
		if (bots_state.lanes[i] == lane)
			return true;
	return false;
}

/*
 * Under bots_state.lock: the next job to run, taken off the list, its lane marked
 * running in slot; NULL if none may run now. The operator's first, then
 * bots' while they hold less than all but one thread; each the oldest
 * whose lane is free.
 */
static struct job *job_pick(size_t slot)
{
	struct job **pp, *j;
	int pass;

	for (pass = 0; pass < 2; pass++) {
		if (pass == 1 && bots_state.bot_jobs >= JOB_THREADS - 1)
			break;
		for (pp = &bots_state.todo; (j = *pp) != NULL; pp = &j->next) {
			if (j->by_bot != (pass == 1) || lane_busy(j->lane))
				continue;
			*pp = j->next;
			if (bots_state.todo_tail == &j->next)
				bots_state.todo_tail = pp;
			bots_state.lanes[slot] = j->lane;
			j->slot = (unsigned)slot;
			bots_state.bot_jobs += j->by_bot;
			return j;
		}
	}
	return NULL;
}

static void *job_main(void *arg)
{
	size_t slot = (size_t)(uintptr_t)arg;
	struct job *j;

	pthread_mutex_lock(&bots_state.lock);
	for (;;) {
		j = job_pick(slot);
		if (j == NULL) {
			/* at a stop, what was asked for is done first */
			if (bots_state.todo == NULL && bots_state.stopping)
				break;
			pthread_cond_wait(&bots_state.cond, &bots_state.lock);
			continue;
		}
		pthread_mutex_unlock(&bots_state.lock);
		if (j->run != NULL)
			j->run(j);
		pthread_mutex_lock(&bots_state.lock);
		bots_state.lanes[slot] = NULL;
		bots_state.bot_jobs -= j->by_bot;
		j->next = bots_state.done;
		bots_state.done = j;
		event_active(bots_state.done_ev, EV_READ, 0);
		pthread_cond_broadcast(&bots_state.cond); /* its lane is free again */
	}
	pthread_mutex_unlock(&bots_state.lock);
	return NULL;
}

void job_submit(struct job *j)
{
	pthread_mutex_lock(&bots_state.lock);
	j->next = NULL;
	*bots_state.todo_tail = j;
	bots_state.todo_tail = &j->next;
	pthread_cond_broadcast(&bots_state.cond);
	pthread_mutex_unlock(&bots_state.lock);
}

static void job_done(evutil_socket_t fd, short what, void *arg)
{
	struct job *list, *j, *rev = NULL;

	pthread_mutex_lock(&bots_state.lock);
	list = bots_state.done;
	bots_state.done = NULL;
	pthread_mutex_unlock(&bots_state.lock);
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
	pthread_mutex_lock(&bots_state.lock);
	j->next = bots_state.done;
	bots_state.done = j;
	event_active(bots_state.done_ev, EV_READ, 0);
	pthread_mutex_unlock(&bots_state.lock);
}

int jobs_start(char *err, size_t errlen)
{
	size_t i;
	int r;

	pthread_mutex_init(&bots_state.lock, NULL);
	pthread_cond_init(&bots_state.cond, NULL);
	bots_state.todo_tail = &bots_state.todo;
	bots_state.done_ev = event_new(bots_state.base, -1, 0, job_done, NULL);
	if (bots_state.done_ev == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < JOB_THREADS; i++) {
		r = pthread_create(&bots_state.threads[i], NULL, job_main, (void *)(uintptr_t)i);
		if (r != 0) {
			snprintf(err, errlen, "cannot start a job thread: %s", strerror(r));
			return -r;
		}
		bots_state.nthreads++;
	}
	return 0;
}

/* Stop the job threads and finish what they completed, so every client gets its answer. */
void jobs_stop(void)
{
	unsigned i;

	if (bots_state.nthreads == 0)
		return;
	pthread_mutex_lock(&bots_state.lock);
	bots_state.stopping = true;
	pthread_cond_broadcast(&bots_state.cond);
	pthread_mutex_unlock(&bots_state.lock);
	for (i = 0; i < bots_state.nthreads; i++)
		pthread_join(bots_state.threads[i], NULL);
	bots_state.nthreads = 0;
	job_done(-1, 0, NULL);
}

void jobs_free(void)
{
	if (bots_state.done_ev != NULL)
		event_free(bots_state.done_ev);
	bots_state.done_ev = NULL;
}

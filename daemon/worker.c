/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "log.h"
#include "worker.h"

struct item {
        worker_fn fn;
        void *userdata;
        /* The submitter's log context: what the job logs is about the
         * same device and operation (log.h). */
        struct log_context_copy context;
        struct item *next;
};

static struct item *item_new(worker_fn fn, void *userdata) {
        struct item *i = malloc(sizeof(*i));

        if (!i)
                return NULL;
        *i = (struct item) { .fn = fn, .userdata = userdata };
        log_context_copy(&i->context);
        return i;
}

static void item_free(struct item *i) {
        log_context_copy_done(&i->context);
        free(i);
}

/* Runs the item in its submitter's log context, then frees it. */
static void item_run(struct item *i) {
        {
                LOG_CONTEXT(.pf = i->context.pf, .vf = i->context.vf,
                            .domain = i->context.domain, .operation = i->context.operation);
                i->fn(i->userdata);
        }
        item_free(i);
}

struct queue {
        struct item *head, *tail;
};

struct worker_pool {
        sd_event_source *source;
        int efd;
        char *name;

        pthread_mutex_t lock;
        pthread_cond_t cond;
        struct queue jobs;      /* under lock */
        struct queue posted;    /* under lock */
        bool quit;              /* under lock */
        unsigned busy;          /* queued + running, under lock */

        pthread_t *threads;
        unsigned n_threads;
};

static void queue_push(struct queue *q, struct item *i) {
        i->next = NULL;
        if (q->tail)
                q->tail->next = i;
        else
                q->head = i;
        q->tail = i;
}

static struct item *queue_take_all(struct queue *q) {
        struct item *i = q->head;

        q->head = q->tail = NULL;
        return i;
}

static void run_posted(struct worker_pool *p) {
        struct item *i;

        pthread_mutex_lock(&p->lock);
        i = queue_take_all(&p->posted);
        pthread_mutex_unlock(&p->lock);

        while (i) {
                struct item *next = i->next;

                item_run(i);
                i = next;
        }
}

static int on_posted(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        struct worker_pool *p = userdata;
        uint64_t v;

        if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
                log_warning_errno(-errno, "Failed to read worker eventfd, ignoring: %m");
        run_posted(p);
        return 0;
}

static void *worker_main(void *userdata) {
        struct worker_pool *p = userdata;

        pthread_mutex_lock(&p->lock);
        for (;;) {
                struct item *i;

                while (!p->jobs.head && !p->quit)
                        pthread_cond_wait(&p->cond, &p->lock);
                if (!p->jobs.head)
                        break;  /* quit, and nothing left */

                i = p->jobs.head;
                p->jobs.head = i->next;
                if (!p->jobs.head)
                        p->jobs.tail = NULL;
                pthread_mutex_unlock(&p->lock);

                item_run(i);

                pthread_mutex_lock(&p->lock);
                p->busy--;
        }
        pthread_mutex_unlock(&p->lock);
        return NULL;
}

int worker_pool_new(sd_event *event, const char *name, unsigned n_threads,
                    struct worker_pool **ret) {
        struct worker_pool *p;
        int r;

        if (n_threads == 0)
                return -EINVAL;

        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->cond, NULL);
        p->efd = -EBADF;

        p->name = strdup(name);
        p->threads = calloc(n_threads, sizeof(pthread_t));
        if (!p->name || !p->threads) {
                r = -ENOMEM;
                goto fail;
        }

        p->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (p->efd < 0) {
                r = -errno;
                goto fail;
        }
        r = sd_event_add_io(event, &p->source, p->efd, EPOLLIN, on_posted, p);
        if (r < 0)
                goto fail;
        (void) sd_event_source_set_description(p->source, "worker-posted");

        for (unsigned i = 0; i < n_threads; i++) {
                char tname[16];

                r = -pthread_create(&p->threads[i], NULL, worker_main, p);
                if (r < 0)
                        goto fail;
                p->n_threads++;
                snprintf(tname, sizeof(tname), "svffd-%.4s%02u", name, i % 100);
                (void) pthread_setname_np(p->threads[i], tname);
        }

        *ret = p;
        return 0;
fail:
        worker_pool_free(p);
        return r;
}

void worker_pool_stop(struct worker_pool *p) {
        struct item *i;

        if (!p)
                return;

        pthread_mutex_lock(&p->lock);
        p->quit = true;
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->lock);

        for (unsigned k = 0; k < p->n_threads; k++)
                pthread_join(p->threads[k], NULL);
        p->n_threads = 0;

        /* Jobs never started are dropped with their userdata: by
         * contract a job owns it, and nothing started it. */
        pthread_mutex_lock(&p->lock);
        i = queue_take_all(&p->jobs);
        pthread_mutex_unlock(&p->lock);
        while (i) {
                struct item *next = i->next;
                item_free(i);
                i = next;
        }
        run_posted(p);
}

void worker_pool_free(struct worker_pool *p) {
        if (!p)
                return;

        worker_pool_stop(p);
        /* Posted after the stop (by a thread the pool does not own). */
        run_posted(p);

        sd_event_source_disable_unref(p->source);
        if (p->efd >= 0)
                close(p->efd);
        pthread_cond_destroy(&p->cond);
        pthread_mutex_destroy(&p->lock);
        free(p->threads);
        free(p->name);
        free(p);
}

int worker_pool_submit(struct worker_pool *p, worker_fn run, void *userdata) {
        struct item *i = item_new(run, userdata);

        if (!i)
                return -ENOMEM;

        pthread_mutex_lock(&p->lock);
        if (p->quit) {
                pthread_mutex_unlock(&p->lock);
                item_free(i);
                return -ESHUTDOWN;
        }
        queue_push(&p->jobs, i);
        p->busy++;
        pthread_cond_signal(&p->cond);
        pthread_mutex_unlock(&p->lock);
        return 0;
}

int worker_pool_post(struct worker_pool *p, worker_fn fn, void *userdata) {
        struct item *i = item_new(fn, userdata);
        uint64_t one = 1;

        if (!i)
                return -ENOMEM;

        pthread_mutex_lock(&p->lock);
        queue_push(&p->posted, i);
        pthread_mutex_unlock(&p->lock);

        /* An eventfd write only fails on counter overflow, which the
         * reader's next read resets: the item is queued either way. */
        (void) !write(p->efd, &one, sizeof(one));
        return 0;
}

bool worker_pool_cancelled(struct worker_pool *p) {
        bool q;

        pthread_mutex_lock(&p->lock);
        q = p->quit;
        pthread_mutex_unlock(&p->lock);
        return q;
}

unsigned worker_pool_busy(struct worker_pool *p) {
        unsigned b;

        pthread_mutex_lock(&p->lock);
        b = p->busy;
        pthread_mutex_unlock(&p->lock);
        return b;
}

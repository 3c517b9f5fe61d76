#ifndef CMICROHTTPD_DEADLINE_H
#define CMICROHTTPD_DEADLINE_H
/* A whole-request deadline for libmicrohttpd, which only has an idle timeout (reset by every byte
   received, so a client sending one byte every 25 s holds a connection forever).

   Each connection is tracked from MHD_CONNECTION_NOTIFY_STARTED to _CLOSED. Its "phase" starts
   when it opens and again when a request completes (the answer is sent); a connection whose phase
   is older than the deadline (a request still arriving or unanswered, or an idle keep-alive
   connection) gets shutdown(2) from the reaper thread, and libmicrohttpd then closes it as it
   would any broken connection (it keeps ownership of the descriptor: a tracked connection is only
   removed, under the lock, in the CLOSED notification, before the descriptor is closed). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <sys/socket.h>
#include <microhttpd.h>

struct cmhd_tracked {
    struct cmhd_tracked *prev, *next;
    int fd;
    int cut;
    uint64_t phase_start_ms;
};

struct cmhd_reaper {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    int stopping;
    uint64_t deadline_ms;
    uint64_t cut_count;
    struct cmhd_tracked *head;
    MHD_RequestCompletedCallback completed; /* the application's, called after the phase restarts */
    void *completed_cls;
};

static inline uint64_t cmhd_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void *cmhd_reaper_main(void *arg) {
    struct cmhd_reaper *r = (struct cmhd_reaper *)arg;
    pthread_mutex_lock(&r->lock);
    while (!r->stopping) {
        uint64_t now = cmhd_now_ms();
        for (struct cmhd_tracked *t = r->head; t != NULL; t = t->next) {
            if (!t->cut && now - t->phase_start_ms > r->deadline_ms) {
                shutdown(t->fd, SHUT_RDWR);
                t->cut = 1;
                r->cut_count += 1;
            }
        }
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 200 * 1000000L;
        if (until.tv_nsec >= 1000000000L) { until.tv_sec += 1; until.tv_nsec -= 1000000000L; }
        pthread_cond_timedwait(&r->wake, &r->lock, &until);
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

static void cmhd_reaper_notify(void *cls, struct MHD_Connection *connection, void **socket_context,
                               enum MHD_ConnectionNotificationCode toe) {
    struct cmhd_reaper *r = (struct cmhd_reaper *)cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
        struct cmhd_tracked *t = (struct cmhd_tracked *)calloc(1, sizeof(*t));
        if (t == NULL || info == NULL) { free(t); *socket_context = NULL; return; }
        t->fd = info->connect_fd;
        t->phase_start_ms = cmhd_now_ms();
        pthread_mutex_lock(&r->lock);
        t->next = r->head;
        if (r->head != NULL) r->head->prev = t;
        r->head = t;
        pthread_mutex_unlock(&r->lock);
        *socket_context = t;
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        struct cmhd_tracked *t = (struct cmhd_tracked *)*socket_context;
        if (t == NULL) return;
        pthread_mutex_lock(&r->lock);
        if (t->prev != NULL) t->prev->next = t->next; else r->head = t->next;
        if (t->next != NULL) t->next->prev = t->prev;
        pthread_mutex_unlock(&r->lock);
        free(t);
        *socket_context = NULL;
    }
}

static void cmhd_reaper_completed(void *cls, struct MHD_Connection *connection, void **con_cls,
                                  enum MHD_RequestTerminationCode toe) {
    struct cmhd_reaper *r = (struct cmhd_reaper *)cls;
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    if (info != NULL && info->socket_context != NULL) {
        struct cmhd_tracked *t = (struct cmhd_tracked *)info->socket_context;
        pthread_mutex_lock(&r->lock);
        t->phase_start_ms = cmhd_now_ms();
        pthread_mutex_unlock(&r->lock);
    }
    if (r->completed != NULL) r->completed(r->completed_cls, connection, con_cls, toe);
}

/* A reaper cutting connections after deadline_ms, running its thread; NULL on failure. */
static inline struct cmhd_reaper *cmhd_reaper_start(uint64_t deadline_ms, MHD_RequestCompletedCallback completed,
                                                    void *completed_cls) {
    struct cmhd_reaper *r = (struct cmhd_reaper *)calloc(1, sizeof(*r));
    if (r == NULL) return NULL;
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->wake, NULL);
    r->deadline_ms = deadline_ms;
    r->completed = completed;
    r->completed_cls = completed_cls;
    if (pthread_create(&r->thread, NULL, cmhd_reaper_main, r) != 0) {
        pthread_cond_destroy(&r->wake);
        pthread_mutex_destroy(&r->lock);
        free(r);
        return NULL;
    }
    return r;
}

/* Connections cut at the deadline so far. */
static inline uint64_t cmhd_reaper_cut_count(struct cmhd_reaper *r) {
    pthread_mutex_lock(&r->lock);
    uint64_t n = r->cut_count;
    pthread_mutex_unlock(&r->lock);
    return n;
}

/* Stops and frees the reaper; call after MHD_stop_daemon (which closes every connection). */
static inline void cmhd_reaper_stop(struct cmhd_reaper *r) {
    pthread_mutex_lock(&r->lock);
    r->stopping = 1;
    pthread_cond_signal(&r->wake);
    pthread_mutex_unlock(&r->lock);
    pthread_join(r->thread, NULL);
    pthread_cond_destroy(&r->wake);
    pthread_mutex_destroy(&r->lock);
    free(r);
}
#endif

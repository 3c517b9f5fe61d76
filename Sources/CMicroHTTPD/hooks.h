#ifndef CMICROHTTPD_HOOKS_H
#define CMICROHTTPD_HOOKS_H
/* Connection hooks shared by all of a server's daemons (one per event-loop thread, all accepting
   from one listening socket): the whole-request deadline (deadline.h) and a limit of connections
   at once per client address. libmicrohttpd's own per-address limit counts one daemon's
   connections only, so the count is kept here, across daemons: the accept policy callback takes a
   slot (or refuses: the connection is closed at once, unanswered, as libmicrohttpd's own limit
   does) and the connection's CLOSED notification gives it back. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <netinet/in.h>
#include <microhttpd.h>
#include "deadline.h"

struct cmhd_ip_count {
    uint32_t address; /* IPv4, network byte order */
    unsigned int count;
};

struct cmhd_hooks {
    struct cmhd_reaper *reaper;    /* NULL: no request deadline */
    unsigned int per_ip_limit;     /* 0: no per-address limit */
    pthread_mutex_t lock;
    struct cmhd_ip_count *counts;  /* addresses with connections open, unordered */
    size_t used, capacity;
};

/* Hooks for a reaper (or NULL) and a per-address limit (0 = none); NULL when allocation fails. */
static inline struct cmhd_hooks *cmhd_hooks_create(struct cmhd_reaper *reaper, unsigned int per_ip_limit) {
    struct cmhd_hooks *h = (struct cmhd_hooks *)calloc(1, sizeof(*h));
    if (h == NULL) return NULL;
    h->reaper = reaper;
    h->per_ip_limit = per_ip_limit;
    pthread_mutex_init(&h->lock, NULL);
    return h;
}

/* Frees the hooks (not the reaper); call after every daemon using them has stopped. */
static inline void cmhd_hooks_free(struct cmhd_hooks *h) {
    if (h == NULL) return;
    pthread_mutex_destroy(&h->lock);
    free(h->counts);
    free(h);
}

static inline int cmhd_ipv4_of(const struct sockaddr *addr, socklen_t len, uint32_t *out) {
    if (addr == NULL || addr->sa_family != AF_INET || len < (socklen_t)sizeof(struct sockaddr_in)) return 0;
    *out = ((const struct sockaddr_in *)addr)->sin_addr.s_addr;
    return 1;
}

/* MHD_AcceptPolicyCallback: takes a slot of the client's address, or refuses when it has none. */
static enum MHD_Result cmhd_hooks_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen) {
    struct cmhd_hooks *h = (struct cmhd_hooks *)cls;
    uint32_t address;
    if (h->per_ip_limit == 0 || !cmhd_ipv4_of(addr, addrlen, &address)) return MHD_YES;
    enum MHD_Result result = MHD_YES;
    pthread_mutex_lock(&h->lock);
    size_t i = 0;
    while (i < h->used && h->counts[i].address != address) i++;
    if (i < h->used) {
        if (h->counts[i].count >= h->per_ip_limit) result = MHD_NO; else h->counts[i].count++;
    } else {
        if (h->used == h->capacity) {
            size_t capacity = h->capacity == 0 ? 16 : h->capacity * 2;
            struct cmhd_ip_count *grown = (struct cmhd_ip_count *)realloc(h->counts, capacity * sizeof(*grown));
            if (grown == NULL) { pthread_mutex_unlock(&h->lock); return MHD_NO; }
            h->counts = grown;
            h->capacity = capacity;
        }
        h->counts[h->used].address = address;
        h->counts[h->used].count = 1;
        h->used++;
    }
    pthread_mutex_unlock(&h->lock);
    return result;
}

static void cmhd_hooks_release(struct cmhd_hooks *h, struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    uint32_t address;
    if (info == NULL || !cmhd_ipv4_of(info->client_addr, sizeof(struct sockaddr_in), &address)) return;
    pthread_mutex_lock(&h->lock);
    for (size_t i = 0; i < h->used; i++) {
        if (h->counts[i].address != address) continue;
        if (--h->counts[i].count == 0) h->counts[i] = h->counts[--h->used];
        break;
    }
    pthread_mutex_unlock(&h->lock);
}

/* MHD_NotifyConnectionCallback: the reaper's tracking, and the address's slot given back on CLOSED. */
static void cmhd_hooks_notify(void *cls, struct MHD_Connection *connection, void **socket_context,
                              enum MHD_ConnectionNotificationCode toe) {
    struct cmhd_hooks *h = (struct cmhd_hooks *)cls;
    if (h->reaper != NULL) cmhd_reaper_notify(h->reaper, connection, socket_context, toe);
    if (h->per_ip_limit != 0 && toe == MHD_CONNECTION_NOTIFY_CLOSED) cmhd_hooks_release(h, connection);
}

#endif

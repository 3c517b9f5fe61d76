#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H
#include <curl/curl.h>

/* curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt are variadic and cannot be
   called from Swift: these typed wrappers are (see reference/swift-linux.md section 1). */
typedef size_t (*ccurl_write_fn)(char *ptr, size_t size, size_t nmemb, void *userdata);

static inline CURLcode ccurl_easy_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_easy_setopt_str(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_easy_setopt_ptr(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_easy_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_easy_setopt_writefn(CURL *h, CURLoption o, ccurl_write_fn v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_easy_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode ccurl_easy_getinfo_ptr(CURL *h, CURLINFO i, void **v) { return curl_easy_getinfo(h, i, v); }
static inline CURLMcode ccurl_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }
/* COPYPOSTFIELDS needs the size set first; an empty body still needs a valid pointer. */
static inline CURLcode ccurl_easy_set_body(CURL *h, const void *data, long size) {
    CURLcode rc = curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, size);
    if (rc != CURLE_OK) return rc;
    return curl_easy_setopt(h, CURLOPT_COPYPOSTFIELDS, size > 0 ? (const char *)data : "");
}
/* CURLMsg.data is a union: read it in C. */
static inline int ccurl_msg_is_done(const CURLMsg *m) { return m->msg == CURLMSG_DONE; }
static inline CURLcode ccurl_msg_result(const CURLMsg *m) { return m->data.result; }
static inline long ccurl_global_all(void) { return CURL_GLOBAL_ALL; }
/* Names the calling thread (at most 15 bytes, as `top -H`, `perf` and /proc/<pid>/task/<tid>/comm
   show it); prctl is variadic, so Swift cannot call it. */
#include <sys/prctl.h>
static inline void ccurl_name_this_thread(const char *name) { (void)prctl(PR_SET_NAME, name, 0, 0, 0); }
/* The engine's event loop (curl_multi_socket_action with epoll): libcurl says which sockets it
   waits on (socket callback) and when it next needs a timeout action (timer callback); the loop
   waits on exactly those sockets plus an eventfd that other threads write to wake it. Each step
   touches only the sockets that are ready, where curl_multi_poll + curl_multi_perform scanned
   every connection on every wake-up (see CurlEngine). Linux only, like the rest of the project. */
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include <errno.h>
#include <stdint.h>

typedef struct {
    int epfd;
    int wakefd;
    /* CLOCK_MONOTONIC milliseconds of the next timeout action, -1 for none. */
    long long deadline_ms;
    /* The multi handle, for curl_multi_assign in the socket callback. */
    CURLM *multi;
    /* The shortest time in microseconds between two busy steps (0: none): a socket ready sooner
       after the last step that found anything ready waits out the rest, and the step then handles
       everything ready by that time together (ConnectionPolicy.coalescing). */
    long linger_us;
    /* ccurl_now_us() when the last step that found anything ready (a socket or a wake-up) began. */
    long long last_step_us;
} ccurl_events;

static inline long long ccurl_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static inline long long ccurl_now_ms(void) { return ccurl_now_us() / 1000; }

/* The events a socket is registered for are remembered in libcurl's own per-socket pointer
   (curl_multi_assign: 1 + the CURL_POLL_* value, which libcurl forgets when the socket goes), so
   a callback that asks for what is already registered costs no epoll_ctl. */
static inline int ccurl_socket_cb(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp) {
    (void)easy;
    ccurl_events *ev = (ccurl_events *)userp;
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(ev->epfd, EPOLL_CTL_DEL, s, NULL);
        return 0;
    }
    if (socketp == (void *)(uintptr_t)(1 + what)) return 0;
    struct epoll_event ee;
    ee.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0);
    ee.data.u64 = 0;
    ee.data.fd = s;
    int rc = epoll_ctl(ev->epfd, socketp ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, s, &ee);
    if (rc != 0 && errno == ENOENT) rc = epoll_ctl(ev->epfd, EPOLL_CTL_ADD, s, &ee);
    else if (rc != 0 && errno == EEXIST) rc = epoll_ctl(ev->epfd, EPOLL_CTL_MOD, s, &ee);
    curl_multi_assign(ev->multi, s, rc == 0 ? (void *)(uintptr_t)(1 + what) : NULL);
    return 0;
}

static inline int ccurl_timer_cb(CURLM *multi, long timeout_ms, void *userp) {
    (void)multi;
    ccurl_events *ev = (ccurl_events *)userp;
    ev->deadline_ms = timeout_ms < 0 ? -1 : ccurl_now_ms() + timeout_ms;
    return 0;
}

/* Opens the epoll and wake-up descriptors and hands libcurl the callbacks. 0 on success. */
static inline int ccurl_events_open(ccurl_events *ev, CURLM *multi) {
    ev->deadline_ms = -1;
    ev->multi = multi;
    ev->linger_us = 0;
    ev->last_step_us = 0;
    ev->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (ev->epfd < 0) return -1;
    ev->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ev->wakefd < 0) { close(ev->epfd); return -1; }
    struct epoll_event ee;
    ee.events = EPOLLIN;
    ee.data.u64 = 0;
    ee.data.fd = ev->wakefd;
    if (epoll_ctl(ev->epfd, EPOLL_CTL_ADD, ev->wakefd, &ee) != 0) { close(ev->wakefd); close(ev->epfd); return -1; }
    if (curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, ccurl_socket_cb) != CURLM_OK
        || curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, ev) != CURLM_OK
        || curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, ccurl_timer_cb) != CURLM_OK
        || curl_multi_setopt(multi, CURLMOPT_TIMERDATA, ev) != CURLM_OK) { close(ev->wakefd); close(ev->epfd); return -1; }
    return 0;
}

/* Wakes the loop's step (any thread). */
static inline void ccurl_events_wake(ccurl_events *ev) {
    uint64_t one = 1;
    ssize_t ignored = write(ev->wakefd, &one, sizeof one);
    (void)ignored;
}

/* One step: waits for ready sockets, a due timeout or a wake-up (at most max_wait_ms); a socket
   ready less than linger_us after the last step that found anything ready waits out the rest and
   the step takes what is ready by then; then drives libcurl for what is ready. Returns 1 when
   woken through the eventfd, else 0. */
static inline int ccurl_events_step(ccurl_events *ev, CURLM *multi, int max_wait_ms) {
    struct epoll_event ready[64];
    int wait = max_wait_ms;
    if (ev->deadline_ms >= 0) {
        long long left = ev->deadline_ms - ccurl_now_ms();
        if (left < 0) left = 0;
        if (left < wait) wait = (int)left;
    }
    int n = epoll_wait(ev->epfd, ready, 64, wait);
    if (n > 0 && ev->linger_us > 0) {
        long long now = ccurl_now_us();
        long long left = ev->linger_us - (now - ev->last_step_us);
        int sockets = 0;
        for (int i = 0; i < n; i++) if (ready[i].data.fd != ev->wakefd) sockets++;
        if (sockets > 0 && left > 0) {
            struct timespec pause = { (time_t)(left / 1000000), (long)(left % 1000000) * 1000 };
            nanosleep(&pause, NULL);
            n = epoll_wait(ev->epfd, ready, 64, 0);
            now = ccurl_now_us();
        }
        ev->last_step_us = now;
    }
    int woken = 0, running = 0;
    for (int i = 0; i < n; i++) {
        int fd = ready[i].data.fd;
        if (fd == ev->wakefd) {
            uint64_t count;
            ssize_t ignored = read(ev->wakefd, &count, sizeof count);
            (void)ignored;
            woken = 1;
            continue;
        }
        int mask = 0;
        if (ready[i].events & EPOLLIN) mask |= CURL_CSELECT_IN;
        if (ready[i].events & EPOLLOUT) mask |= CURL_CSELECT_OUT;
        if (ready[i].events & (EPOLLERR | EPOLLHUP)) mask |= CURL_CSELECT_ERR;
        curl_multi_socket_action(multi, fd, mask, &running);
    }
    if (ev->deadline_ms >= 0 && ccurl_now_ms() >= ev->deadline_ms) {
        ev->deadline_ms = -1;  /* the action sets the next one through the timer callback */
        curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
    }
    return woken;
}

static inline void ccurl_events_close(ccurl_events *ev) {
    close(ev->wakefd);
    close(ev->epfd);
}
#endif

#ifndef CMICROHTTPD_LOOP_H
#define CMICROHTTPD_LOOP_H
/* What MicroHTTP's own event loops need besides libmicrohttpd: the shared listening socket and an
   eventfd in each daemon's epoll set to wake its loop. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <microhttpd.h>

/* A non-blocking TCP socket listening on ipv4_be (network byte order):port (host order; 0 = the
   kernel picks) with SO_REUSEADDR, as libmicrohttpd binds its own; -1 with errno on failure. */
static inline int cmhd_listen(uint32_t ipv4_be, uint16_t port, int backlog) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int on = 1;
    struct sockaddr_in addr;
    __builtin_memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = ipv4_be;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) != 0 ||
        bind(fd, (const struct sockaddr *)&addr, sizeof(addr)) != 0 || listen(fd, backlog) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

/* A non-blocking eventfd; -1 on failure. */
static inline int cmhd_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

/* Makes `fd` readable (wakes whoever polls it). */
static inline void cmhd_eventfd_signal(int fd) {
    uint64_t one = 1;
    ssize_t written;
    do { written = write(fd, &one, sizeof(one)); } while (written < 0 && errno == EINTR);
}

/* Adds wake_fd to the daemon's own epoll set (external-epoll mode: MHD_DAEMON_INFO_EPOLL_FD),
   edge-triggered, with a NULL data pointer: MHD_epoll skips events whose pointer is NULL (its own
   shutdown signal; so from 0.9.75 through the current release), so a write to wake_fd only ends
   the daemon's epoll_wait inside MHD_run_wait early. Edge-triggered: every write is one wake-up
   and the counter needs no reading. Returns 0, or -1 with errno. */
static inline int cmhd_daemon_add_wake(struct MHD_Daemon *daemon, int wake_fd) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_EPOLL_FD);
    if (info == NULL || info->epoll_fd < 0) { errno = EINVAL; return -1; }
    struct epoll_event event;
    event.events = EPOLLIN | EPOLLET;
    event.data.ptr = NULL;
    return epoll_ctl(info->epoll_fd, EPOLL_CTL_ADD, wake_fd, &event);
}

/* The local port a socket is bound to (host order), or 0. */
static inline uint16_t cmhd_socket_port(int fd) {
    struct sockaddr_in addr;
    socklen_t len = sizeof(addr);
    if (getsockname(fd, (struct sockaddr *)&addr, &len) != 0 || addr.sin_family != AF_INET) return 0;
    return ntohs(addr.sin_port);
}

static inline void cmhd_close(int fd) { if (fd >= 0) close(fd); }
#endif

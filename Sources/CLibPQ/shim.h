#ifndef CLIBPQ_SHIM_H
#define CLIBPQ_SHIM_H
#include <libpq-fe.h>
#include <poll.h>

/// Waits until the connection's socket is readable (or writable), or the timeout passes.
/// Returns poll(2)'s result: >0 ready, 0 timeout, <0 error.
static inline int clibpq_wait_socket(int fd, int for_write, int timeout_ms) {
    struct pollfd p;
    p.fd = fd;
    p.events = for_write ? POLLOUT : POLLIN;
    p.revents = 0;
    return poll(&p, 1, timeout_ms);
}
#endif

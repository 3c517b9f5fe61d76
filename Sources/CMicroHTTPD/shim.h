#ifndef CMICROHTTPD_SHIM_H
#define CMICROHTTPD_SHIM_H
#include <stdint.h>
#include <stdarg.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>

/* MHD_start_daemon is variadic: fixed-shape wrappers for the option sets we use.
   Options: internal polling thread with epoll, suspend/resume allowed, bound to 127.0.0.1. */
static inline struct MHD_Daemon *cmhd_start(unsigned int flags, uint16_t port,
                                            MHD_AccessHandlerCallback handler, void *cls,
                                            MHD_RequestCompletedCallback completed, void *ccls,
                                            const struct sockaddr *bind_addr,
                                            unsigned int connection_limit,
                                            unsigned int thread_pool_size,
                                            unsigned int timeout_seconds) {
    return MHD_start_daemon(flags, port, NULL, NULL, handler, cls,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, ccls,
                            MHD_OPTION_SOCK_ADDR, bind_addr,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                            MHD_OPTION_THREAD_POOL_SIZE, thread_pool_size,
                            MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
                            MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned int)1,
                            MHD_OPTION_END);
}
static inline unsigned int cmhd_flag_internal_epoll(void) { return MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL; }
static inline unsigned int cmhd_flag_suspend_resume(void) { return MHD_ALLOW_SUSPEND_RESUME; }
static inline unsigned int cmhd_flag_error_log(void) { return MHD_USE_ERROR_LOG; }
#endif

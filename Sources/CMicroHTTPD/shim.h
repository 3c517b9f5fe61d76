#ifndef CMICROHTTPD_SHIM_H
#define CMICROHTTPD_SHIM_H
#include <stdint.h>
#include <stdarg.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <microhttpd.h>
#include "deadline.h"

/* MHD_start_daemon is variadic: fixed-shape wrapper for the option set the sandbox uses.
   Binds to one IPv4 address (network byte order), port in host order (0 = kernel picks).
   timeout_seconds: a connection idle that long is closed (0 = never); per_ip_limit: connections
   at once from one address (0 = no limit); reaper: a whole-request deadline (deadline.h), or NULL
   for none (the application's `completed` is then called by the reaper's, after it restarts the
   connection's phase). tls_key_pem / tls_cert_pem: serve HTTPS (MHD_USE_TLS, GnuTLS) with this
   PEM private key and certificate chain, or both NULL for plain HTTP; the caller keeps both
   strings alive until the daemon is stopped. memory_limit: bytes of each connection's memory pool
   (MHD_OPTION_CONNECTION_MEMORY_LIMIT: request headers, read and write buffers; zeroed after every
   request), 0 for libmicrohttpd's default (32 KiB). */
static inline struct MHD_Daemon *cmhd_start(unsigned int flags, uint16_t port, uint32_t ipv4_be,
                                            MHD_AccessHandlerCallback handler, void *cls,
                                            MHD_RequestCompletedCallback completed, void *ccls,
                                            unsigned int connection_limit,
                                            unsigned int thread_pool_size,
                                            unsigned int timeout_seconds,
                                            unsigned int listen_backlog,
                                            unsigned int per_ip_limit,
                                            struct cmhd_reaper *reaper,
                                            const char *tls_key_pem,
                                            const char *tls_cert_pem,
                                            size_t memory_limit) {
    struct sockaddr_in addr;
    __builtin_memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = ipv4_be;
    /* MHD copies the address while binding inside MHD_start_daemon, so a stack address is fine. */
    MHD_NotifyConnectionCallback notify = NULL;
    if (reaper != NULL) {
        notify = cmhd_reaper_notify;
        completed = cmhd_reaper_completed;
        ccls = reaper;
    }
    /* Single-pointer options in an MHD_OPTION_ARRAY take the pointer in ptr_value. */
    struct MHD_OptionItem tls[4] = {{MHD_OPTION_END, 0, NULL}, {MHD_OPTION_END, 0, NULL}, {MHD_OPTION_END, 0, NULL},
                                    {MHD_OPTION_END, 0, NULL}};
    int next = 0;
    if (tls_key_pem != NULL && tls_cert_pem != NULL) {
        flags |= MHD_USE_TLS;
        tls[next].option = MHD_OPTION_HTTPS_MEM_KEY;
        tls[next++].ptr_value = (void *)tls_key_pem;
        tls[next].option = MHD_OPTION_HTTPS_MEM_CERT;
        tls[next++].ptr_value = (void *)tls_cert_pem;
    }
    if (memory_limit > 0) {
        tls[next].option = MHD_OPTION_CONNECTION_MEMORY_LIMIT;
        tls[next++].value = (intptr_t)memory_limit;
    }
    if (thread_pool_size > 1) {
        return MHD_start_daemon(flags, port, NULL, NULL, handler, cls,
                                MHD_OPTION_NOTIFY_COMPLETED, completed, ccls,
                                MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)&addr,
                                MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                                MHD_OPTION_THREAD_POOL_SIZE, thread_pool_size,
                                MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
                                MHD_OPTION_LISTEN_BACKLOG_SIZE, listen_backlog,
                                MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip_limit,
                                MHD_OPTION_NOTIFY_CONNECTION, notify, (void *)reaper,
                                MHD_OPTION_ARRAY, tls,
                                MHD_OPTION_END);
    }
    return MHD_start_daemon(flags, port, NULL, NULL, handler, cls,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, ccls,
                            MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)&addr,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
                            MHD_OPTION_LISTEN_BACKLOG_SIZE, listen_backlog,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip_limit,
                            MHD_OPTION_NOTIFY_CONNECTION, notify, (void *)reaper,
                            MHD_OPTION_ARRAY, tls,
                            MHD_OPTION_END);
}

/* The port actually bound (useful when 0 was requested); 0 if unknown. */
static inline uint16_t cmhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

/* Connections the daemon holds open now (all threads); 0 if unknown. */
static inline unsigned int cmhd_current_connections(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info == NULL ? 0 : info->num_connections;
}

/* Response from a copied buffer (MHD owns the copy). */
static inline struct MHD_Response *cmhd_response_copy(const void *data, size_t size) {
    return MHD_create_response_from_buffer(size, (void *)data, MHD_RESPMEM_MUST_COPY);
}

/* True when this libmicrohttpd was built with TLS support (Debian: GnuTLS). */
static inline int cmhd_supports_tls(void) { return MHD_is_feature_supported(MHD_FEATURE_TLS) == MHD_YES; }

static inline unsigned int cmhd_flag_internal_epoll(void) { return MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL; }
static inline unsigned int cmhd_flag_suspend_resume(void) { return MHD_ALLOW_SUSPEND_RESUME; }
static inline unsigned int cmhd_flag_error_log(void) { return MHD_USE_ERROR_LOG; }
static inline unsigned int cmhd_flag_turbo(void) { return MHD_USE_TURBO; }
static inline enum MHD_ValueKind cmhd_kind_header(void) { return MHD_HEADER_KIND; }
static inline enum MHD_ValueKind cmhd_kind_query(void) { return MHD_GET_ARGUMENT_KIND; }
static inline enum MHD_Result cmhd_yes(void) { return MHD_YES; }
static inline enum MHD_Result cmhd_no(void) { return MHD_NO; }
#endif

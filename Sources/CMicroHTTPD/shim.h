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
#include "hooks.h"
#include "loop.h"

/* MHD_start_daemon is variadic: fixed-shape wrapper for the option set MicroHTTP uses. The daemon
   runs in external-epoll mode (MicroHTTP's own thread drives it with MHD_run_wait, see loop.h) and
   accepts from listen_fd, which several daemons may share (each has its own epoll set; the
   caller closes the socket after quiescing every daemon). timeout_seconds: a connection idle that
   long is closed (0 = never). hooks: the request deadline and the per-address limit (hooks.h), or
   NULL for neither; with a reaper, the application's `completed` is called by the reaper's, after
   it restarts the connection's phase. tls_key_pem / tls_cert_pem: serve HTTPS (MHD_USE_TLS,
   GnuTLS) with this PEM private key and certificate chain, or both NULL for plain HTTP; the caller
   keeps both strings alive until the daemon is stopped. memory_limit: bytes of each connection's
   memory pool (MHD_OPTION_CONNECTION_MEMORY_LIMIT: request headers, read and write buffers;
   zeroed after every request), 0 for libmicrohttpd's default (32 KiB). */
static inline struct MHD_Daemon *cmhd_start(int listen_fd,
                                            MHD_AccessHandlerCallback handler, void *cls,
                                            MHD_RequestCompletedCallback completed, void *ccls,
                                            unsigned int connection_limit,
                                            unsigned int timeout_seconds,
                                            struct cmhd_hooks *hooks,
                                            const char *tls_key_pem,
                                            const char *tls_cert_pem,
                                            size_t memory_limit) {
    unsigned int flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
    MHD_NotifyConnectionCallback notify = NULL;
    MHD_AcceptPolicyCallback accept = NULL;
    if (hooks != NULL) {
        notify = cmhd_hooks_notify;
        if (hooks->per_ip_limit > 0) accept = cmhd_hooks_accept;
        if (hooks->reaper != NULL) {   /* it calls the application's (given at cmhd_reaper_start) */
            completed = cmhd_reaper_completed;
            ccls = hooks->reaper;
        }
    }
    /* Single-pointer options in an MHD_OPTION_ARRAY take the pointer in ptr_value. */
    struct MHD_OptionItem extra[4] = {{MHD_OPTION_END, 0, NULL}, {MHD_OPTION_END, 0, NULL}, {MHD_OPTION_END, 0, NULL},
                                      {MHD_OPTION_END, 0, NULL}};
    int next = 0;
    if (tls_key_pem != NULL && tls_cert_pem != NULL) {
        flags |= MHD_USE_TLS;
        extra[next].option = MHD_OPTION_HTTPS_MEM_KEY;
        extra[next++].ptr_value = (void *)tls_key_pem;
        extra[next].option = MHD_OPTION_HTTPS_MEM_CERT;
        extra[next++].ptr_value = (void *)tls_cert_pem;
    }
    if (memory_limit > 0) {
        extra[next].option = MHD_OPTION_CONNECTION_MEMORY_LIMIT;
        extra[next++].value = (intptr_t)memory_limit;
    }
    return MHD_start_daemon(flags, 0, accept, hooks, handler, cls,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, ccls,
                            MHD_OPTION_LISTEN_SOCKET, listen_fd,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
                            MHD_OPTION_NOTIFY_CONNECTION, notify, (void *)hooks,
                            MHD_OPTION_ARRAY, extra,
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

static inline enum MHD_ValueKind cmhd_kind_header(void) { return MHD_HEADER_KIND; }
static inline enum MHD_ValueKind cmhd_kind_query(void) { return MHD_GET_ARGUMENT_KIND; }
static inline enum MHD_Result cmhd_yes(void) { return MHD_YES; }
static inline enum MHD_Result cmhd_no(void) { return MHD_NO; }
#endif

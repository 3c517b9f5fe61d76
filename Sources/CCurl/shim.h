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
#endif

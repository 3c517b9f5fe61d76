#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/hmac.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>
#include <openssl/crypto.h>

/* Composite macros and parameter names, re-exported as functions returning static storage,
   so pointers handed to OSSL_PARAM_BLD stay valid (see reference/swift-linux.md section 3). */
static inline int copenssl_evp_pkey_public_key(void) { return EVP_PKEY_PUBLIC_KEY; }
static inline int copenssl_evp_pkey_keypair(void) { return EVP_PKEY_KEYPAIR; }
static inline const char *copenssl_param_rsa_n(void) { return OSSL_PKEY_PARAM_RSA_N; }
static inline const char *copenssl_param_rsa_e(void) { return OSSL_PKEY_PARAM_RSA_E; }
static inline const char *copenssl_param_group_name(void) { return OSSL_PKEY_PARAM_GROUP_NAME; }
static inline const char *copenssl_param_pub_key(void) { return OSSL_PKEY_PARAM_PUB_KEY; }
static inline const char *copenssl_param_ec_pub_x(void) { return OSSL_PKEY_PARAM_EC_PUB_X; }
static inline const char *copenssl_param_ec_pub_y(void) { return OSSL_PKEY_PARAM_EC_PUB_Y; }
static inline const char *copenssl_curve_p256(void) { return "prime256v1"; }

/* EVP_CIPHER_CTX_ctrl wrappers for GCM (the macros are not imported). */
static inline int copenssl_gcm_set_ivlen(EVP_CIPHER_CTX *ctx, int len) {
    return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, len, NULL);
}
static inline int copenssl_gcm_get_tag(EVP_CIPHER_CTX *ctx, int len, void *tag) {
    return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, len, tag);
}
static inline int copenssl_gcm_set_tag(EVP_CIPHER_CTX *ctx, int len, void *tag) {
    return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, len, tag);
}
static inline int copenssl_rsa_keygen_bits(EVP_PKEY_CTX *ctx, int bits) {
    return EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, bits);
}
static inline int copenssl_ec_paramgen_curve_p256(EVP_PKEY_CTX *ctx) {
    return EVP_PKEY_CTX_set_ec_paramgen_curve_nid(ctx, NID_X9_62_prime256v1);
}
/* BIO_get_mem_data is a macro over BIO_ctrl. */
static inline long copenssl_bio_mem_contents(BIO *bio, char **data) {
    return BIO_get_mem_data(bio, data);
}
static inline const char *copenssl_key_type_ec(void) { return "EC"; }
static inline const char *copenssl_key_type_rsa(void) { return "RSA"; }
static inline int copenssl_nid_p256(void) { return NID_X9_62_prime256v1; }
static inline int copenssl_pkey_ec(void) { return EVP_PKEY_EC; }
static inline int copenssl_pkey_rsa(void) { return EVP_PKEY_RSA; }
/* A password callback that refuses: an encrypted PEM fails instead of prompting on a TTY. */
static inline int copenssl_no_password(char *buf, int size, int rwflag, void *u) {
    (void)buf; (void)size; (void)rwflag; (void)u; return -1;
}
static inline EVP_PKEY *copenssl_read_private_key_pem(BIO *bio) {
    return PEM_read_bio_PrivateKey(bio, NULL, copenssl_no_password, NULL);
}
static inline EVP_PKEY *copenssl_read_public_key_pem(BIO *bio) {
    return PEM_read_bio_PUBKEY(bio, NULL, copenssl_no_password, NULL);
}
/* X509_NAME_add_entry_by_txt's string type (a composite macro). */
static inline int copenssl_mbstring_asc(void) { return MBSTRING_ASC; }
#endif

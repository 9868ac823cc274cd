/* TLS: versions, a plain-HTTP client, a stalled client, certificate rotation under load. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static struct wh w;
static const char *const fast_timeout[] = { "--connection-timeout", "2", "--threads", "2", NULL };
static void up(void) { wh_start(&w, fast_timeout); }
static void down(void) { wh_stop(&w); }

static int tcp_connect(int port)
{
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
  return fd;
}

/* Handshakes with a client limited to [min, max]; returns the negotiated version or 0. */
static int handshake(int min, int max)
{
  SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_security_level(ctx, 0);
  SSL_CTX_set_min_proto_version(ctx, min);
  SSL_CTX_set_max_proto_version(ctx, max);
  SSL_CTX_set_cipher_list(ctx, "ALL:@SECLEVEL=0");
  SSL_CTX_load_verify_locations(ctx, w.ca, NULL);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
  SSL *ssl = SSL_new(ctx);
  int fd = tcp_connect(w.port);
  SSL_set_fd(ssl, fd);
  SSL_set_tlsext_host_name(ssl, "localhost");
  int ok = SSL_connect(ssl) == 1;
  int version = ok ? SSL_version(ssl) : 0;
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  close(fd);
  return version;
}

Test(tls, only_tls12_and_tls13, .init = up, .fini = down)
{
  cr_assert_eq(handshake(TLS1_VERSION, TLS1_1_VERSION), 0, "a TLS 1.1 client must be refused");
  cr_assert_eq(handshake(TLS1_VERSION, TLS1_VERSION), 0, "a TLS 1.0 client must be refused");
  cr_assert_eq(handshake(TLS1_2_VERSION, TLS1_2_VERSION), TLS1_2_VERSION);
  cr_assert_eq(handshake(TLS1_2_VERSION, TLS1_3_VERSION), TLS1_3_VERSION);
  struct wh_reply r;
  wh_get(&w, "/healthz", &r);
  cr_assert_eq(r.status, 200);
  wh_reply_free(&r);
}

/* Reads until EOF or timeout; returns bytes read, -1 on timeout. */
static long read_until_closed(int fd, int timeout_ms, char *buf, size_t n)
{
  size_t got = 0;
  struct pollfd p = { fd, POLLIN, 0 };
  for(;;) {
    int pr = poll(&p, 1, timeout_ms);
    if(pr <= 0)
      return -1;
    ssize_t k = read(fd, buf + got, n - got - 1);
    if(k <= 0)
      break;
    got += (size_t)k;
    if(got >= n - 1)
      break;
  }
  buf[got] = '\0';
  return (long)got;
}

Test(tls, plain_http_is_closed_without_an_answer, .init = up, .fini = down)
{
  int fd = tcp_connect(w.port);
  const char *req = "POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                    "Content-Length: 2\r\n\r\n{}";
  cr_assert_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
  char buf[4096];
  long n = read_until_closed(fd, 5000, buf, sizeof(buf));
  cr_assert_geq(n, 0, "the connection was not closed");
  cr_assert_null(strstr(buf, "HTTP/1.1 200"), "no HTTP answer over a plain connection");
  close(fd);
  struct wh_reply r;
  wh_get(&w, "/healthz", &r);
  cr_assert_eq(r.status, 200, "still serving");
  wh_reply_free(&r);
}

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

Test(tls, a_stalled_client_takes_no_turn, .init = up, .fini = down)
{
  /* Open more stalled connections than there are turns (--threads 2): a connection's thread
   * waits for its body, and only a whole request takes a turn. */
  enum { STALLED = 6 };
  SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
  SSL *ssl[STALLED];
  int fds[STALLED];
  const char *hdr = "POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                    "Content-Length: 1000\r\n\r\n{\"apiVersion\":";
  for(int i = 0; i < STALLED; i++) {
    ssl[i] = SSL_new(ctx);
    fds[i] = tcp_connect(w.port);
    SSL_set_fd(ssl[i], fds[i]);
    cr_assert_eq(SSL_connect(ssl[i]), 1);
    cr_assert_gt(SSL_write(ssl[i], hdr, (int)strlen(hdr)), 0);
  }
  double t0 = now();
  struct wh_reply r;
  wh_get(&w, "/healthz", &r);
  cr_assert_eq(r.status, 200, "served while clients stall");
  cr_assert_lt(now() - t0, 1.0, "a stalled client delayed others");
  wh_reply_free(&r);
  /* The server closes each stalled connection after the connection timeout (2 s). */
  for(int i = 0; i < STALLED; i++) {
    char buf[512];
    long n = read_until_closed(fds[i], 8000, buf, sizeof(buf));
    cr_assert_geq(n, 0, "stalled connection %d was not closed by the server", i);
    SSL_free(ssl[i]);
    close(fds[i]);
  }
  cr_assert_lt(now() - t0, 8.0);
  SSL_CTX_free(ctx);
}

/* Rotation under load. */
struct load {
  atomic_int stop;
  atomic_long ok, failed;
  char last_error[256];
};

static void *hammer(void *arg)
{
  struct load *l = arg;
  CURL *c = curl_easy_init();
  char url[128];
  snprintf(url, sizeof(url), "https://localhost:%d/validate", w.port);
  const char *body = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":"
                     "{\"uid\":\"r\",\"operation\":\"CREATE\",\"kind\":{\"group\":\"apps\",\"version\":\"v1\","
                     "\"kind\":\"Deployment\"},\"object\":{}}}";
  struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CAINFO, w.ca);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
  FILE *devnull = fopen("/dev/null", "w");
  curl_easy_setopt(c, CURLOPT_WRITEDATA, devnull);
  for(long i = 0; !atomic_load(&l->stop); i++) {
    /* Every third request on a new connection, so handshakes meet each new certificate. */
    curl_easy_setopt(c, CURLOPT_FRESH_CONNECT, (long)(i % 3 == 0));
    CURLcode cc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    if(cc == CURLE_OK && status == 200)
      atomic_fetch_add(&l->ok, 1);
    else {
      atomic_fetch_add(&l->failed, 1);
      snprintf(l->last_error, sizeof(l->last_error), "%s (HTTP %ld)", curl_easy_strerror(cc), status);
    }
  }
  fclose(devnull);
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  return NULL;
}

static char *served_serial(void)
{
  return wh_sh("echo | openssl s_client -connect 127.0.0.1:%d -servername localhost 2>/dev/null "
               "| openssl x509 -noout -serial", w.port);
}

Test(tls, certificate_rotation_under_load_fails_no_request, .init = up, .fini = down, .timeout = 60)
{
  struct load l = { 0 };
  pthread_t t[4];
  for(int i = 0; i < 4; i++)
    pthread_create(&t[i], NULL, hammer, &l);
  char *before = served_serial();
  for(int round = 0; round < 5; round++) {
    usleep(300000);
    /* A new serving certificate from the same CA, written elsewhere and renamed into place the
     * way kubelet swaps a projected Secret (the pair is briefly mismatched). */
    free(wh_sh("d=%s/next && rm -rf $d && mkdir -p $d && cp %s/ca.crt %s/ca.key $d/ && "
               "%s/godwit-certs --out $d --reuse-ca --dns localhost --ip 127.0.0.1 >/dev/null 2>&1 && "
               "mv $d/tls.crt %s && sleep 0.05 && mv $d/tls.key %s",
               w.dir, w.dir, w.dir, wh_build(), w.cert, w.key));
  }
  usleep(500000);
  char *after = served_serial();
  atomic_store(&l.stop, 1);
  for(int i = 0; i < 4; i++)
    pthread_join(t[i], NULL);
  cr_assert_gt(atomic_load(&l.ok), 100, "too little load to prove anything");
  cr_assert_eq(atomic_load(&l.failed), 0, "%ld of %ld requests failed during rotation: %s",
               atomic_load(&l.failed), atomic_load(&l.ok) + atomic_load(&l.failed), l.last_error);
  cr_assert_str_neq(before, after, "the served certificate did not change");
  free(before);
  free(after);
}

static int free_port(void)
{
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = { .sin_family = AF_INET };
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
  socklen_t l = sizeof(a);
  getsockname(fd, (struct sockaddr *)&a, &l);
  close(fd);
  return ntohs(a.sin_port);
}

static long plain_get(int port, const char *path, char *body, size_t n)
{
  char url[128];
  snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
  char *out = wh_sh("curl -s -o /dev/stdout -w '\n%%{http_code}' %s", url);
  char *nl = strrchr(out, '\n');
  long code = nl ? strtol(nl + 1, NULL, 10) : 0;
  if(nl)
    *nl = '\0';
  snprintf(body, n, "%s", out);
  free(out);
  return code;
}

Test(tls, ready_only_once_a_certificate_appears, .timeout = 30)
{
  /* As with cert-manager, the Secret may be mounted after the webhook starts. */
  struct wh x;
  char cert[320], key[320], port[16];
  int mp = free_port();
  snprintf(port, sizeof(port), "%d", mp);
  char dir[] = "/tmp/godwit-late-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  snprintf(cert, sizeof(cert), "%s/tls.crt", dir);
  snprintf(key, sizeof(key), "%s/tls.key", dir);
  const char *const extra[] = { "--tls-cert", cert, "--tls-key", key, "--metrics-port", port, NULL };
  wh_spawn(&x, extra);
  char body[512];
  cr_assert_eq(plain_get(mp, "/readyz", body, sizeof(body)), 503);
  cr_assert(strstr(body, "no serving certificate"), "%s", body);
  cr_assert_eq(plain_get(mp, "/healthz", body, sizeof(body)), 200, "alive while not ready");
  free(wh_sh("%s/godwit-certs --out %s --dns localhost >/dev/null 2>&1", wh_build(), dir));
  long code = 0;
  for(int i = 0; i < 50 && code != 200; i++) {
    usleep(100000);
    code = plain_get(mp, "/readyz", body, sizeof(body));
  }
  cr_assert_eq(code, 200, "never became ready after the certificate appeared: %s", body);
  cr_assert_eq(plain_get(mp, "/metrics", body, sizeof(body)), 200);
  wh_stop(&x);
  free(wh_sh("rm -rf %s", dir));
}

Test(tls, a_body_far_above_the_limit_is_refused_before_it_is_sent, .init = up, .fini = down)
{
  SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
  SSL *ssl = SSL_new(ctx);
  int fd = tcp_connect(w.port);
  SSL_set_fd(ssl, fd);
  cr_assert_eq(SSL_connect(ssl), 1);
  const char *hdr = "POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                    "Content-Length: 1073741824\r\n\r\n";
  cr_assert_gt(SSL_write(ssl, hdr, (int)strlen(hdr)), 0);
  char buf[2048] = "";
  int n = SSL_read(ssl, buf, sizeof(buf) - 1);
  cr_assert_gt(n, 0, "no answer to a 1 GiB announcement");
  buf[n] = '\0';
  cr_assert(strstr(buf, "HTTP/1.1 413"), "%s", buf);
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  close(fd);
}

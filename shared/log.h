/*
 * log.h: structured logs, one JSON object per line on stderr.
 *
 *   log_kv(LOG_INFO, "policy reloaded", "digest", d, "path", p, LOG_END);
 *   -> {"ts":"2026-11-29T11:43:47.123Z","level":"info","msg":"policy reloaded","digest":"...",...}
 *
 * Values are strings; pass pairs and end with NULL. Lines below the configured level are dropped
 * before any formatting. Never pass a secret, a password or a connection URI: nothing here can
 * tell them apart from other text.
 */
#ifndef GW_LOG_H
#define GW_LOG_H

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

void log_set_level(enum log_level l);
/* "debug", "info", "warn", "error"; returns -1 when unknown. */
int log_level_parse(const char *s);
int log_enabled(enum log_level l);
void log_kv(enum log_level l, const char *msg, ...) __attribute__((sentinel));
/* The end of log_kv's pairs: a typed null pointer, as a variadic sentinel must be. */
#define LOG_END ((const char *)NULL)

#endif

/*
 * config.h: command-line configuration from one table.
 *
 * A program declares its options once, as rows {name, env, type, default, min, max, offset, help};
 * cfg_parse() fills the program's config struct from the defaults, then the environment, then
 * the command line (later wins), checks ranges, and answers --help from the same table. Strings
 * point into argv, the environment or the table (never freed). CFG_STRLIST options may repeat
 * (--dns a --dns b) and fill a NULL-terminated array of up to CFG_MAX_LIST entries.
 */
#ifndef GW_CONFIG_H
#define GW_CONFIG_H

#include <stddef.h>
#include <stdio.h>

#include "rc.h"

#define CFG_MAX_LIST 16

enum cfg_type { CFG_STR, CFG_INT, CFG_BOOL, CFG_STRLIST };

struct cfg_opt {
  const char *name; /* "tls-cert": --tls-cert VALUE or --tls-cert=VALUE */
  const char *env;  /* "GODWIT_TLS_CERT" or NULL */
  enum cfg_type type;
  const char *dflt; /* NULL: unset (strings), 0 (ints), false (bools) */
  long min, max;    /* CFG_INT range */
  size_t offset;    /* offsetof(struct x, field): const char *, long, int (bool), const char *[] */
  const char *help;
};

/* Returns GW_OK, GW_EINVAL with err filled, or GW_ENOTFOUND when --help was asked (usage already
 * printed to stdout). */
gw_rc cfg_parse(const struct cfg_opt *opts, void *cfg, int argc, char **argv, char *err,
                size_t errlen) GW_MUST_CHECK;
void cfg_usage(FILE *out, const char *prog, const char *summary, const struct cfg_opt *opts);
/* The common start of a program: cfg_parse, --help answered with the usage, an error reported as
 * "prog: reason", and the log level set from the option named "log-level" when the table has one.
 * Returns -1 to go on, else the exit code main should return (0 after --help, 2 on a bad flag). */
int cfg_main(const struct cfg_opt *opts, void *cfg, int argc, char **argv, const char *prog,
             const char *summary);

#endif

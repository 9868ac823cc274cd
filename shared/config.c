#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "version.h"

static gw_rc set(const struct cfg_opt *o, void *cfg, const char *val, char *err, size_t errlen)
{
  char *p = (char *)cfg + o->offset;
  switch(o->type) {
  case CFG_STR:
    *(const char **)p = val;
    return GW_OK;
  case CFG_STRLIST: {
    const char **list = (const char **)p;
    size_t n = 0;
    while(n < CFG_MAX_LIST && list[n])
      n++;
    if(n >= CFG_MAX_LIST - 1) {
      snprintf(err, errlen, "--%s: at most %d values", o->name, CFG_MAX_LIST - 1);
      return GW_EINVAL;
    }
    list[n] = val;
    list[n + 1] = NULL;
    return GW_OK;
  }
  case CFG_BOOL:
    if(!val || !strcmp(val, "true") || !strcmp(val, "1"))
      *(int *)p = 1;
    else if(!strcmp(val, "false") || !strcmp(val, "0"))
      *(int *)p = 0;
    else {
      snprintf(err, errlen, "--%s: must be true or false, got \"%s\"", o->name, val);
      return GW_EINVAL;
    }
    return GW_OK;
  case CFG_INT: {
    char *end;
    errno = 0;
    long v = strtol(val ? val : "", &end, 10);
    if(!val || !*val || *end || errno) {
      snprintf(err, errlen, "--%s: must be an integer, got \"%s\"", o->name, val ? val : "");
      return GW_EINVAL;
    }
    if(v < o->min || v > o->max) {
      snprintf(err, errlen, "--%s: must be between %ld and %ld, got %ld", o->name, o->min,
               o->max, v);
      return GW_EINVAL;
    }
    *(long *)p = v;
    return GW_OK;
  }
  }
  return GW_EINVAL;
}

static const struct cfg_opt *find(const struct cfg_opt *opts, const char *name, size_t n)
{
  for(const struct cfg_opt *o = opts; o->name; o++)
    if(strlen(o->name) == n && !strncmp(o->name, name, n))
      return o;
  return NULL;
}

gw_rc cfg_parse(const struct cfg_opt *opts, void *cfg, int argc, char **argv, char *err,
                size_t errlen)
{
  gw_rc rc = GW_OK;
  for(const struct cfg_opt *o = opts; o->name && !rc; o++) {
    /* Every option starts from its default, or from empty: never from what was in memory. */
    char *field = (char *)cfg + o->offset;
    if(o->type == CFG_STRLIST)
      ((const char **)field)[0] = NULL;
    else if(o->type == CFG_STR)
      *(const char **)field = NULL;
    else if(o->type == CFG_INT)
      *(long *)field = 0;
    else
      *(int *)field = 0;
    if(o->dflt)
      rc = set(o, cfg, o->dflt, err, errlen);
    const char *e = o->env ? getenv(o->env) : NULL;
    if(!rc && e && *e)
      rc = set(o, cfg, e, err, errlen);
  }
  for(int i = 1; i < argc && !rc; i++) {
    const char *a = argv[i];
    if(!strcmp(a, "--help") || !strcmp(a, "-h"))
      return GW_ENOTFOUND;
    if(strncmp(a, "--", 2)) {
      snprintf(err, errlen, "unexpected argument \"%s\"; options start with --", a);
      return GW_EINVAL;
    }
    const char *name = a + 2, *eq = strchr(name, '=');
    const struct cfg_opt *o = find(opts, name, eq ? (size_t)(eq - name) : strlen(name));
    if(!o) {
      snprintf(err, errlen, "unknown option \"%s\"; see --help", a);
      return GW_EINVAL;
    }
    const char *val = eq ? eq + 1 : NULL;
    if(!val && o->type != CFG_BOOL) {
      if(i + 1 >= argc) {
        snprintf(err, errlen, "--%s needs a value", o->name);
        return GW_EINVAL;
      }
      val = argv[++i];
    }
    rc = set(o, cfg, val, err, errlen);
  }
  return rc;
}

void cfg_usage(FILE *out, const char *prog, const char *summary, const struct cfg_opt *opts)
{
  fprintf(out, "usage: %s [options]\n%s\n\noptions:\n", prog, summary);
  for(const struct cfg_opt *o = opts; o->name; o++) {
    char left[64];
    snprintf(left, sizeof(left), "--%s%s", o->name,
             o->type == CFG_BOOL ? "" : (o->type == CFG_INT ? " N" : " VALUE"));
    fprintf(out, "  %-26s %s", left, o->help);
    if(o->dflt)
      fprintf(out, " (default %s)", o->dflt);
    if(o->env)
      fprintf(out, " [$%s]", o->env);
    fputc('\n', out);
  }
}

int cfg_main(const struct cfg_opt *opts, void *cfg, int argc, char **argv, const char *prog,
             const char *summary)
{
  if(gw_version_asked(argc, argv, prog))
    return 0;
  char err[512];
  gw_rc rc = cfg_parse(opts, cfg, argc, argv, err, sizeof(err));
  if(rc == GW_ENOTFOUND) {
    cfg_usage(stdout, prog, summary, opts);
    return 0;
  }
  if(rc) {
    fprintf(stderr, "%s: %s\n", prog, err);
    return 2;
  }
  const struct cfg_opt *ll = find(opts, "log-level", 9);
  if(ll && ll->type == CFG_STR) {
    const char *v = *(const char **)((char *)cfg + ll->offset);
    int lvl = v ? log_level_parse(v) : LOG_INFO;
    if(lvl < 0) {
      fprintf(stderr, "%s: --log-level must be debug, info, warn or error, got \"%s\"\n", prog,
              v);
      return 2;
    }
    log_set_level((enum log_level)lvl);
  }
  return -1;
}

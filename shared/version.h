/*
 * version.h: what a binary says it is (`--version`, the startup log line, the godwit_build_info
 * metric): the release from the VERSION file, the git commit and the build date (the commit's
 * date, so a rebuild of one commit says the same). The Makefile writes them into
 * $(BUILD)/gen/version_gen.h, rewritten only when they change.
 */
#ifndef GW_VERSION_H
#define GW_VERSION_H

#include <stdio.h>

#include "rc.h"

struct strbuf;

const char *gw_version(void);    /* "0.1.0-dev" */
const char *gw_commit(void);     /* "f679079a1b2c", or "unknown" outside git */
const char *gw_build_date(void); /* "2026-12-02T03:12:18Z" */
/* "<prog> <version> (commit <commit>, built <date>)\n" on out. */
void gw_version_print(FILE *out, const char *prog);
/* Whether argv asks for --version (anywhere); then prints it on stdout. */
int gw_version_asked(int argc, char **argv, const char *prog);
/* The Prometheus gauge godwit_build_info{version,commit,build_date} 1, with its HELP and TYPE. */
gw_rc gw_version_metric(struct strbuf *sb) GW_MUST_CHECK;

#endif

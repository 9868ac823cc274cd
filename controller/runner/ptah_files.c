/*
 * ptah_files.c: the migrations directory (a ConfigMap mounted as files). Each file is one
 * version, named <digits>_<description>.sql; the version is the integer value of the digits
 * (1 to 999999999999999), the checksum the sha256 of the file's bytes. Names starting with '.'
 * are kubelet's (..data, ..<timestamp>) and skipped. Every other entry must be such a file:
 * one bad name, one empty, unreadable or NUL-holding file, or two files of one version refuse
 * the whole directory, before the database is contacted, naming every file at fault.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "digest.h"
#include "ptah.h"
#include "strbuf.h"

#define MAX_LISTED 20 /* problems named in the message; the rest are counted */

struct problems {
  struct strbuf sb;
  size_t n;
};

static void problem(struct problems *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(struct problems *p, const char *fmt, ...)
{
  if(p->n++ >= MAX_LISTED)
    return;
  char buf[640];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if(strbuf_addf(&p->sb, "%s%s", p->n > 1 ? "; " : "", buf))
    strbuf_init(&p->sb, 1 << 16); /* out of memory: the count still tells */
}

/* NULL, or why name is not <digits>_<description>.sql with a version in range. */
static const char *parse_name(const char *name, long long *version, const char **desc,
                              size_t *desclen)
{
  size_t n = strlen(name);
  const char *p = name;
  while(isdigit((unsigned char)*p))
    p++;
  if(p == name || *p != '_' || n < 4 || strcmp(name + n - 4, ".sql"))
    return "is not named <digits>_<description>.sql (as in 0001_create_users.sql)";
  *desc = p + 1;
  *desclen = (size_t)(name + n - 4 - *desc);
  if(*desclen == 0)
    return "has no description after the version (as in 0001_create_users.sql)";
  for(size_t i = 0; i < *desclen; i++) {
    char ch = (*desc)[i];
    if(!isalnum((unsigned char)ch) && ch != '_' && ch != '-' && ch != '.')
      return "has a description with characters other than letters, digits, '_', '-' and '.'";
  }
  const char *d = name;
  while(d < p - 1 && *d == '0')
    d++;
  if(p - d > 15)
    return "has a version above 999999999999999 (15 digits)";
  *version = strtoll(d, NULL, 10);
  if(*version < 1)
    return "has version 0: versions start at 1";
  return NULL;
}

/* Reads path into f->text; NULL or why not. */
static const char *read_text(const char *path, struct pm_file *f, char *why, size_t whylen)
{
  FILE *in = fopen(path, "rb");
  if(!in) {
    snprintf(why, whylen, "cannot be read: %s", strerror(errno));
    return why;
  }
  struct stat sb;
  const char *bad = NULL;
  if(fstat(fileno(in), &sb) != 0 || !S_ISREG(sb.st_mode))
    bad = "is not a regular file";
  else if(sb.st_size > PTAH_FILE_MAX)
    bad = "is larger than 16 MiB";
  else if(!(f->text = malloc((size_t)sb.st_size + 1)))
    bad = "cannot be read: out of memory";
  if(!bad) {
    f->len = fread(f->text, 1, (size_t)sb.st_size, in);
    f->text[f->len] = '\0';
    if(ferror(in) || f->len != (size_t)sb.st_size)
      bad = "cannot be read: a short read (did the ConfigMap change meanwhile?)";
    else if(memchr(f->text, '\0', f->len))
      bad = "holds a NUL byte: a migration is SQL text";
  }
  fclose(in);
  if(!bad) {
    bool blank = true;
    for(size_t i = 0; i < f->len && blank; i++)
      blank = isspace((unsigned char)f->text[i]);
    if(blank)
      bad = "is empty: a version must hold SQL";
  }
  return bad;
}

static int by_version(const void *a, const void *b)
{
  const struct pm_file *x = a, *y = b;
  if(x->version != y->version)
    return x->version < y->version ? -1 : 1;
  return strcmp(x->name, y->name);
}

static int by_name(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The directory's names, '.'-prefixed ones left out, sorted; -1 with errno when unreadable. */
static int list_dir(const char *dir, char ***names, size_t *n)
{
  DIR *d = opendir(dir);
  if(!d)
    return -1;
  size_t cap = 0;
  struct dirent *e;
  int rc = 0;
  while(!rc && (e = readdir(d))) {
    if(e->d_name[0] == '.')
      continue;
    if(*n == cap) {
      cap = cap ? cap * 2 : 32;
      char **grown = realloc(*names, cap * sizeof(char *));
      if(!grown) {
        errno = ENOMEM;
        rc = -1;
        break;
      }
      *names = grown;
    }
    if(!((*names)[*n] = strdup(e->d_name))) {
      errno = ENOMEM;
      rc = -1;
      break;
    }
    (*n)++;
  }
  closedir(d);
  if(!rc && *n)
    qsort(*names, *n, sizeof(char *), by_name);
  return rc;
}

static void load_one(struct pm_ctx *c, const char *name, struct problems *p)
{
  long long version = 0;
  const char *desc = NULL;
  size_t desclen = 0;
  const char *why = parse_name(name, &version, &desc, &desclen);
  if(why) {
    problem(p, "\"%s\" %s", name, why);
    return;
  }
  char path[4096], buf[160];
  snprintf(path, sizeof(path), "%s/%s", c->o.migrations_dir, name);
  struct pm_file f = { .version = version };
  why = read_text(path, &f, buf, sizeof(buf));
  f.name = strdup(name);
  f.description = strndup(desc, desclen);
  if(!why && (!f.name || !f.description))
    why = "cannot be read: out of memory";
  if(why) {
    problem(p, "\"%s\" %s", name, why);
    free(f.text);
    free(f.name);
    free(f.description);
    return;
  }
  if(digest_sha256(f.text, f.len, f.checksum)) {
    problem(p, "\"%s\" cannot be checksummed: out of memory", name);
    free(f.text);
    free(f.name);
    free(f.description);
    return;
  }
  c->files[c->nfiles++] = f;
}

int pm_files_load(struct pm_ctx *c)
{
  const char *dir = c->o.migrations_dir;
  char **names = NULL;
  size_t n = 0;
  if(list_dir(dir, &names, &n)) {
    int err = errno;
    st_fail(&c->st, false, "files", "cannot read the migrations directory \"%s\": %s", dir,
            strerror(err));
    pm_set(c, PM_FAILED, "cannot read the migrations directory \"%s\": %s: check the Job's "
           "ConfigMap volume (spec.migrations.configMapRef); nothing was applied", dir,
           strerror(err));
    for(size_t i = 0; i < n; i++)
      free(names[i]);
    free(names);
    return -1;
  }
  struct problems p = { .n = 0 };
  strbuf_init(&p.sb, 1 << 16);
  c->files = calloc(n ? n : 1, sizeof(*c->files));
  if(!c->files)
    problem(&p, "out of memory");
  for(size_t i = 0; i < n && c->files; i++)
    load_one(c, names[i], &p);
  for(size_t i = 0; i < n; i++)
    free(names[i]);
  free(names);
  if(c->nfiles)
    qsort(c->files, c->nfiles, sizeof(*c->files), by_version);
  for(size_t i = 1; i < c->nfiles; i++)
    if(c->files[i].version == c->files[i - 1].version)
      problem(&p, "\"%s\" and \"%s\" both have version %lld", c->files[i - 1].name,
              c->files[i].name, c->files[i].version);
  if(p.n) {
    char more[64] = "";
    if(p.n > MAX_LISTED)
      snprintf(more, sizeof(more), "; and %zu more", p.n - MAX_LISTED);
    st_fail(&c->st, false, "files", "%s%s", strbuf_str(&p.sb), more);
    pm_set(c, PM_FAILED, "the migrations in \"%s\" are refused: %s%s. Fix the ConfigMap "
           "(spec.migrations.configMapRef): each key is one version, <digits>_<description>.sql, "
           "each version once. Nothing was applied; the database was not contacted", dir,
           strbuf_str(&p.sb), more);
    strbuf_release(&p.sb);
    return -1;
  }
  strbuf_release(&p.sb);
  if(c->nfiles)
    st_pass(&c->st, "files", "%zu version%s in \"%s\", from %lld to %lld", c->nfiles,
            c->nfiles == 1 ? "" : "s", dir, c->files[0].version, c->files[c->nfiles - 1].version);
  else
    st_warn(&c->st, "files", "\"%s\" holds no migration", dir);
  return 0;
}

const struct pm_file *pm_file_find(const struct pm_ctx *c, long long version)
{
  size_t lo = 0, hi = c->nfiles;
  while(lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if(c->files[mid].version < version)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < c->nfiles && c->files[lo].version == version ? &c->files[lo] : NULL;
}

void pm_files_release(struct pm_ctx *c)
{
  for(size_t i = 0; i < c->nfiles; i++) {
    free(c->files[i].name);
    free(c->files[i].description);
    free(c->files[i].text);
  }
  free(c->files);
  c->files = NULL;
  c->nfiles = 0;
}

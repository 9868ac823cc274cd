/*
 * The samples under manifests/samples are admitted and those under manifests/samples/refused
 * are refused with exactly the causes their header announces:
 *   # expect: <field path> <CauseReason>     (one line per expected cause)
 *   # user: <name>                           (default alice, group db-approvers)
 *   # policy: <path of a policy JSON>        (default: the built-in policy)
 *   # extra: <userInfo.extra key>=<value>    (the bound token's pod-name and pod-uid)
 * A refused sample is refused with exactly its announced causes, no more.
 * One document is a CREATE; two are the stored object and then the UPDATE.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apitest.h"
#include "json.h"
#include "jsonpatch.h"
#include "yamldoc.h"

#define SAMPLES "manifests/samples"

struct header {
  char expect[16][2][160];
  int nexpect;
  char user[64];
  char policy[256];
  char pod_name[128], pod_uid[128];
};

static void read_header(const char *path, struct header *h)
{
  memset(h, 0, sizeof(*h));
  snprintf(h->user, sizeof(h->user), "alice");
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f, "%s", path);
  char line[512];
  while(fgets(line, sizeof(line), f)) {
    line[strcspn(line, "\r\n")] = '\0';
    if(line[0] != '#')
      continue;
    if(!strncmp(line, "# expect: ", 10) && h->nexpect < 16) {
      cr_assert_eq(sscanf(line + 10, "%159s %159s", h->expect[h->nexpect][0],
                          h->expect[h->nexpect][1]), 2, "%s: bad expect line \"%s\"", path, line);
      h->nexpect++;
    } else if(!strncmp(line, "# user: ", 8))
      snprintf(h->user, sizeof(h->user), "%.63s", line + 8);
    else if(!strncmp(line, "# policy: ", 10))
      snprintf(h->policy, sizeof(h->policy), "%.255s", line + 10);
    else if(!strncmp(line, "# extra: authentication.kubernetes.io/pod-name=", 47))
      snprintf(h->pod_name, sizeof(h->pod_name), "%.127s", line + 47);
    else if(!strncmp(line, "# extra: authentication.kubernetes.io/pod-uid=", 46))
      snprintf(h->pod_uid, sizeof(h->pod_uid), "%.127s", line + 46);
    else if(!strncmp(line, "# extra: ", 9))
      cr_assert_fail("%s: unsupported extra \"%s\"", path, line + 9);
  }
  fclose(f);
}

static struct policy *load_policy(const char *path)
{
  if(!*path)
    return NULL;
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f, "policy file %s", path);
  static char buf[65536];
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  return t_policy(buf);
}

static const struct api_kind *kind_of(const cJSON *doc)
{
  const char *av = json_get_str(doc, "apiVersion"), *kind = json_get_str(doc, "kind");
  if(!av || !kind || !strchr(av, '/'))
    return NULL;
  char group[128];
  snprintf(group, sizeof(group), "%.*s", (int)(strchr(av, '/') - av), av);
  return api_find_kind(group, kind);
}

static const struct t_user *user_of(const struct header *h)
{
  static struct t_user u;
  if(!strcmp(h->user, "alice"))
    u = T_ALICE;
  else if(!strcmp(h->user, "bob"))
    u = T_BOB;
  else
    u = (struct t_user){ .name = h->user, .groups = { "system:authenticated" } };
  if(!strncmp(h->user, "system:serviceaccount:", 22))
    u.groups[1] = "system:serviceaccounts";
  u.extra_pod_name = *h->pod_name ? h->pod_name : NULL;
  u.extra_pod_uid = *h->pod_uid ? h->pod_uid : NULL;
  return &u;
}

/* The object as stored after mutation: the patch applied. */
static char *mutated(const struct api_kind *k, enum api_op op, const char *obj, const char *old,
                     const struct t_user *u, const struct policy *p)
{
  cJSON *o = t_default(op, k->group, k->kind, obj, old, u, p);
  char *s = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  return s;
}

typedef void (*file_fn)(const char *path, int *count);

static void each_file(const char *dir, file_fn fn, int *count)
{
  DIR *d = opendir(dir);
  cr_assert_not_null(d, "cannot open %s (run the tests from the repository root)", dir);
  struct dirent *e;
  char names[256][256];
  int n = 0;
  while((e = readdir(d)) && n < 256) {
    size_t l = strlen(e->d_name);
    if(l > 5 && !strcmp(e->d_name + l - 5, ".yaml"))
      snprintf(names[n++], sizeof(names[0]), "%s", e->d_name);
  }
  closedir(d);
  for(int i = 0; i < n; i++) {
    char path[600];
    snprintf(path, sizeof(path), "%.200s/%.255s", dir, names[i]);
    fn(path, count);
  }
}

static cJSON *load(const char *path)
{
  cJSON *docs;
  char err[256];
  cr_assert_eq(yamldoc_parse_file(path, &docs, err, sizeof(err)), GW_OK, "%s", err);
  return docs;
}

static void valid_sample(const char *path, int *count)
{
  struct header h;
  read_header(path, &h);
  struct policy *p = load_policy(h.policy);
  cJSON *docs = load(path);
  const cJSON *d;
  cJSON_ArrayForEach(d, docs)
  {
    const struct api_kind *k = kind_of(d);
    if(!k)
      continue;
    char *obj = cJSON_PrintUnformatted(d);
    char *m = mutated(k, API_CREATE, obj, NULL, user_of(&h), p);
    struct api_result r;
    t_admit(&r, API_CREATE, k->group, k->kind, m, NULL, user_of(&h), p);
    cr_expect_eq(r.errs.n, 0, "%s: sample refused: %s", path, t_causes(&r));
    api_result_release(&r);
    cJSON_free(obj);
    cJSON_free(m);
    (*count)++;
  }
  cJSON_Delete(docs);
  policy_free(p);
}

static void refused_sample(const char *path, int *count)
{
  struct header h;
  read_header(path, &h);
  cr_assert_gt(h.nexpect, 0, "%s: a refused sample needs '# expect: <field> <Reason>' lines", path);
  struct policy *p = load_policy(h.policy);
  cJSON *docs = load(path);
  int n = cJSON_GetArraySize(docs);
  cr_assert(n == 1 || n == 2, "%s: one document (create) or two (stored, update)", path);
  const cJSON *last = cJSON_GetArrayItem(docs, n - 1);
  const struct api_kind *k = kind_of(last);
  cr_assert_not_null(k, "%s: not a godwit kind", path);
  const struct t_user *u = user_of(&h);
  char *old = NULL;
  if(n == 2) {
    char *stored = cJSON_PrintUnformatted(cJSON_GetArrayItem(docs, 0));
    old = mutated(k, API_CREATE, stored, NULL, &T_ALICE, NULL);
    cJSON *o = t_json(old), *st = cJSON_GetObjectItem(cJSON_GetArrayItem(docs, 0), "status");
    if(st) /* status arrives through /status; the mutation keeps it as written */
      cJSON_ReplaceItemInObject(o, "status", cJSON_Duplicate(st, 1));
    cJSON_free(old);
    old = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    cJSON_free(stored);
  }
  char *sent = cJSON_PrintUnformatted(last);
  enum api_op op = n == 2 ? API_UPDATE : API_CREATE;
  /* As kube-apiserver does: the mutating webhook first, then the validating one. */
  char *obj = mutated(k, op, sent, old, u, p);
  cJSON_free(sent);
  struct api_result r;
  t_admit(&r, op, k->group, k->kind, obj, old, u, p);
  cr_expect_gt(r.errs.n, 0, "%s: expected a refusal, it was admitted", path);
  cr_expect_eq(r.errs.n, (size_t)h.nexpect, "%s: %d causes announced, got: %s", path, h.nexpect,
               t_causes(&r));
  for(int i = 0; i < h.nexpect; i++) {
    bool found = false;
    for(size_t j = 0; j < r.errs.n; j++)
      found |= !strcmp(r.errs.v[j].field, h.expect[i][0]) &&
               !strcmp(ferr_reason(r.errs.v[j].type), h.expect[i][1]);
    cr_expect(found, "%s: expected %s %s, got: %s", path, h.expect[i][0], h.expect[i][1],
              t_causes(&r));
  }
  api_result_release(&r);
  cJSON_free(obj);
  if(old)
    cJSON_free(old);
  cJSON_Delete(docs);
  policy_free(p);
  (*count)++;
}

Test(samples, valid_samples_are_admitted)
{
  int count = 0;
  each_file(SAMPLES, valid_sample, &count);
  cr_assert_gt(count, 0);
}

Test(samples, refused_samples_are_refused_with_their_causes)
{
  int count = 0;
  each_file(SAMPLES "/refused", refused_sample, &count);
  cr_assert_gt(count, 0);
}

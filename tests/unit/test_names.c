/*
 * test_names.c: every name kubectl resolves a godwit resource by (plural, singular, kind, short
 * names, across all three groups) reaches exactly one resource, and none shadows a built-in
 * Kubernetes resource: `kubectl get pmig` must mean one thing.
 */
#include <criterion/criterion.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "api/api.h"

/* Names and short names of the built-in resources kubectl 1.32 lists (kubectl api-resources). */
static const char *const builtin[] = {
  "bindings", "componentstatuses", "cs", "configmaps", "cm", "endpoints", "ep", "events", "ev",
  "limitranges", "limits", "namespaces", "ns", "nodes", "no", "persistentvolumeclaims", "pvc",
  "persistentvolumes", "pv", "pods", "po", "podtemplates", "replicationcontrollers", "rc",
  "resourcequotas", "quota", "secrets", "serviceaccounts", "sa", "services", "svc",
  "mutatingwebhookconfigurations", "validatingwebhookconfigurations",
  "customresourcedefinitions", "crd", "crds", "apiservices", "controllerrevisions",
  "daemonsets", "ds", "deployments", "deploy", "replicasets", "rs", "statefulsets", "sts",
  "tokenreviews", "selfsubjectaccessreviews", "selfsubjectrulesreviews",
  "subjectaccessreviews", "horizontalpodautoscalers", "hpa", "cronjobs", "cj", "jobs",
  "certificatesigningrequests", "csr", "leases", "endpointslices", "flowschemas",
  "prioritylevelconfigurations", "ingressclasses", "ingresses", "ing", "networkpolicies",
  "netpol", "runtimeclasses", "poddisruptionbudgets", "pdb", "clusterrolebindings",
  "clusterroles", "rolebindings", "roles", "priorityclasses", "pc", "csidrivers", "csinodes",
  "csistoragecapacities", "storageclasses", "sc", "volumeattachments", NULL
};

struct seen {
  char name[96];
  char owner[96];
};

static void add(struct seen *s, size_t *n, const char *name, const struct api_kind *k)
{
  char owner[96], lower[96];
  snprintf(owner, sizeof(owner), "%s.%s", k->plural, k->group);
  snprintf(lower, sizeof(lower), "%s", name);
  for(char *p = lower; *p; p++)
    *p = (char)tolower((unsigned char)*p);
  for(size_t i = 0; builtin[i]; i++)
    cr_expect(strcmp(lower, builtin[i]), "%s: \"%s\" shadows the built-in resource name \"%s\"",
              owner, lower, builtin[i]);
  for(size_t i = 0; i < *n; i++)
    if(!strcmp(s[i].name, lower))
      cr_expect(!strcmp(s[i].owner, owner), "\"%s\" names both %s and %s: kubectl reaches only "
                "one of them", lower, s[i].owner, owner);
  cr_assert_lt(*n, 256);
  snprintf(s[*n].name, sizeof(s[*n].name), "%s", lower);
  snprintf(s[*n].owner, sizeof(s[*n].owner), "%s", owner);
  (*n)++;
}

Test(names, every_name_reaches_one_resource)
{
  static struct seen seen[256];
  size_t n = 0, kinds = 0;
  for(const struct api_kind *const *k = api_kinds(); *k; k++, kinds++) {
    add(seen, &n, (*k)->plural, *k);
    add(seen, &n, (*k)->singular, *k);
    if(strcmp((*k)->singular, (*k)->kind) && strcasecmp((*k)->singular, (*k)->kind))
      add(seen, &n, (*k)->kind, *k);
    cr_expect_not_null((*k)->short_names, "%s has no short name", (*k)->kind);
    for(const char *const *s = (*k)->short_names; s && *s; s++)
      add(seen, &n, *s, *k);
  }
  cr_assert_geq(kinds, 8, "the registry lists %zu kinds", kinds);
}

Test(names, ptahmigrations_and_podmigrations_have_their_own_short_names)
{
  const struct api_kind *ptah = api_find_kind("ptah.run", "PtahMigration");
  const struct api_kind *pod = api_find_kind("migration.podmotion.io", "PodMigration");
  cr_assert(ptah && pod);
  cr_expect_str_eq(ptah->short_names[0], "ptahmig");
  cr_expect_str_eq(pod->short_names[0], "pmig");
}

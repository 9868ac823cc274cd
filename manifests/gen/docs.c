/* The generated field reference: one Markdown page per group, every kind, every version. */
#include "gen.h"

#include <stdio.h>
#include <string.h>

static gw_rc cell(struct strbuf *sb, const char *s)
{
  gw_rc rc = GW_OK;
  for(const char *p = s; *p && !rc; p++) {
    if(*p == '|')
      rc = strbuf_adds(sb, "\\|");
    else if(*p == '\n')
      rc = strbuf_addc(sb, ' ');
    else
      rc = strbuf_addc(sb, *p);
  }
  return rc;
}

static gw_rc allowed(struct strbuf *sb, const struct sch_field *f)
{
  gw_rc rc = GW_OK;
  if(f->enums) {
    for(const char *const *e = f->enums; *e && !rc; e++)
      rc = strbuf_addf(sb, "%s`%s`", e == f->enums ? "" : ", ", *e);
    return rc;
  }
  if(f->type == SCH_INT && (f->flags & SCH_HAS_MIN) && (f->flags & SCH_HAS_MAX))
    return strbuf_addf(sb, "%lld to %lld", f->min, f->max);
  if(f->type == SCH_INT && (f->flags & SCH_HAS_MIN))
    return strbuf_addf(sb, "at least %lld", f->min);
  if(f->format)
    rc = strbuf_addf(sb, "%s (e.g. `%s`)", f->format->name,
                     f->format->examples ? f->format->examples[0] : "");
  if(!rc && f->max_items)
    rc = strbuf_addf(sb, "%sat most %d items", f->format ? "; " : "", f->max_items);
  return rc;
}

static gw_rc fields(struct strbuf *sb, const struct sch_field *fs, const char *prefix, int depth)
{
  gw_rc rc = GW_OK;
  for(const struct sch_field *f = fs; f && f->name && !rc; f++) {
    char path[512];
    snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "." : "", f->name);
    rc = strbuf_addf(sb, "| `%s` | %s | %s | %s%s%s | ", path, sch_type_name(f),
                     (f->flags & SCH_REQUIRED) ? "yes" : "", f->dflt ? "`" : "",
                     f->dflt ? f->dflt : "", f->dflt ? "`" : "");
    if(!rc)
      rc = allowed(sb, f);
    if(!rc)
      rc = strbuf_adds(sb, " | ");
    if(!rc)
      rc = cell(sb, f->desc ? f->desc : "");
    if(!rc)
      rc = strbuf_adds(sb, " |\n");
    bool nested = (f->type == SCH_OBJECT || ((f->type == SCH_ARRAY || f->type == SCH_MAP) &&
                                             f->item == SCH_OBJECT)) &&
                  f->fields && !(f->flags & SCH_CONDITIONS);
    if(!rc && nested && depth < 8) {
      char sub[520];
      snprintf(sub, sizeof(sub), "%s%s", path,
               f->type == SCH_ARRAY ? "[]" : (f->type == SCH_MAP ? "[key]" : ""));
      rc = fields(sb, f->fields, sub, depth + 1);
    }
  }
  return rc;
}

static gw_rc rules(struct strbuf *sb, const struct rule *rs, const char *when)
{
  gw_rc rc = GW_OK;
  for(const struct rule *r = rs; r && r->check && !rc; r++) {
    rc = strbuf_addf(sb, "| %s | `%s` | %s | ", when, r->field,
                     r->policy ? "Forbidden (403, admission policy)" : ferr_reason(r->type));
    if(!rc)
      rc = cell(sb, r->msg);
    if(!rc)
      rc = strbuf_adds(sb, " |\n");
  }
  return rc;
}

static gw_rc kind_page(struct strbuf *sb, const struct api_kind *k)
{
  const struct api_version *hub = api_hub(k);
  gw_rc rc = strbuf_addf(sb, "## %s\n\n%s\n\n", k->kind, k->desc ? k->desc : "");
  if(!rc)
    rc = strbuf_addf(sb, "Plural `%s`, %s. Served versions:", k->plural,
                     k->namespaced ? "namespaced" : "cluster-scoped");
  for(size_t i = 0; i < k->nversions && !rc; i++)
    rc = strbuf_addf(sb, " `%s`%s", k->versions[i].name,
                     &k->versions[i] == hub ? " (storage)" : " (deprecated)");
  if(!rc && k->short_names && k->short_names[0])
    rc = strbuf_addf(sb, ". Short name `%s`", k->short_names[0]);
  if(!rc)
    rc = strbuf_adds(sb, ".\n\n");
  for(size_t i = k->nversions; i-- > 0 && !rc;) {
    const struct api_version *v = &k->versions[i];
    rc = strbuf_addf(sb, "### %s/%s spec\n\n| Field | Type | Required | Default | Allowed | "
                         "Description |\n|---|---|---|---|---|---|\n",
                     k->group, v->name);
    if(!rc)
      rc = fields(sb, v->spec, "spec", 0);
    if(!rc && v->status)
      rc = strbuf_addf(sb, "\n### %s/%s status\n\n| Field | Type | Required | Default | Allowed "
                           "| Description |\n|---|---|---|---|---|---|\n",
                       k->group, v->name);
    if(!rc && v->status)
      rc = fields(sb, v->status, "status", 0);
    if(!rc && v->moves && v->moves->old) {
      rc = strbuf_addf(sb, "\n%s to %s field mapping:\n\n| %s | %s |\n|---|---|\n", v->name,
                       hub->name, v->name, hub->name);
      for(const struct conv_move *m = v->moves; m->old && !rc; m++)
        rc = strbuf_addf(sb, "| `%s` | `%s` |\n", m->old, m->hub);
    }
    if(!rc)
      rc = strbuf_adds(sb, "\n");
  }
  if(!rc && ((k->rules && k->rules->check) || (k->update_rules && k->update_rules->check))) {
    rc = strbuf_addf(sb, "### Validation rules (%s field paths; older versions report their own "
                         "paths)\n\n| On | Field | Cause | Message |\n|---|---|---|---|\n",
                     hub->name);
    if(!rc)
      rc = rules(sb, k->rules, "create, update");
    if(!rc)
      rc = rules(sb, k->update_rules, "update");
    if(!rc)
      rc = strbuf_adds(sb, "\nType, required, range, enum, format and length checks come from "
                           "the tables above; each failure is one cause.\n\n");
  }
  return rc;
}

gw_rc gen_reference(struct strbuf *sb, const char *group)
{
  gw_rc rc = strbuf_addf(sb, "# %s field reference\n\n<!-- Generated by `make manifests` from "
                             "shared/api; do not edit. -->\n\n",
                         group);
  for(const struct api_kind *const *k = api_kinds(); *k && !rc; k++)
    if(!strcmp((*k)->group, group))
      rc = kind_page(sb, *k);
  return rc;
}

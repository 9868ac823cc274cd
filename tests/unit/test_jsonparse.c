/*
 * test_jsonparse.c: json_parse_strict() (shared/jsonparse.c) builds the tree cJSON 1.7.15 builds
 * (types, keys, strings, the same double to the bit, valueint's saturation, member order, links)
 * for every text both accept, refuses what RFC 8259 refuses even where cJSON is lax, says where
 * the input went wrong, and bounds the depth. Property tests: generated objects of every kind and
 * version, random JSON with every escape and number shape, and random mutations of both (what
 * json_parse_strict accepts, cJSON must accept alike), in an arena and on the heap.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "arena.h"
#include "gen.h"
#include "json.h"
#include "strbuf.h"

/* Two trees built alike: the same links, types, keys and values (doubles compared bit for bit). */
static void assert_same_tree(const cJSON *a, const cJSON *b, const char *what)
{
  cr_assert_eq(a->type, b->type, "%s: type %d, cJSON %d", what, a->type, b->type);
  cr_assert_eq(!a->string, !b->string, "%s: key presence", what);
  if(a->string)
    cr_assert_str_eq(a->string, b->string, "%s", what);
  cr_assert_eq(!a->valuestring, !b->valuestring, "%s: valuestring presence", what);
  if(a->valuestring)
    cr_assert_str_eq(a->valuestring, b->valuestring, "%s", what);
  cr_assert_eq(memcmp(&a->valuedouble, &b->valuedouble, sizeof(double)), 0,
               "%s: number %.17g, cJSON %.17g", what, a->valuedouble, b->valuedouble);
  cr_assert_eq(a->valueint, b->valueint, "%s: valueint %d, cJSON %d", what, a->valueint,
               b->valueint);
  const cJSON *ca = a->child, *cb = b->child;
  cr_assert_eq(!ca, !cb, "%s: children", what);
  if(ca) {
    cr_assert_not_null(ca->prev, "%s: the first child's prev must be the last child", what);
    cr_assert_null(ca->prev->next, "%s: the first child's prev must be the last child", what);
  }
  for(; ca && cb; ca = ca->next, cb = cb->next) {
    if(ca != a->child)
      cr_assert_eq(ca->prev->next, ca, "%s: prev links", what);
    assert_same_tree(ca, cb, what);
  }
  cr_assert_eq(!ca, !cb, "%s: number of children", what);
}

/* Parses text with both; both must accept it and agree. */
static void assert_parses_like_cjson(const char *text, size_t len, const char *what)
{
  cJSON *mine, *theirs = cJSON_ParseWithLength(text, len);
  char err[160];
  cr_assert_eq(json_parse_strict(text, len, &mine, err, sizeof(err)), GW_OK, "%s: %s: %.200s",
               what, err, text);
  cr_assert_not_null(theirs, "%s: cJSON refused %.200s", what, text);
  assert_same_tree(mine, theirs, what);
  cJSON_Delete(mine);
  cJSON_Delete(theirs);
}

static gw_rc parse(const char *text, char *err, size_t errlen)
{
  cJSON *v;
  gw_rc rc = json_parse_strict(text, strlen(text), &v, err, errlen);
  cr_assert_eq(!v, rc != GW_OK);
  cJSON_Delete(v);
  return rc;
}

static void assert_refused(const char *text, const char *msg)
{
  char err[160] = "";
  cr_assert_eq(parse(text, err, sizeof(err)), GW_EPARSE, "accepted %s", text);
  cr_assert_str_eq(err, msg, "%s", text);
}

Test(jsonparse, generated_objects_of_every_kind_and_version, .timeout = 120)
{
  struct gen g;
  gen_seed(&g, 11);
  for(const struct api_kind *const *kp = api_kinds(); *kp; kp++)
    for(size_t vi = 0; vi < (*kp)->nversions; vi++)
      for(int i = 0; i < 30; i++) {
        cJSON *o = gen_object(&g, *kp, &(*kp)->versions[vi]);
        char *text = i % 2 ? cJSON_Print(o) : cJSON_PrintUnformatted(o);
        char what[128];
        snprintf(what, sizeof(what), "%s %s #%d", (*kp)->kind, (*kp)->versions[vi].name, i);
        assert_parses_like_cjson(text, strlen(text), what);
        cJSON_free(text);
        cJSON_Delete(o);
      }
}

/* ---- random JSON text ---- */

struct rnd {
  unsigned long long s;
};

static unsigned below(struct rnd *r, unsigned n)
{
  r->s = r->s * 6364136223846793005ull + 1442695040888963407ull;
  return (unsigned)(r->s >> 33) % n;
}

static void add(struct strbuf *sb, const char *s)
{
  cr_assert_eq(strbuf_add(sb, s, strlen(s)), GW_OK);
}

static void rnd_string(struct rnd *r, struct strbuf *sb)
{
  static const char *const parts[] = {
    "a", "metadata", "-_.:/", " ", "\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t",
    "\\u0041", "\\u00e9", "\\u2603", "\\ud83d\\ude00", "\\uDBFF\\uDFFF", "caf\xc3\xa9", "\xe2\x98\x83",
    "0123456789abcdef", "kubectl.kubernetes.io/last-applied-configuration", "\x7f", "\xff",
  };
  add(sb, "\"");
  for(unsigned n = below(r, 6); n; n--)
    add(sb, parts[below(r, sizeof(parts) / sizeof(parts[0]))]);
  add(sb, "\"");
}

static void rnd_number(struct rnd *r, struct strbuf *sb)
{
  static const char *const nums[] = {
    "0", "-0", "1", "-1", "7", "42", "2147483647", "2147483648", "-2147483648", "-2147483649",
    "999999999999999", "1000000000000000", "9007199254740993", "18446744073709551616",
    "123456789012345678901234567890", "0.5", "-0.0", "3.141592653589793", "0.30000000000000004",
    "1e3", "1E+3", "1e-3", "-2.5e-7", "1e308", "1e309", "-1e309", "4.9e-324", "1e-400",
    "0.1e1", "123.456e-2", "100000000000000000000000000000000000000000000000",
  };
  add(sb, nums[below(r, sizeof(nums) / sizeof(nums[0]))]);
}

static void ws(struct rnd *r, struct strbuf *sb)
{
  static const char *const w[] = { "", "", "", " ", "\n", "\t", "\r\n  " };
  add(sb, w[below(r, 7)]);
}

static void rnd_value(struct rnd *r, struct strbuf *sb, int depth)
{
  unsigned k = below(r, depth > 6 ? 5 : 8);
  ws(r, sb);
  switch(k) {
  case 0:
    rnd_string(r, sb);
    break;
  case 1:
    rnd_number(r, sb);
    break;
  case 2:
    add(sb, below(r, 2) ? "true" : "false");
    break;
  case 3:
    add(sb, "null");
    break;
  case 4:
    rnd_string(r, sb);
    break;
  case 5:
  case 6: {
    add(sb, "{");
    for(unsigned n = below(r, 5), i = 0; i < n; i++) {
      if(i)
        add(sb, ",");
      ws(r, sb);
      rnd_string(r, sb);
      ws(r, sb);
      add(sb, ":");
      rnd_value(r, sb, depth + 1);
    }
    ws(r, sb);
    add(sb, "}");
    break;
  }
  default: {
    add(sb, "[");
    for(unsigned n = below(r, 5), i = 0; i < n; i++) {
      if(i)
        add(sb, ",");
      rnd_value(r, sb, depth + 1);
    }
    ws(r, sb);
    add(sb, "]");
  }
  }
  ws(r, sb);
}

Test(jsonparse, random_json_parses_as_cjson_parses_it, .timeout = 120)
{
  struct rnd r = { 1 };
  for(int i = 0; i < 3000; i++) {
    struct strbuf sb;
    strbuf_init(&sb, 1u << 20);
    rnd_value(&r, &sb, 0);
    char what[32];
    snprintf(what, sizeof(what), "random #%d", i);
    assert_parses_like_cjson(strbuf_str(&sb), sb.len, what);
    strbuf_release(&sb);
  }
}

/* The longest run of number bytes (damage can join numbers). */
static size_t longest_number(const char *t, size_t len)
{
  size_t best = 0, run = 0;
  for(size_t i = 0; i < len; i++) {
    run = strchr("0123456789+-.eE", t[i]) && t[i] ? run + 1 : 0;
    if(run > best)
      best = run;
  }
  return best;
}

/* One to three bytes of t replaced or deleted, or t cut short; *len_out its new length. */
static void damage_text(struct rnd *r, char *t, size_t *len_out)
{
  static const char damage[] = "{}[]\",:\\ 0-.eE+tfnu\x01\x7f";
  size_t len = *len_out;
  for(unsigned n = 1 + below(r, 3); n && len; n--) {
    size_t at = below(r, (unsigned)len);
    switch(below(r, 3)) {
    case 0: /* replace a byte */
      t[at] = damage[below(r, sizeof(damage) - 1)];
      break;
    case 1: /* delete a byte */
      memmove(t + at, t + at + 1, len - at);
      len--;
      break;
    default: /* cut the text short */
      len = at;
      t[len] = '\0';
    }
  }
  *len_out = len;
}

/* A random text, damaged (len set). */
static char *damaged_text(struct rnd *r, size_t *len_out)
{
  struct strbuf sb;
  strbuf_init(&sb, 1u << 20);
  rnd_value(r, &sb, 0);
  size_t len = sb.len;
  char *t = strbuf_take(&sb, &len);
  strbuf_release(&sb);
  damage_text(r, t, &len);
  *len_out = len;
  return t;
}

/* What json_parse_strict accepts of a damaged text, cJSON accepts too, as the same tree; what it
 * refuses has a message saying so. In an arena and on the heap (ASan sees the heap's frees). */
static void mutate_and_compare(bool in_arena)
{
  struct rnd r = { in_arena ? 3 : 5 };
  long accepted = 0, refused = 0;
  for(int i = 0; i < 4000; i++) {
    size_t len;
    char *t = damaged_text(&r, &len);
    struct arena a;
    arena_init(&a, 4096, 1u << 20);
    struct arena *prev = in_arena ? arena_activate(&a) : arena_activate(NULL);
    cJSON *mine;
    char err[160] = "";
    gw_rc rc = json_parse_strict(t, len, &mine, err, sizeof(err));
    if(rc == GW_OK && longest_number(t, len) < 63) {
      accepted++;
      cJSON *theirs = cJSON_ParseWithLength(t, len);
      cr_assert_not_null(theirs, "json_parse_strict accepted what cJSON refuses: %.300s", t);
      assert_same_tree(mine, theirs, t);
      cJSON_Delete(theirs);
      cJSON_Delete(mine);
    } else if(rc == GW_OK) { /* a number cJSON cuts at 63 bytes: long_numbers_are_read_whole */
      cJSON_Delete(mine);
    } else {
      refused++;
      cr_assert_eq(rc, GW_EPARSE, "%s", err);
      cr_assert_null(mine);
      cr_assert(!strncmp(err, "malformed JSON", 14) || !strncmp(err, "empty body", 10) ||
                  !strncmp(err, "JSON nested deeper", 18),
                "%s", err);
    }
    arena_activate(prev);
    arena_release(&a);
    free(t);
  }
  /* the damage must both keep and break texts, or the property proves nothing */
  cr_assert_gt(accepted, 200, "accepted %ld", accepted);
  cr_assert_gt(refused, 200, "refused %ld", refused);
}

Test(jsonparse, damaged_texts_in_an_arena, .timeout = 120)
{
  mutate_and_compare(true);
}

Test(jsonparse, damaged_texts_on_the_heap, .timeout = 120)
{
  mutate_and_compare(false);
}

/* ---- corners ---- */

Test(jsonparse, corners_parse_as_cjson_parses_them)
{
  static const char *const docs[] = {
    "{}", "[]", "0", "-0", "\"\"", "true", "false", "null", " \t\r\n[ 1 , 2 ] \n",
    "{\"a\":1,\"a\":2}",                      /* duplicate keys are kept, in order */
    "{\"\":{\"\":[]}}",                       /* empty keys */
    "\"\\u0041\\u00e9\\u2603\\ud83d\\ude00\"", /* one to four UTF-8 bytes */
    "\"\\uD83D\\uDE00 upper-case hex\"",
    "\"nul \\u0000 cuts the C string\"",    /* as cJSON: the value ends at the NUL */
    "\"\xc3\xa9\xe2\x98\x83 raw UTF-8 and a raw \x7f\"",
    "[2147483647,2147483648,-2147483648,-2147483649,1e400,-1e400,1e-400]",
    "[999999999999999,1000000000000000,9007199254740993,12345678901234567890]",
    "[0.1,1.5e3,1E3,1e+3,1e-3,-0.0,123.456e-2]",
    "\xEF\xBB\xBF{\"bom\":true}", /* a byte order mark is skipped, as cJSON skips it */
  };
  for(size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++)
    assert_parses_like_cjson(docs[i], strlen(docs[i]), docs[i]);
  /* a byte order mark before a value of one byte (cJSON skips it only before two or more) */
  cJSON *v;
  char err[160];
  cr_assert_eq(json_parse_strict("\xEF\xBB\xBF" "6", 4, &v, err, sizeof(err)), GW_OK, "%s", err);
  cr_assert_eq(v->valuedouble, 6);
  cJSON_Delete(v);
  /* a NUL counted in the length after the value */
  assert_parses_like_cjson("{\"a\":[1]}", 10, "trailing NUL");
}

Test(jsonparse, long_numbers_are_read_whole)
{
  /* cJSON reads at most 63 bytes of a number and refuses the rest; the grammar allows any */
  char text[200];
  memset(text, '1', 150);
  text[150] = '\0';
  cJSON *v;
  char err[160];
  cr_assert_eq(json_parse_strict(text, 150, &v, err, sizeof(err)), GW_OK, "%s", err);
  cr_assert(fabs(v->valuedouble / 1.1111111111111111e149 - 1) < 1e-15, "%.17g", v->valuedouble);
  cr_assert_eq(v->valueint, INT_MAX);
  cJSON_Delete(v);
}

Test(jsonparse, what_rfc_8259_refuses_is_refused_where_cjson_is_lax)
{
  static const struct {
    const char *text, *msg;
  } cases[] = {
    { "01", "malformed JSON: unexpected data after the value at byte 1" },
    { "[1.]", "malformed JSON at byte 3" },
    { "[-]", "malformed JSON at byte 2" },
    { "[.5]", "malformed JSON at byte 1" },
    { "[+1]", "malformed JSON at byte 1" },
    { "[1e]", "malformed JSON at byte 3" },
    { "[1e+]", "malformed JSON at byte 4" },
    { "[1,]", "malformed JSON at byte 3" },
    { "[,1]", "malformed JSON at byte 1" },
    { "{,}", "malformed JSON at byte 1" },
    { "{\"a\":1,}", "malformed JSON at byte 7" },
    { "{\"a\" 1}", "malformed JSON at byte 5" },
    { "{1:2}", "malformed JSON at byte 1" },
    { "[1 2]", "malformed JSON at byte 3" },
    { "\"\\x\"", "malformed JSON at byte 1" },
    { "\"\\uZZZZ\"", "malformed JSON at byte 1" }, /* cJSON: U+0000 */
    { "\"\\u12\"", "malformed JSON at byte 1" },
    { "\"\\ud800\"", "malformed JSON at byte 1" },   /* a first half alone */
    { "\"\\udc00\"", "malformed JSON at byte 1" },   /* a second half alone */
    { "\"\\ud800\\u0041\"", "malformed JSON at byte 1" },
    { "\"tab\tinside\"", "malformed JSON at byte 4" }, /* raw control characters */
    { "\"nl\ninside\"", "malformed JSON at byte 3" },
    { "\x0c[1]", "malformed JSON at byte 0" }, /* form feed is not JSON whitespace */
    { "[1]\x0b", "malformed JSON: unexpected data after the value at byte 3" },
    { "tru", "malformed JSON at byte 0" },
    { "nul", "malformed JSON at byte 0" },
    { "True", "malformed JSON at byte 0" },
    { "NaN", "malformed JSON at byte 0" },
    { "Infinity", "malformed JSON at byte 0" },
    { "not json", "malformed JSON at byte 0" },
    { "{} x", "malformed JSON: unexpected data after the value at byte 3" },
    { "{\"a\":", "malformed JSON: input ends early (5 bytes)" },
    { "[\"abc", "malformed JSON: input ends early (5 bytes)" },
    { "\"ends in a backslash\\", "malformed JSON: input ends early (21 bytes)" },
    { "   ", "malformed JSON: input ends early (3 bytes)" },
    { "", "empty body: expected a JSON object" },
  };
  for(size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    assert_refused(cases[i].text, cases[i].msg);
}

/* The depth of a tree counts its nodes down the longest branch (a scalar or an empty container
 * is 1): at most JSON_MAX_DEPTH, as before this parser, checked while descending. */
/* levels containers (arrays, or objects holding one member "k") around a scalar or nothing */
static size_t nest(char *text, int levels, bool objects, bool scalar)
{
  size_t n = 0;
  for(int i = 0; i < levels; i++)
    n += (size_t)sprintf(text + n, "%s", objects ? "{\"k\":" : "[");
  if(scalar || objects)
    text[n++] = '7';
  for(int i = 0; i < levels; i++)
    text[n++] = objects ? '}' : ']';
  text[n] = '\0';
  return n;
}

Test(jsonparse, depth_is_bounded_while_descending)
{
  char text[1000];
  char err[160];
  for(int levels = JSON_MAX_DEPTH - 2; levels <= JSON_MAX_DEPTH + 1; levels++)
    for(int kind = 0; kind < 3; kind++) {
      bool objects = kind == 2, scalar = kind == 1;
      nest(text, levels, objects, scalar);
      int depth = levels + (scalar || objects);
      gw_rc rc = parse(text, err, sizeof(err));
      if(depth <= JSON_MAX_DEPTH)
        cr_assert_eq(rc, GW_OK, "depth %d: %s", depth, err);
      else
        cr_assert_str_eq(err, "JSON nested deeper than 100 levels", "depth %d: %s", depth, text);
    }
  /* far deeper than cJSON's own limit, and cut short: still the depth, not a crash */
  static char deep[200001];
  memset(deep, '[', sizeof(deep) - 1);
  cJSON *v;
  cr_assert_eq(json_parse_strict(deep, sizeof(deep) - 1, &v, err, sizeof(err)), GW_EPARSE);
  cr_assert_str_eq(err, "JSON nested deeper than 100 levels");
}

Test(jsonparse, an_arena_past_its_limit_is_out_of_memory_not_malformed)
{
  struct arena a;
  arena_init(&a, 1024, 4096);
  struct arena *prev = arena_activate(&a);
  struct strbuf sb;
  strbuf_init(&sb, 1u << 20);
  add(&sb, "[");
  for(int i = 0; i < 500; i++)
    add(&sb, i ? ",\"some string\"" : "\"some string\"");
  add(&sb, "]");
  cJSON *v;
  char err[160];
  cr_assert_eq(json_parse_strict(strbuf_str(&sb), sb.len, &v, err, sizeof(err)),
               GW_ENOMEM);
  cr_assert_null(v);
  cr_assert(strstr(err, "out of memory"), "%s", err);
  arena_activate(prev);
  arena_release(&a);
  strbuf_release(&sb);
}

/* ---- members kept as text: json_parse_strict_raw ---- */

/* names rnd_string makes often: "" (no part), one part, two */
static const char *const raw_names[] = { "", "a", "metadata", "aa", "ametadata", NULL };

/* Materializes every Raw node under v, first checking that its text is a span of the input;
 * returns how many there were. */
static int materialize_all(cJSON *v, const char *t, size_t len)
{
  int n = 0;
  if(cJSON_IsRaw(v)) {
    cr_assert_not_null(memmem(t, len, v->valuestring, strlen(v->valuestring)),
                       "a Raw node holds text that was not sent: %s", v->valuestring);
    cr_assert_eq(json_materialize(v), GW_OK);
    cr_assert(!cJSON_IsRaw(v));
    n++;
  }
  for(cJSON *c = v->child; c; c = c->next)
    n += materialize_all(c, t, len);
  return n;
}

/* t parsed with the members raw_names names kept as text at depth: accepted or refused as
 * json_parse_strict does (the same message), and once materialized the same tree. Returns how
 * many Raw nodes it made, or -1 when refused. */
static int assert_raw_parses_alike(const char *t, size_t len, int depth, bool in_arena)
{
  struct arena a;
  arena_init(&a, 4096, 1u << 22);
  struct arena *prev = in_arena ? arena_activate(&a) : arena_activate(NULL);
  const struct json_raw spec = { depth, raw_names };
  cJSON *strict, *raw;
  char e1[160] = "", e2[160] = "";
  gw_rc r1 = json_parse_strict(t, len, &strict, e1, sizeof(e1));
  gw_rc r2 = json_parse_strict_raw(t, len, &spec, &raw, e2, sizeof(e2));
  cr_assert_eq(r1, r2, "depth %d: strict %s, kept as text %s: %.300s", depth, e1, e2, t);
  int n = -1;
  if(r1) {
    cr_assert_str_eq(e1, e2, "depth %d: %.300s", depth, t);
    cr_assert_null(raw);
  } else {
    /* printed as it is, the tree still reads back as the text */
    char *printed = cJSON_PrintUnformatted(raw);
    cJSON *back;
    cr_assert_eq(json_parse_strict(printed, strlen(printed), &back, e1, sizeof(e1)), GW_OK,
                 "the tree with Raw nodes printed as %s: %s", printed, e1);
    n = materialize_all(raw, t, len);
    assert_same_tree(raw, strict, t);
    cr_assert(json_equal(back, strict) || strstr(t, "e309") || strstr(t, "e-400"),
              "printed %s", printed); /* numbers cJSON prints as null do not compare */
    cJSON_free(printed);
    cJSON_Delete(back);
    cJSON_Delete(raw);
    cJSON_Delete(strict);
  }
  arena_activate(prev);
  arena_release(&a);
  return n;
}

Test(jsonparse, members_kept_as_text_are_checked_and_read_back_alike, .timeout = 120)
{
  struct rnd r = { 7 };
  long kept = 0, accepted = 0, refused = 0;
  for(int i = 0; i < 3000; i++) {
    /* half of them objects whose members carry the names at depth 2 (and, inside, deeper) */
    struct strbuf sb;
    strbuf_init(&sb, 1u << 20);
    bool wrap = i % 2;
    if(wrap) {
      add(&sb, "{\"metadata\":");
      rnd_value(&r, &sb, 0);
      add(&sb, ",\"\":{\"a\":");
      rnd_value(&r, &sb, 0);
      add(&sb, "},\"aa\":");
      rnd_value(&r, &sb, 0);
      add(&sb, "}");
    } else
      rnd_value(&r, &sb, 0);
    size_t len = sb.len;
    char *t = strbuf_take(&sb, &len);
    strbuf_release(&sb);
    if(i % 4 >= 2)
      damage_text(&r, t, &len);
    int n = assert_raw_parses_alike(t, len, wrap ? 2 + i % 3 / 2 : 2 + i % 3, i % 8 < 4);
    if(n < 0)
      refused++;
    else {
      accepted++;
      kept += n;
    }
    free(t);
  }
  /* the texts must keep members as text and be refused too, or the property proves nothing */
  cr_assert_gt(kept, 500, "kept as text %ld", kept);
  cr_assert_gt(accepted, 1000, "accepted %ld", accepted);
  cr_assert_gt(refused, 300, "refused %ld", refused);
}

Test(jsonparse, members_kept_as_text_are_refused_where_the_text_is)
{
  static const struct {
    const char *text, *msg;
  } bad[] = {
    { "{\"a\":\"\\x\"}", "malformed JSON at byte 6" },          /* an escape JSON has not */
    { "{\"a\":\"\\ud800\"}", "malformed JSON at byte 6" },      /* half a pair */
    { "{\"a\":\"x\x01\"}", "malformed JSON at byte 7" },         /* a raw control character */
    { "{\"a\":01}", "malformed JSON at byte 6" },               /* a leading zero */
    { "{\"a\":[1,]}", "malformed JSON at byte 8" },             /* a trailing comma */
    { "{\"a\":{\"b\" 1}}", "malformed JSON at byte 10" },       /* no colon */
    { "{\"a\":tru}", "malformed JSON at byte 5" },
    { "{\"a\":{\"b\":1}", "malformed JSON: input ends early (12 bytes)" },
  };
  const struct json_raw spec = { 2, raw_names };
  for(size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    cJSON *v;
    char err[160] = "";
    cr_assert_eq(json_parse_strict_raw(bad[i].text, strlen(bad[i].text), &spec, &v, err,
                                       sizeof(err)),
                 GW_EPARSE, "accepted %s", bad[i].text);
    cr_assert_str_eq(err, bad[i].msg, "%s", bad[i].text);
    assert_raw_parses_alike(bad[i].text, strlen(bad[i].text), 2, true);
  }
  /* depth counts through a member kept as text */
  char text[1000] = "{\"a\":";
  size_t n = strlen(text);
  n += nest(text + n, JSON_MAX_DEPTH, true, true);
  strcpy(text + n, "}");
  cJSON *v;
  char err[160];
  cr_assert_eq(json_parse_strict_raw(text, strlen(text), &spec, &v, err, sizeof(err)),
               GW_EPARSE);
  cr_assert_str_eq(err, "JSON nested deeper than 100 levels");
}

Test(jsonparse, path_helpers_parse_a_member_kept_as_text_when_they_reach_it)
{
  static const char *const names[] = { "metadata", "status", NULL };
  const struct json_raw spec = { 2, names };
  const char *text = "{\"metadata\":{\"name\":\"n\",\"labels\":{\"x\":\"y\"}},"
                     "\"status\":{\"phase\":\"Done\"},\"spec\":{\"a\":1}}";
  cJSON *v;
  char err[160];
  cr_assert_eq(json_parse_strict_raw(text, strlen(text), &spec, &v, err, sizeof(err)), GW_OK);
  const cJSON *meta = cJSON_GetObjectItemCaseSensitive(v, "metadata");
  const cJSON *status = cJSON_GetObjectItemCaseSensitive(v, "status");
  cr_assert(cJSON_IsRaw(meta) && cJSON_IsRaw(status));
  cr_assert(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(v, "spec")), "spec is parsed");
  /* whether the text may hold a name: only where it occurs, or behind an escape */
  cr_assert(json_raw_may_hold(meta, "labels"));
  cr_assert_not(json_raw_may_hold(meta, "annotations"));
  cr_assert(json_raw_may_hold(cJSON_GetObjectItemCaseSensitive(v, "spec"), "annotations"),
            "a parsed node may hold anything");
  /* printed as sent */
  char *printed = cJSON_PrintUnformatted(v);
  cr_assert_str_eq(printed, text);
  cJSON_free(printed);
  /* reading through it parses it in place */
  cr_assert_str_eq(json_get_str(v, "metadata.labels.x"), "y");
  cr_assert(cJSON_IsObject(meta), "metadata was parsed where it stands");
  cr_assert(cJSON_IsRaw(status), "status was not reached");
  cJSON *st = json_get_mut(v, "status");
  cr_assert_eq(st, status, "the node keeps its address");
  cr_assert(cJSON_IsObject(st), "a node a path helper returns is never Raw");
  cJSON_Delete(v);
  /* writing and detaching through one */
  cr_assert_eq(json_parse_strict_raw(text, strlen(text), &spec, &v, err, sizeof(err)), GW_OK);
  cr_assert_eq(json_set_str(v, "metadata.annotations.k", "v"), GW_OK);
  cJSON *d = json_detach(v, "status");
  cr_assert(cJSON_IsObject(d), "a detached member is parsed");
  cr_assert_str_eq(json_get_str(d, "phase"), "Done");
  printed = cJSON_PrintUnformatted(v);
  cr_assert_str_eq(printed, "{\"metadata\":{\"name\":\"n\",\"labels\":{\"x\":\"y\"},"
                            "\"annotations\":{\"k\":\"v\"}},\"spec\":{\"a\":1}}");
  cJSON_free(printed);
  /* the canonical form sorts the keys inside text too */
  cJSON *w;
  cr_assert_eq(json_parse_strict_raw("{\"metadata\":{\"b\":1,\"a\":2}}", 27, &spec, &w, err,
                                     sizeof(err)),
               GW_OK);
  char *canon = json_print_canonical(w);
  cr_assert_str_eq(canon, "{\"metadata\":{\"a\":2,\"b\":1}}");
  cJSON_free(canon);
  cJSON_Delete(w);
  cJSON_Delete(d);
  cJSON_Delete(v);
}

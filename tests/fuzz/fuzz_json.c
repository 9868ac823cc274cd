/*
 * libFuzzer target: shared/jsonparse.c, json_parse_strict, the decoder every request body and
 * every API answer goes through. Its promises:
 *  - what it accepts, cJSON 1.7.15 accepts too and builds the same tree (types, keys, strings,
 *    doubles to the bit, member order), unless the text holds a number longer than the 63 bytes
 *    cJSON reads of one (a leading byte order mark is compared without it);
 *  - what it refuses comes with a one-line reason of the documented shapes, and no tree;
 *  - the tree printed and parsed again is the same tree (the webhook prints what it parsed),
 *    but for numbers out of a double's range, which cJSON prints as null.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "strbuf.h"

#include "fuzzutil.h"

static void same_tree(const cJSON *a, const cJSON *b)
{
  if(a->type != b->type || !a->string != !b->string ||
     (a->string && strcmp(a->string, b->string)) || !a->valuestring != !b->valuestring ||
     (a->valuestring && strcmp(a->valuestring, b->valuestring)) ||
     memcmp(&a->valuedouble, &b->valuedouble, sizeof(double)) || a->valueint != b->valueint)
    fuzz_fail("json_parse_strict", "a node differs from cJSON's");
  const cJSON *x = a->child, *y = b->child;
  if(x && (!x->prev || x->prev->next))
    fuzz_fail("json_parse_strict", "the first child's prev is not the last child");
  for(; x && y; x = x->next, y = y->next)
    same_tree(x, y);
  if(x || y)
    fuzz_fail("json_parse_strict", "a container has another number of members than cJSON's");
}

static bool has_long_number(const char *t, size_t len)
{
  size_t run = 0;
  for(size_t i = 0; i < len; i++) {
    run = t[i] && strchr("0123456789+-.eE", t[i]) ? run + 1 : 0;
    if(run >= 63)
      return true;
  }
  return false;
}

/* 1e400 parses to infinity, which prints as null (as cJSON prints it) */
static bool has_nonfinite(const cJSON *v)
{
  if(cJSON_IsNumber(v) && (v->valuedouble != v->valuedouble || v->valuedouble - v->valuedouble != 0))
    return true;
  for(const cJSON *c = v->child; c; c = c->next)
    if(has_nonfinite(c))
      return true;
  return false;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  (void)argc;
  (void)argv;
  fuzz_init();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *text = fuzz_body(data, size);
  cJSON *v;
  char err[160] = "";
  gw_rc rc = json_parse_strict(text, size, &v, err, sizeof(err));
  if(rc) {
    if(v)
      fuzz_fail("json_parse_strict", "refused (%s) but left a tree", err);
    if(strncmp(err, "malformed JSON", 14) && strncmp(err, "empty body", 10) &&
       strncmp(err, "JSON nested deeper", 18) && strncmp(err, "out of memory", 13))
      fuzz_fail("json_parse_strict", "refused with an unexpected reason: %s", err);
  } else {
    if(!has_long_number(text, size)) {
      /* a byte order mark is skipped; cJSON 1.7.15 skips it only before 2 bytes or more */
      size_t bom = size >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3) ? 3 : 0;
      cJSON *theirs = cJSON_ParseWithLength(text + bom, size - bom);
      if(!theirs)
        fuzz_fail("json_parse_strict", "accepted what cJSON refuses");
      same_tree(v, theirs);
      cJSON_Delete(theirs);
    }
    struct strbuf sb;
    strbuf_init(&sb, 64u << 20);
    if(!has_nonfinite(v) && !json_print_sb(&sb, v)) {
      cJSON *again;
      if(json_parse_strict(strbuf_str(&sb), sb.len, &again, err, sizeof(err)))
        fuzz_fail("json_parse_strict", "refuses its own tree printed: %s", err);
      if(!json_equal(v, again))
        fuzz_fail("json_parse_strict", "a printed tree parses to another one");
      cJSON_Delete(again);
    }
    strbuf_release(&sb);
    cJSON_Delete(v);
  }
  free(text);
  return 0;
}

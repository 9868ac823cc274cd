/* phase.c: a kind's phase table (phase.h). */
#include "phase.h"

#include <stddef.h>
#include <string.h>

const char *phase_name(const struct phase_table *t, int p)
{
  return p > PHASE_NONE && p < t->count ? t->names[p] : "";
}

int phase_parse(const struct phase_table *t, const char *s)
{
  for(int i = 0; s && i < t->count; i++)
    if(!strcmp(t->names[i], s))
      return i;
  return PHASE_NONE;
}

bool phase_allowed(const struct phase_table *t, int from, int to, int resume_to)
{
  if(to <= PHASE_NONE || to >= t->count)
    return false;
  if(from == to)
    return true;
  if(from == PHASE_NONE)
    return to == t->initial;
  if(from == t->suspended)
    return to == resume_to && resume_to != t->suspended && resume_to != PHASE_NONE;
  return from < t->count && (t->next[from] & PHASE_BIT(to)) != 0;
}

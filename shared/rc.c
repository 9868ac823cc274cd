#include "rc.h"

static const char *const rc_text[] = {
#define GW_RC_TEXT(name, text) text,
  GW_RC_MAP(GW_RC_TEXT)
#undef GW_RC_TEXT
};

const char *gw_strerror(gw_rc rc)
{
  if((unsigned)rc >= GW_RC_COUNT)
    return "unknown error";
  return rc_text[rc];
}

/* RFC 4648 base64 decoding (base64.h). */
#include "base64.h"

#include <stdlib.h>
#include <string.h>

static int b64val(unsigned char c)
{
  if(c >= 'A' && c <= 'Z')
    return c - 'A';
  if(c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if(c >= '0' && c <= '9')
    return c - '0' + 52;
  if(c == '+')
    return 62;
  if(c == '/')
    return 63;
  return -1;
}

unsigned char *b64_decode(const char *in, size_t *len)
{
  size_t n = strlen(in);
  unsigned char *out = malloc(n / 4 * 3 + 4);
  if(!out)
    return NULL;
  size_t o = 0, chars = 0;
  unsigned acc = 0;
  int bits = 0, pad = 0;
  for(size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)in[i];
    if(c == '\n' || c == '\r')
      continue;
    if(c == '=') {
      pad++;
      continue;
    }
    int v = b64val(c);
    if(v < 0 || pad) {
      free(out);
      return NULL;
    }
    chars++;
    acc = (acc << 6) | (unsigned)v;
    bits += 6;
    if(bits >= 8) {
      bits -= 8;
      out[o++] = (unsigned char)(acc >> bits);
    }
  }
  /* 1 character left over is 6 bits: no byte can end there; padding completes a quantum */
  if(chars % 4 == 1 || pad > 2 || (pad && (chars + (size_t)pad) % 4)) {
    free(out);
    return NULL;
  }
  out[o] = 0;
  if(len)
    *len = o;
  return out;
}

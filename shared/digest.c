/* digest.c: see digest.h. */
#include "digest.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

gw_rc digest_sha256(const void *data, size_t len, char out[DIGEST_SHA256_LEN])
{
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  out[0] = '\0';
  if(!EVP_Digest(data, len, md, &n, EVP_sha256(), NULL) || n != 32)
    return GW_ENOMEM;
  memcpy(out, "sha256:", 7);
  for(unsigned i = 0; i < n; i++)
    snprintf(out + 7 + 2 * i, 3, "%02x", md[i]);
  return GW_OK;
}

/*
 * jsonscan.h: the scan for the bytes a JSON string cannot hold as they are ('"', '\\' and the
 * control characters U+0000 to U+001F), shared by the parser (jsonparse.c: where an unescaped run
 * ends) and the printer (json.c: where a run needs an escape). Internal to shared/.
 */
#ifndef GODWIT_JSONSCAN_H
#define GODWIT_JSONSCAN_H

#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Bytes a string holds as they are: not '"', not '\\', not a control character. */
static const unsigned char json_plain[256] = {
#define R16(v) v, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v
  R16(0), R16(0),
  1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x20..0x2f: '"' is 0x22 */
  R16(1), R16(1),
  1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, /* 0x50..0x5f: '\\' is 0x5c */
  R16(1), R16(1), R16(1), R16(1), R16(1), R16(1), R16(1), R16(1), R16(1), R16(1),
#undef R16
};

/* Nonzero when one of the 8 bytes of x is '"', '\\' or a control character. A byte above a
 * match may be flagged too (borrows): callers only stop early and then look byte by byte. */
static inline uint64_t json_special8(uint64_t x)
{
  const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
  uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
  return (((q - ones) & ~q) | ((b - ones) & ~b) | ((x - ones * 0x20) & ~x)) & highs;
}

/* The first byte at or after p that a string does not hold as it is, or end. Sixteen bytes at
 * a time with SSE2 (every x86-64 has it); elsewhere eight at a time on a little-endian machine,
 * where the lowest flagged byte of json_special8 is an exact match (borrows only flag bytes above
 * one); then byte by byte. */
static inline const unsigned char *json_skip_plain(const unsigned char *p, const unsigned char *end)
{
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
  const __m128i below = _mm_set1_epi8(0x1F);
  while(end - p >= 16) {
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
    /* x <= 0x1F unsigned: max(x, 0x1F) == 0x1F */
    __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, bslash)),
                               _mm_cmpeq_epi8(_mm_max_epu8(x, below), below));
    unsigned m = (unsigned)_mm_movemask_epi8(hit);
    if(m)
      return p + __builtin_ctz(m);
    p += 16;
  }
#endif
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  while(end - p >= 8) {
    uint64_t x, m;
    memcpy(&x, p, 8);
    if((m = json_special8(x)))
      return p + (__builtin_ctzll(m) >> 3);
    p += 8;
  }
#endif
  while(p < end && json_plain[*p])
    p++;
  return p;
}

#endif

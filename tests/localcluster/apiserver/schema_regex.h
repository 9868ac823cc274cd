/*
 * schema_regex.h: the insides of the pattern engine (schema_regex.c compiles and matches,
 * schema_regex_parse.c parses). Everyone else uses layers.h's rx_* calls.
 */
#ifndef LS_SCHEMA_REGEX_H
#define LS_SCHEMA_REGEX_H

#include <stdbool.h>
#include <stddef.h>

#define RX_MAX_INST 50000
#define RX_MAX_REPEAT 1000

enum nkind { N_EMPTY, N_LIT, N_ANY, N_CLASS, N_ASSERT, N_CAT, N_ALT, N_REP };
enum akind { A_BOT, A_EOT, A_BOL, A_EOL, A_WORD, A_NWORD };

struct range {
  long lo, hi;
};

struct node {
  enum nkind kind;
  long c;          /* N_LIT */
  bool fold;       /* N_LIT, N_CLASS: ASCII case-insensitive */
  bool dotnl;      /* N_ANY: matches \n too */
  int cls;         /* N_CLASS: index */
  enum akind a;    /* N_ASSERT */
  int min, max;    /* N_REP; max -1 = unbounded */
  struct node **kids;
  size_t nkids;
};

struct cls {
  struct range *r;
  size_t n;
  bool neg;
};

enum op { I_CHAR, I_CLASS, I_ANY, I_SPLIT, I_JMP, I_ASSERT, I_MATCH };

struct inst {
  enum op op;
  long c;
  bool fold, dotnl;
  int cls, x, y;
  enum akind a;
};

struct rx {
  struct inst *in;
  int n, cap;
  struct cls *cls;
  size_t ncls;
};

/* Parses pattern into a tree (character classes are added to r); NULL with err set on failure. */
struct node *rx_parse(const char *pattern, struct rx *r, char *err, size_t errlen);
void rx_node_free(struct node *n);

#endif

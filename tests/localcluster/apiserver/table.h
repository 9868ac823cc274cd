/*
 * table.h: what table.c and the built-ins' printers (builtins_table.c) share.
 */
#ifndef LS_TABLE_H
#define LS_TABLE_H

#include "rest.h"

struct tab_printer {
  const char *group, *resource; /* NULL resource: the default printer */
  void (*columns)(cJSON *defs);
  cJSON *(*row)(const cJSON *obj); /* the cells */
};

const struct tab_printer *tab_printer_for(const struct ls_rtype *rt);
void tab_column(cJSON *defs, const char *name, const char *type, const char *format,
                const char *desc, int priority);
/* The age of the timestamp at path ("5m"), or "<unknown>". */
cJSON *tab_age(const cJSON *obj, const char *path);

#endif

/*
 * schema_split.c: the desired SQL cut into its statements (schema.h, sp_statement_len), so that
 * each is loaded on its own and a failure names the line it starts on: the server gives no
 * position for many errors (a missing relation in REFERENCES, a duplicate name).
 *
 * A statement ends at a ';' outside of quotes and comments: '...' (with ''), E'...' (with
 * backslash escapes), "...", $tag$...$tag$, -- to the end of the line, and nested block comments.
 */
#include <ctype.h>
#include <string.h>

#include "schema.h"

/* The length of a dollar-quote opening tag at s ("$$", "$body$"), 0 when s does not open one. */
static size_t dollar_tag(const char *s)
{
  size_t n = 1;
  if(isdigit((unsigned char)s[1]))
    return 0; /* $1 is a parameter */
  while(isalnum((unsigned char)s[n]) || s[n] == '_' || (unsigned char)s[n] >= 0x80)
    n++;
  return s[n] == '$' ? n + 1 : 0;
}

/* The end of a quoted run starting at s (just after it; the end of the text when unclosed). */
static const char *skip_quoted(const char *s, char q, bool backslash)
{
  for(s++; *s; s++) {
    if(backslash && *s == '\\' && s[1])
      s++;
    else if(*s == q && s[1] == q)
      s++;
    else if(*s == q)
      return s + 1;
  }
  return s;
}

static const char *skip_comment(const char *s)
{
  int depth = 0;
  for(; *s; s++) {
    if(s[0] == '/' && s[1] == '*')
      depth++, s++;
    else if(s[0] == '*' && s[1] == '/' && --depth == 0)
      return s + 2;
    else if(s[0] == '*' && s[1] == '/')
      s++;
  }
  return s;
}

size_t sp_statement_len(const char *sql)
{
  const char *s = sql;
  while(*s) {
    size_t tag;
    if(*s == ';')
      return (size_t)(s - sql) + 1;
    if(s[0] == '-' && s[1] == '-')
      s += strcspn(s, "\n");
    else if(s[0] == '/' && s[1] == '*')
      s = skip_comment(s);
    else if((*s == 'E' || *s == 'e') && s[1] == '\'' &&
            (s == sql || !(isalnum((unsigned char)s[-1]) || s[-1] == '_')))
      s = skip_quoted(s + 1, '\'', true);
    else if(*s == '\'' || *s == '"')
      s = skip_quoted(s, *s, false);
    else if(*s == '$' && (s == sql || !(isalnum((unsigned char)s[-1]) || s[-1] == '_')) &&
            (tag = dollar_tag(s))) {
      const char *end;
      for(end = s + tag; *end && strncmp(end, s, tag); end++)
        ;
      s = *end ? end + tag : end;
    } else
      s++;
  }
  return (size_t)(s - sql);
}

/*
 * schema_catalog.c: the catalog queries of the plan engine (schema.h), one per object kind,
 * and the one that names every object of a kind the engine does not cover.
 *
 * Every query runs with search_path = '' (the server then qualifies every name it prints, as
 * pg_dump has it print them) and returns k (the key), parent, qname, deps, then the kind's
 * fields (schema.h, F_*), all text. No OID, owner, privilege nor database name is selected.
 *
 * Scope: the schemas not named pg_* nor information_schema and not created by an extension;
 * objects that belong to an extension (pg_depend deptype 'e') are the extension's.
 */
#include "schema.h"

#define SCOPE(n)                                                                                 \
  n ".nspname !~ '^pg_' AND " n ".nspname <> 'information_schema' AND NOT EXISTS (SELECT 1 "    \
    "FROM pg_depend e WHERE e.classid = 'pg_namespace'::regclass AND e.objid = " n ".oid AND " \
    "e.deptype = 'e')"
#define NOT_MEMBER(cat, oid)                                                                     \
  "NOT EXISTS (SELECT 1 FROM pg_depend e WHERE e.classid = '" cat "'::regclass AND e.objid = "  \
    oid " AND e.deptype = 'e')"
#define REL(n, c) "format('%I.%I', " n ".nspname, " c ".relname)"
#define RKEY(n, c) "(" n ".nspname || '.' || " c ".relname)"

/* What an object depends on in pg_class (relations, their columns, indexes), as "kind:key"
 * lines: columns (and their relation: a view on a view's column goes with that view), tables,
 * views, sequences, standalone indexes and the constraints that own an index (a foreign key
 * depends on the referenced primary key's index). */
#define REL_KEY(n, r)                                                                            \
  "CASE " r ".relkind WHEN 'v' THEN 'view:' WHEN 'S' THEN 'sequence:' ELSE 'table:' END || "    \
  RKEY(n, r)
#define DEPS(classid, objid, self)                                                               \
  "(SELECT coalesce(string_agg(DISTINCT v.k COLLATE \"C\", E'\\n' ORDER BY v.k COLLATE \"C\"), '') FROM "    \
  "pg_depend d JOIN pg_class r ON r.oid = d.refobjid JOIN pg_namespace rn ON rn.oid = "          \
  "r.relnamespace LEFT JOIN pg_attribute ra ON ra.attrelid = r.oid AND ra.attnum = "            \
  "d.refobjsubid CROSS JOIN LATERAL (VALUES (CASE WHEN d.refobjsubid > 0 THEN 'column:' || "    \
  RKEY("rn", "r") " || '.' || ra.attname WHEN r.relkind = 'i' THEN coalesce((SELECT "           \
  "'constraint:' || " RKEY("rn", "rt") " || '.' || rc.conname FROM pg_constraint rc JOIN "       \
  "pg_class rt ON rt.oid = rc.conrelid WHERE rc.conindid = r.oid AND rc.contype IN ('p', 'u', "  \
  "'x')), 'index:' || " RKEY("rn", "r") ") ELSE " REL_KEY("rn", "r") " END), (CASE WHEN "        \
  "d.refobjsubid > 0 THEN " REL_KEY("rn", "r") " END)) v(k) WHERE d.classid = " classid         \
  " AND d.objid = " objid " AND d.refclassid = 'pg_class'::regclass AND d.refobjid <> " self    \
  " AND v.k IS NOT NULL)"

#define SEQ_OPTS(s)                                                                              \
  "format('START WITH %s INCREMENT BY %s MINVALUE %s MAXVALUE %s CACHE %s%s', " s               \
  ".seqstart, " s ".seqincrement, " s ".seqmin, " s ".seqmax, " s ".seqcache, CASE WHEN " s     \
  ".seqcycle THEN ' CYCLE' ELSE ' NO CYCLE' END)"
#define IDENTITY_SEQ(c)                                                                          \
  "EXISTS (SELECT 1 FROM pg_depend i WHERE i.classid = 'pg_class'::regclass AND i.objid = " c   \
  ".oid AND i.deptype = 'i')"

const struct sm_query sm_queries[SM_NKINDS] = {
  { SM_SCHEMA, "schema",
    "SELECT n.nspname::text AS k, '', quote_ident(n.nspname), '' FROM pg_namespace n WHERE "
    SCOPE("n") },
  { SM_EXTENSION, "extension",
    "SELECT x.extname::text AS k, '', quote_ident(x.extname), '', quote_ident(n.nspname), "
    "x.extversion FROM pg_extension x JOIN pg_namespace n ON n.oid = x.extnamespace" },
  { SM_ENUM, "type",
    "SELECT n.nspname || '.' || t.typname AS k, '', format('%I.%I', n.nspname, t.typname), '', "
    "coalesce((SELECT string_agg(quote_literal(l.enumlabel), E'\\n' ORDER BY l.enumsortorder) "
    "FROM pg_enum l WHERE l.enumtypid = t.oid), '') FROM pg_type t JOIN pg_namespace n ON "
    "n.oid = t.typnamespace WHERE t.typtype = 'e' AND " SCOPE("n") " AND "
    NOT_MEMBER("pg_type", "t.oid") },
  { SM_SEQUENCE, "sequence",
    "SELECT " RKEY("n", "c") " AS k, coalesce(o.tkey, ''), " REL("n", "c") ", '', "
    "format_type(s.seqtypid, NULL), s.seqstart::text, s.seqincrement::text, s.seqmin::text, "
    "s.seqmax::text, s.seqcache::text, s.seqcycle::text, coalesce(o.ckey, ''), "
    "coalesce(o.q, '') FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid JOIN "
    "pg_namespace n ON n.oid = c.relnamespace LEFT JOIN LATERAL (SELECT " RKEY("tn", "t")
    " AS tkey, " RKEY("tn", "t") " || '.' || a.attname AS ckey, format('%I.%I.%I', tn.nspname, "
    "t.relname, a.attname) AS q FROM pg_depend d JOIN pg_class t ON t.oid = d.refobjid JOIN "
    "pg_namespace tn ON tn.oid = t.relnamespace JOIN pg_attribute a ON a.attrelid = t.oid AND "
    "a.attnum = d.refobjsubid WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND "
    "d.refclassid = 'pg_class'::regclass AND d.deptype = 'a' AND d.refobjsubid > 0) o ON true "
    "WHERE " SCOPE("n") " AND " NOT_MEMBER("pg_class", "c.oid") " AND NOT " IDENTITY_SEQ("c") },
  { SM_TABLE, "table",
    "SELECT " RKEY("n", "c") " AS k, '', " REL("n", "c") ", '' FROM pg_class c JOIN "
    "pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r' AND " SCOPE("n") " AND "
    NOT_MEMBER("pg_class", "c.oid") },
  { SM_COLUMN, "column",
    "SELECT " RKEY("n", "c") " || '.' || a.attname AS k, " RKEY("n", "c") ", "
    "quote_ident(a.attname), '', format_type(a.atttypid, a.atttypmod), CASE WHEN "
    "a.attcollation <> t.typcollation THEN (SELECT format(' COLLATE %I.%I', cn.nspname, "
    "co.collname) FROM pg_collation co JOIN pg_namespace cn ON cn.oid = co.collnamespace WHERE "
    "co.oid = a.attcollation) ELSE '' END, a.attnotnull::text, CASE WHEN a.attgenerated = '' "
    "THEN coalesce(pg_get_expr(ad.adbin, ad.adrelid), '') ELSE '' END, a.attidentity::text, "
    "coalesce((SELECT " SEQ_OPTS("s") " FROM pg_depend d JOIN pg_sequence s ON s.seqrelid = "
    "d.objid WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass "
    "AND d.refobjid = a.attrelid AND d.refobjsubid = a.attnum AND d.deptype = 'i'), ''), "
    "CASE WHEN a.attgenerated = 's' THEN pg_get_expr(ad.adbin, ad.adrelid) ELSE '' END, "
    "lpad((row_number() OVER (PARTITION BY a.attrelid ORDER BY a.attnum))::text, 5, '0') "
    "FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = "
    "c.relnamespace JOIN pg_type t ON t.oid = a.atttypid LEFT JOIN pg_attrdef ad ON "
    "ad.adrelid = a.attrelid AND ad.adnum = a.attnum WHERE c.relkind = 'r' AND a.attnum > 0 "
    "AND NOT a.attisdropped AND " SCOPE("n") " AND " NOT_MEMBER("pg_class", "c.oid") },
  { SM_CONSTRAINT, "constraint",
    "SELECT " RKEY("n", "c") " || '.' || co.conname AS k, " RKEY("n", "c") ", "
    "quote_ident(co.conname), " DEPS("'pg_constraint'::regclass", "co.oid", "0") ", "
    "co.contype::text, pg_get_constraintdef(co.oid, false) FROM pg_constraint co JOIN pg_class "
    "c ON c.oid = co.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = "
    "'r' AND co.contype IN ('p', 'u', 'f', 'c', 'x') AND " SCOPE("n") " AND "
    NOT_MEMBER("pg_class", "c.oid") },
  { SM_INDEX, "index",
    "SELECT " RKEY("n", "i") " AS k, " RKEY("n", "c") ", " REL("n", "i") ", "
    DEPS("'pg_class'::regclass", "i.oid", "i.oid") ", pg_get_indexdef(i.oid) FROM pg_index x "
    "JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class c ON c.oid = x.indrelid JOIN "
    "pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r' AND NOT EXISTS (SELECT 1 "
    "FROM pg_constraint co WHERE co.conindid = i.oid AND co.conrelid = c.oid AND co.contype IN "
    "('p', 'u', 'x')) AND " SCOPE("n") " AND " NOT_MEMBER("pg_class", "c.oid") },
  { SM_VIEW, "view",
    "SELECT " RKEY("n", "c") " AS k, '', " REL("n", "c") ", "
    DEPS("'pg_rewrite'::regclass", "(SELECT w.oid FROM pg_rewrite w WHERE w.ev_class = c.oid "
         "AND w.rulename = '_RETURN')", "c.oid") ", pg_get_viewdef(c.oid, false) FROM pg_class "
    "c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'v' AND " SCOPE("n")
    " AND " NOT_MEMBER("pg_class", "c.oid") },
  { SM_COMMENT, "comment",
    "SELECT 'schema:' || n.nspname AS k, 'schema:' || n.nspname, 'SCHEMA ' || "
    "quote_ident(n.nspname), '', quote_literal(d.description), 'schema:' || n.nspname FROM "
    "pg_description d JOIN pg_namespace n ON d.classoid = 'pg_namespace'::regclass AND "
    "d.objoid = n.oid WHERE " SCOPE("n") " UNION ALL "
    "SELECT m.k, m.k, m.w || " REL("n", "c") ", '', quote_literal(d.description), m.k FROM "
    "pg_description d JOIN pg_class c ON d.classoid = 'pg_class'::regclass AND d.objoid = "
    "c.oid AND d.objsubid = 0 JOIN pg_namespace n ON n.oid = c.relnamespace CROSS JOIN LATERAL "
    "(SELECT CASE c.relkind WHEN 'r' THEN 'table:' WHEN 'v' THEN 'view:' WHEN 'S' THEN "
    "'sequence:' ELSE 'index:' END || " RKEY("n", "c") " AS k, CASE c.relkind WHEN 'r' THEN "
    "'TABLE ' WHEN 'v' THEN 'VIEW ' WHEN 'S' THEN 'SEQUENCE ' ELSE 'INDEX ' END AS w) m WHERE "
    "c.relkind IN ('r', 'v', 'S', 'i') AND " SCOPE("n") " AND " NOT_MEMBER("pg_class", "c.oid")
    " AND NOT " IDENTITY_SEQ("c") " AND NOT EXISTS (SELECT 1 FROM pg_constraint co WHERE "
    "co.conindid = c.oid AND co.contype IN ('p', 'u', 'x')) UNION ALL "
    "SELECT 'column:' || " RKEY("n", "c") " || '.' || a.attname, 'column:' || " RKEY("n", "c")
    " || '.' || a.attname, 'COLUMN ' || format('%I.%I.%I', n.nspname, c.relname, a.attname), "
    "'', quote_literal(d.description), CASE c.relkind WHEN 'r' THEN 'table:' ELSE 'view:' END "
    "|| " RKEY("n", "c") " FROM pg_description d JOIN pg_class c ON d.classoid = "
    "'pg_class'::regclass AND d.objoid = c.oid JOIN pg_attribute a ON a.attrelid = c.oid AND "
    "a.attnum = d.objsubid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE d.objsubid > 0 "
    "AND c.relkind IN ('r', 'v') AND " SCOPE("n") " AND " NOT_MEMBER("pg_class", "c.oid")
    " UNION ALL "
    "SELECT 'type:' || n.nspname || '.' || t.typname, 'type:' || n.nspname || '.' || t.typname, "
    "'TYPE ' || format('%I.%I', n.nspname, t.typname), '', quote_literal(d.description), "
    "'type:' || n.nspname || '.' || t.typname FROM pg_description d JOIN pg_type t ON "
    "d.classoid = 'pg_type'::regclass AND d.objoid = t.oid JOIN pg_namespace n ON n.oid = "
    "t.typnamespace WHERE t.typtype = 'e' AND " SCOPE("n") " AND " NOT_MEMBER("pg_type", "t.oid")
    " UNION ALL "
    "SELECT 'constraint:' || " RKEY("n", "c") " || '.' || co.conname, 'constraint:' || "
    RKEY("n", "c") " || '.' || co.conname, 'CONSTRAINT ' || format('%I ON %I.%I', co.conname, "
    "n.nspname, c.relname), '', quote_literal(d.description), 'table:' || " RKEY("n", "c")
    " FROM pg_description d JOIN pg_constraint co ON d.classoid = 'pg_constraint'::regclass "
    "AND d.objoid = co.oid JOIN pg_class c ON c.oid = co.conrelid JOIN pg_namespace n ON n.oid "
    "= c.relnamespace WHERE c.relkind = 'r' AND " SCOPE("n") " AND "
    NOT_MEMBER("pg_class", "c.oid") " UNION ALL "
    "SELECT 'extension:' || x.extname, 'extension:' || x.extname, 'EXTENSION ' || "
    "quote_ident(x.extname), '', quote_literal(d.description), 'extension:' || x.extname FROM "
    "pg_description d JOIN pg_extension x ON d.classoid = 'pg_extension'::regclass AND "
    "d.objoid = x.oid" },
};

const char *sm_kind_name(enum sm_kind k)
{
  return sm_queries[k].name;
}

/* Each row names objects the engine does not cover, in the words a person would use. Column
 * options named pg_attver are not settings: the servers this runs on stamp one on every
 * attribute (system catalogs included), and pg_dump leaves it out. */
#define REFUSE_REL(what, cond)                                                                   \
  "SELECT format('" what " %s', c.oid::regclass) FROM pg_class c JOIN pg_namespace n ON n.oid " \
  "= c.relnamespace WHERE (" cond ") AND " SCOPE("n") " AND " NOT_MEMBER("pg_class", "c.oid")
#define REFUSE_NS(what, cat, alias, name, nsp)                                                   \
  "SELECT format('" what " %I.%I', n.nspname, " alias "." name ") FROM " cat " " alias        \
  " JOIN pg_namespace n ON n.oid = " alias "." nsp " WHERE " SCOPE("n") " AND "                \
  NOT_MEMBER(cat, alias ".oid")

const char *const sm_refusal_sql =
  "SELECT w FROM ("
  "SELECT format('%s %s', CASE p.prokind WHEN 'p' THEN 'procedure' WHEN 'a' THEN 'aggregate' "
  "WHEN 'w' THEN 'window function' ELSE 'function' END, p.oid::regprocedure) AS w FROM pg_proc "
  "p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE " SCOPE("n") " AND "
  NOT_MEMBER("pg_proc", "p.oid") " UNION ALL "
  "SELECT format('trigger %I on %s', t.tgname, c.oid::regclass) FROM pg_trigger t JOIN "
  "pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE NOT "
  "t.tgisinternal AND " SCOPE("n") " UNION ALL "
  "SELECT format('policy %I on %s', p.polname, c.oid::regclass) FROM pg_policy p JOIN pg_class "
  "c ON c.oid = p.polrelid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE " SCOPE("n")
  " UNION ALL "
  "SELECT format('rule %I on %s', r.rulename, c.oid::regclass) FROM pg_rewrite r JOIN pg_class "
  "c ON c.oid = r.ev_class JOIN pg_namespace n ON n.oid = c.relnamespace WHERE r.rulename <> "
  "'_RETURN' AND " SCOPE("n") " UNION ALL "
  REFUSE_REL("partitioned table", "c.relkind = 'p'") " UNION ALL "
  REFUSE_REL("partition", "c.relispartition") " UNION ALL "
  REFUSE_REL("inheritance child table", "EXISTS (SELECT 1 FROM pg_inherits h WHERE h.inhrelid "
             "= c.oid) AND NOT c.relispartition") " UNION ALL "
  REFUSE_REL("materialized view", "c.relkind = 'm'") " UNION ALL "
  REFUSE_REL("foreign table", "c.relkind = 'f'") " UNION ALL "
  REFUSE_REL("composite type", "c.relkind = 'c'") " UNION ALL "
  REFUSE_REL("unlogged table", "c.relkind = 'r' AND c.relpersistence = 'u'") " UNION ALL "
  REFUSE_REL("row level security of table", "c.relrowsecurity OR c.relforcerowsecurity")
  " UNION ALL "
  REFUSE_REL("storage parameters of", "c.relkind IN ('r', 'v') AND c.reloptions IS NOT NULL")
  " UNION ALL "
  REFUSE_REL("tablespace of", "c.relkind IN ('r', 'i') AND c.reltablespace <> 0") " UNION ALL "
  REFUSE_REL("replica identity of table", "c.relkind = 'r' AND c.relreplident <> 'd'")
  " UNION ALL "
  "SELECT format('column settings (storage, compression, statistics or options) of %s.%I', "
  "c.oid::regclass, a.attname) FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN "
  "pg_type t ON t.oid = a.atttypid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE "
  "c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped AND (a.attstattarget >= 0 OR "
  "EXISTS (SELECT 1 FROM unnest(a.attoptions) ao WHERE ao !~ '^pg_attver=') OR a.attcompression <> '' OR a.attstorage <> t.typstorage) AND "
  SCOPE("n") " UNION ALL "
  "SELECT format('%s %I.%I', CASE t.typtype WHEN 'd' THEN 'domain' WHEN 'r' THEN 'range type' "
  "WHEN 'm' THEN 'multirange type' WHEN 'p' THEN 'pseudo-type' ELSE 'base type' END, "
  "n.nspname, t.typname) FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace WHERE "
  "t.typtype IN ('b', 'd', 'r', 'm', 'p') AND NOT EXISTS (SELECT 1 FROM pg_type el WHERE "
  "el.typarray = t.oid) AND " SCOPE("n") " AND " NOT_MEMBER("pg_type", "t.oid") " UNION ALL "
  REFUSE_NS("collation", "pg_collation", "o", "collname", "collnamespace") " UNION ALL "
  REFUSE_NS("conversion", "pg_conversion", "o", "conname", "connamespace") " UNION ALL "
  REFUSE_NS("operator", "pg_operator", "o", "oprname", "oprnamespace") " UNION ALL "
  REFUSE_NS("operator class", "pg_opclass", "o", "opcname", "opcnamespace") " UNION ALL "
  REFUSE_NS("operator family", "pg_opfamily", "o", "opfname", "opfnamespace") " UNION ALL "
  REFUSE_NS("text search configuration", "pg_ts_config", "o", "cfgname", "cfgnamespace")
  " UNION ALL "
  REFUSE_NS("text search dictionary", "pg_ts_dict", "o", "dictname", "dictnamespace")
  " UNION ALL "
  REFUSE_NS("text search parser", "pg_ts_parser", "o", "prsname", "prsnamespace") " UNION ALL "
  REFUSE_NS("text search template", "pg_ts_template", "o", "tmplname", "tmplnamespace")
  " UNION ALL "
  REFUSE_NS("statistics object", "pg_statistic_ext", "o", "stxname", "stxnamespace")
  " UNION ALL "
  "SELECT format('event trigger %I', o.evtname) FROM pg_event_trigger o WHERE "
  NOT_MEMBER("pg_event_trigger", "o.oid") " UNION ALL "
  "SELECT format('publication %I', o.pubname) FROM pg_publication o UNION ALL "
  "SELECT format('foreign data wrapper %I', o.fdwname) FROM pg_foreign_data_wrapper o WHERE "
  NOT_MEMBER("pg_foreign_data_wrapper", "o.oid") " UNION ALL "
  "SELECT format('foreign server %I', o.srvname) FROM pg_foreign_server o WHERE "
  NOT_MEMBER("pg_foreign_server", "o.oid") " UNION ALL "
  "SELECT format('cast (%s AS %s)', format_type(o.castsource, NULL), format_type(o.casttarget, "
  "NULL)) FROM pg_cast o WHERE o.oid >= 16384 AND " NOT_MEMBER("pg_cast", "o.oid")
  ") q ORDER BY w COLLATE \"C\"";

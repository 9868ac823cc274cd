/* probe_sql.h: the probe's query (probe.c; docs/dev/migration-controller.md "The probe"), also
 * sent by the benchmark (bench/migration/probe.c) so it measures the very same statement.
 * Copy workers by connection (a COPY worker's connection outlives its statement), the others
 * only while active; client backends only (a parallel CREATE INDEX shows its workers too).
 * $1 is the Migration's application_name (godwit-<uid8>). */
#ifndef GW_CTRL_PROBE_SQL_H
#define GW_CTRL_PROBE_SQL_H

#define MIG_PROBE_SQL                                                                          \
  "SELECT count(*) FILTER (WHERE query ILIKE 'copy %from stdin%'),"                           \
  "       count(*) FILTER (WHERE state = 'active' AND query NOT ILIKE 'copy %from stdin%'),"   \
  "       pg_database_size(current_database())"                                               \
  "  FROM pg_stat_activity"                                                                   \
  " WHERE application_name = $1 AND backend_type = 'client backend'"                          \
  "   AND pid <> pg_backend_pid()"

#endif

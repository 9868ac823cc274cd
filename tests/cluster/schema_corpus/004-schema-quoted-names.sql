-- expect: "Audit Trail"."Event Log"
-- destructive: 0
-- before
-- after
CREATE SCHEMA "Audit Trail";
CREATE TABLE "Audit Trail"."Event Log" ("Event Id" int PRIMARY KEY, "select" text);

-- destructive: 0
-- before
-- after
CREATE TABLE everything (i int, b bigint, s smallint, n numeric(12,3), r real, d double precision, t text, v varchar(40), c char(3), ts timestamptz, dt date, j jsonb, u uuid, by bytea, bo boolean, a int[], iv interval);

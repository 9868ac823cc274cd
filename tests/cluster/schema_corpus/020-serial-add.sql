-- expect: OWNED BY public.t.id
-- destructive: 0
-- before
CREATE TABLE t (name text);
-- after
CREATE TABLE t (name text, id serial);

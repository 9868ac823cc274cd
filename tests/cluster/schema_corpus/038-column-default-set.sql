-- expect: SET DEFAULT now()
-- destructive: 0
-- before
CREATE TABLE t (at timestamptz);
-- after
CREATE TABLE t (at timestamptz DEFAULT now());

-- expect: COMMENT ON TABLE public.t IS 'it''s new'
-- destructive: 0
-- before
CREATE TABLE t (id int);
COMMENT ON TABLE t IS 'old';
-- after
CREATE TABLE t (id int);
COMMENT ON TABLE t IS 'it''s new';

-- expect: ADD VALUE IF NOT EXISTS 'draft' BEFORE 'new'
-- expect: ADD VALUE IF NOT EXISTS 'failed' AFTER 'done'
-- destructive: 0
-- before
CREATE TYPE st AS ENUM ('new', 'done');
CREATE TABLE job (s st DEFAULT 'new');
-- after
CREATE TYPE st AS ENUM ('draft', 'new', 'running', 'done', 'failed');
CREATE TABLE job (s st DEFAULT 'draft', CHECK (s <> 'failed'));

-- expect: CREATE EXTENSION citext
-- destructive: 0
-- before
-- after
CREATE EXTENSION citext;
CREATE TABLE users (email citext PRIMARY KEY);

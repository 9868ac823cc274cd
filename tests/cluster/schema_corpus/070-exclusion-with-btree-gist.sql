-- destructive: 0
-- before
CREATE EXTENSION btree_gist;
CREATE TABLE booking (room int, during tsrange);
-- after
CREATE EXTENSION btree_gist;
CREATE TABLE booking (room int, during tsrange, EXCLUDE USING gist (room WITH =, during WITH &&));

-- destructive: 0
-- before
-- after
CREATE TABLE node (id int, tree int, parent int, PRIMARY KEY (tree, id), FOREIGN KEY (tree, parent) REFERENCES node (tree, id));

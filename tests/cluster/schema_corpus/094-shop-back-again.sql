-- before
CREATE SCHEMA sales;
CREATE SCHEMA audit;
CREATE TYPE status AS ENUM ('new', 'paid', 'shipped', 'returned');
CREATE TABLE customers (id serial PRIMARY KEY, name varchar(120) NOT NULL, email text UNIQUE, created timestamptz NOT NULL DEFAULT now());
CREATE TABLE sales.orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, customer int NOT NULL REFERENCES customers ON DELETE CASCADE, st status NOT NULL DEFAULT 'new', total numeric(12,2) CHECK (total >= 0));
CREATE INDEX orders_customer_st ON sales.orders (customer, st);
CREATE TABLE audit.events (at timestamptz NOT NULL DEFAULT now(), what jsonb);
CREATE VIEW sales.paid AS SELECT o.id, c.name, c.email FROM sales.orders o JOIN customers c ON c.id = o.customer WHERE o.st IN ('paid', 'shipped', 'returned');
COMMENT ON TABLE customers IS 'who buys things';
COMMENT ON TABLE audit.events IS 'what happened';
-- after
CREATE SCHEMA sales;
CREATE TYPE status AS ENUM ('new', 'paid', 'shipped', 'returned');
CREATE TABLE customers (id serial PRIMARY KEY, name varchar(50) NOT NULL, email text);
CREATE TABLE sales.orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, customer int REFERENCES customers, st status NOT NULL DEFAULT 'new', total numeric(10,2));
CREATE INDEX orders_customer ON sales.orders (customer);
CREATE VIEW sales.paid AS SELECT o.id, c.name FROM sales.orders o JOIN customers c ON c.id = o.customer WHERE o.st = 'paid';
COMMENT ON TABLE customers IS 'who buys';

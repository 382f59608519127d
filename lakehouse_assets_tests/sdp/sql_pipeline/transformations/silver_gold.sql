-- Silver and gold in SQL, as spark-pipelines reads them.
SET big_amount = 100;

CREATE STREAMING TABLE orders_clean (
  CONSTRAINT positive_amount EXPECT (amount > 0) ON VIOLATION DROP ROW,
  CONSTRAINT known_customer EXPECT (customer_id IS NOT NULL)
)
  COMMENT 'Orders of some value; it''s the silver table.'
  CLUSTER BY (customer_id)
  AS SELECT * FROM STREAM(bronze_orders);

/* Revenue per customer, recomputed when orders_clean moves. */
CREATE MATERIALIZED VIEW revenue (CONSTRAINT some_orders EXPECT (orders >= 1)) AS
  SELECT customer_id, ROUND(SUM(amount), 2) AS revenue, COUNT(*) AS orders
  FROM orders_clean GROUP BY customer_id;

CREATE TEMPORARY VIEW big AS SELECT order_id, amount FROM STREAM orders_clean WHERE amount >= ${big_amount};

CREATE STREAMING TABLE big_orders;
CREATE FLOW big_flow AS INSERT INTO big_orders BY NAME SELECT order_id, amount FROM STREAM(big);

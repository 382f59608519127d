-- Silver and gold in SQL, as spark-pipelines reads them.
CREATE STREAMING TABLE orders_clean
  COMMENT 'Orders of some value; it''s the silver table.'
  CLUSTER BY (customer_id)
  AS SELECT * FROM STREAM(bronze_orders) WHERE amount > 0;

/* Revenue per customer, recomputed when orders_clean moves. */
CREATE MATERIALIZED VIEW revenue AS
  SELECT customer_id, ROUND(SUM(amount), 2) AS revenue, COUNT(*) AS orders
  FROM orders_clean GROUP BY customer_id;

CREATE TEMPORARY VIEW big AS SELECT order_id, amount FROM STREAM orders_clean WHERE amount >= 100;

CREATE STREAMING TABLE big_orders;
CREATE FLOW big_flow AS INSERT INTO big_orders BY NAME SELECT order_id, amount FROM STREAM(big);

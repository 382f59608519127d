-- Auto CDC in SQL, as Lakeflow writes it: each customer's latest order, and its history.
CREATE STREAMING TABLE customer_latest;
CREATE FLOW customer_latest_flow AS AUTO CDC INTO customer_latest
  FROM STREAM(bronze_orders) KEYS (customer_id)
  APPLY AS DELETE WHEN amount < 0
  SEQUENCE BY order_id
  STORED AS SCD TYPE 1;

CREATE STREAMING TABLE customer_history;
APPLY CHANGES INTO customer_history FROM STREAM(bronze_orders) KEYS (customer_id)
  APPLY AS DELETE WHEN amount < 0
  SEQUENCE BY order_id
  STORED AS SCD TYPE 2;

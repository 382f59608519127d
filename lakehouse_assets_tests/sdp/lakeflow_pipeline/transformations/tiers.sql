-- Lakeflow's SQL forms of Auto CDC beside the Python files: each customer's tier now, and the
-- history of tiers only (a change of ts alone opens no version).
CREATE OR REFRESH STREAMING TABLE tier_latest;
CREATE FLOW tier_latest_flow AS AUTO CDC INTO tier_latest
  FROM STREAM(customer_changes) KEYS (customer_id)
  SEQUENCE BY ts
  STORED AS SCD TYPE 1;

CREATE OR REFRESH STREAMING TABLE tier_history;
APPLY CHANGES INTO tier_history FROM STREAM(customer_changes) KEYS (customer_id)
  SEQUENCE BY ts
  COLUMNS * EXCEPT (ts)
  STORED AS SCD TYPE 2
  TRACK HISTORY ON (tier);

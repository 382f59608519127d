"""The demo pipeline, declared with the framework: bronze, silver and gold tables."""

from lakehouse_assets.defs.bronze.ads import bronze_ad_clicks, bronze_ad_impressions
from lakehouse_assets.defs.bronze.customers import bronze_customers
from lakehouse_assets.defs.bronze.events import bronze_events
from lakehouse_assets.defs.gold.ad_attribution import gold_ad_attribution
from lakehouse_assets.defs.gold.customer_ltv import gold_customer_ltv
from lakehouse_assets.defs.gold.hourly_revenue import gold_hourly_revenue
from lakehouse_assets.defs.gold.user_sessions import gold_user_sessions
from lakehouse_assets.defs.silver.customers import silver_customers
from lakehouse_assets.defs.silver.events import silver_events

TABLES = [
    bronze_events,
    bronze_customers,
    bronze_ad_impressions,
    bronze_ad_clicks,
    silver_customers,
    silver_events,
    gold_hourly_revenue,
    gold_customer_ltv,
    gold_user_sessions,
    gold_ad_attribution,
]

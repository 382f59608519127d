"""A pipeline whose landed JSON grows new fields: meter readings and a table downstream."""

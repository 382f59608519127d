"""Intake: what becomes of each entry of a landing folder before a query reads it.

A run lists what is new in each landing folder it reads (a cursor, not the folder's history),
vets each new entry within bounds (a link, a loop, a folder, a file or line too large, a
broken archive), sets aside what cannot be taken in (moved into the folder's ``_set_aside/``,
recorded, a row in the table's quarantine) and lets the rest flow into the query.
"""

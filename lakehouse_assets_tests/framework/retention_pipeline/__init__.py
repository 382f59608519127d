"""A pipeline whose landing files are cleaned once committed: ``archived`` moves them into the
archive, ``deleted`` deletes them (retention 0, so at the next run)."""

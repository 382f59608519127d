"""A pipeline whose landing table takes one file per micro-batch, so a run can be killed with
some of its micro-batches committed: the event log's test."""

"""One writer per table: the OS lock on local roots, a lease in the bucket on object storage."""

"""Reading a table's inputs: landing folders, Kafka topics, upstream Delta tables; whether a run has work."""

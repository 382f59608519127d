"""Message brokers tables read from and publish to: a local Kafka broker, Kafka's offsets."""

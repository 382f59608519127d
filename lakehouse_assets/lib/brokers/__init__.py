"""Message brokers tables read from and publish to: Kafka's offsets and a producer (the local
broker itself is development infrastructure: :mod:`devstack.kafka_broker`)."""

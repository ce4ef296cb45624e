"""meshrl.transport: how services talk — NATS JetStream (`bus`: streams, workers, the run KV,
the object store for weights) and gRPC helpers (`rpc`: servers with health and reflection,
channels with deadlines)."""

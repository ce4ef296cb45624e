"""meshrl.transport: how services talk — NATS JetStream (`bus`: streams, workers, the run KV,
the object store for weights), gRPC helpers (`rpc`: servers with health and reflection,
channels with deadlines) and the weights transports (`weights`: the notice, shm and the
object store, the receiver's checks)."""

"""Spans: W3C propagation over NATS headers (`propagation`), gRPC interceptors (`grpc`), the
exporter to the run dir (`export`, `setup`), reading them back (`read`) and the terminal
waterfall of one group's trace (`waterfall`)."""

"""meshrl.env.v1: the environment contract (protos/meshrl/env/v1/env.proto), generated stubs."""

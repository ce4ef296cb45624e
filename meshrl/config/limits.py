"""Caps on counts that one value could otherwise blow up, shared by the config, the CLI and the
gateway so each says the same number (a typo guard: `replicas: 2147483647` starts nothing).

    Field(1, ge=1, le=MAX_REPLICAS)      # config (and MAX_RANKS, MAX_TENSOR_PARALLEL, MAX_NATS_REPLICAS)
    check_count(...)                     # `meshrl scale rollout=N`
    actions.scale(...)                   # the gateway's ScaleService
"""

MAX_REPLICAS = 64  # replicas of one service kind on one run: more processes than this on one machine is never meant
MAX_RANKS = 64  # learner.ranks: torchrun processes of the learner on this machine
MAX_TENSOR_PARALLEL = 64  # rollout.tensor_parallel_size: engine workers of one replica
MAX_NATS_REPLICAS = 5  # nats.replicas: JetStream keeps at most 5 copies of a stream

"""Caps on counts that one value could otherwise blow up, shared by the config, the CLI and the
gateway so each says the same number (a typo guard: `replicas: 2147483647` starts nothing).

    Field(1, ge=1, le=MAX_REPLICAS)      # config
    check_count(...)                     # `meshrl scale rollout=N`
    actions.scale(...)                   # the gateway's ScaleService
"""
MAX_REPLICAS = 64  # replicas of one service kind on one run: more processes than this on one machine is never meant

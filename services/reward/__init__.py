"""The reward service: built-in rule rewards, external reward services, weighted combination.

Run: python -m meshrl.services.reward --nats URL --run-id RUN --config RUN_DIR/config.yaml
"""

"""`python -m meshrl.services.rollout --nats URL --run-id RUN --config RUN_DIR/config.yaml
[--replica-id ID] [--grpc-port P]` (see meshrl.services.rollout.main)."""

import sys

from meshrl.services.rollout.main import main

if __name__ == "__main__":
    sys.exit(main())

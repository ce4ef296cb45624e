"""`python -m meshrl.services.reward --nats URL --run-id RUN --config RUN_DIR/config.yaml`."""

import sys

from meshrl.services.reward.main import main

if __name__ == "__main__":
    sys.exit(main())

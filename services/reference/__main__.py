"""`python -m meshrl.services.reference --nats URL --run-id RUN --config RUN_DIR/config.yaml`."""

import sys

from meshrl.services.reference.main import main

if __name__ == "__main__":
    sys.exit(main())

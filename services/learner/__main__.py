"""`python -m meshrl.services.learner --nats URL --run-id RUN --config RUN_DIR/config.yaml`."""

import sys

from meshrl.services.learner.main import main

sys.exit(main())

"""`python -m meshrl.services.environment --port PORT`: see main.py."""

import sys

from meshrl.services.environment.main import main

sys.exit(main())

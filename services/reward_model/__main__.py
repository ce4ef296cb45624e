"""`python -m meshrl.services.reward_model --model DIR --port PORT`: see main.py."""

import sys

from meshrl.services.reward_model.main import main

sys.exit(main())

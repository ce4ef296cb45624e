"""torchrun for the learner, passing on a rank's exit code 2 (bad config, data, model, checkpoint).

    python -m meshrl.services.learner.ranks_run --standalone --nproc-per-node 2 \
        -m meshrl.services.learner --nats URL --run-id RUN --config RUN_DIR/config.yaml

Everything is torchrun's (`torch.distributed.run`), except the exit code when a rank
fails: torchrun exits 1 whatever the rank's code, and the launcher's restart policy gives
up at once only on 2 (a restart would fail the same way), so a rank's 2 stays 2. The local
launcher starts the learner with this when `learner.ranks` > 1.
"""

from __future__ import annotations

import sys

from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
from torch.distributed.run import main as torchrun

from meshrl.service.errors import USER_ERROR_EXIT


def main(argv: list[str] | None = None) -> int:
    try:
        torchrun(argv)
    except ChildFailedError as err:  # torchrun has logged which rank failed and how
        codes = {failure.exitcode for failure in err.failures.values()}
        return USER_ERROR_EXIT if USER_ERROR_EXIT in codes else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

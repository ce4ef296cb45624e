"""Each service kind's NATS user lives in its own account, importing from the run's account
exactly the subjects its permissions name (meshrl.transport.bus.accounts, rendered by authconf).

Run: .venv/bin/python -m pytest tests/unit/transport/bus/test_accounts.py -q
"""

import re

from meshrl.transport.bus import subjects as names
from meshrl.transport.bus.accounts import RUN_ACCOUNT, account_of, crossing
from meshrl.transport.bus.authconf import server_auth


def test_the_jetstream_owners_share_the_run_account_and_each_kind_has_its_own():
    assert account_of("learner") == account_of("admin") == RUN_ACCOUNT
    others = {account_of(kind) for kind in names.KINDS if kind != "learner"}
    assert len(others) == len(names.KINDS) - 1 and RUN_ACCOUNT not in others


def test_a_kind_imports_what_it_may_publish_and_subscribe_to_but_its_inbox():
    perms = names.kind_permissions("r", "rollout")
    cross = crossing("rollout", perms)
    assert cross.services == perms.publish
    assert "_INBOX_rollout.>" not in cross.streams and "$KV.meshrl_r_state.>" in cross.streams


def test_the_rendered_config_exports_each_import_to_its_importer_only():
    users = names.run_permissions("r")
    config = server_auth({user: (perms, "secret") for user, perms in users.items()}).config
    assert "secret" not in config and config.count("jetstream: enabled") == 1
    weights_loaded = names.weights_loaded_subject("r")
    (export,) = [line for line in config.splitlines() if f'{{service: "{weights_loaded}"' in line]
    assert re.search(r'accounts: \["KIND_ROLLOUT"\]', export)  # only the rollout acks a load
    assert config.count(f'{{service: {{account: "RUN", subject: "{weights_loaded}"}}}}') == 1


def test_every_kind_imports_the_account_info_that_keeps_the_servers_own_jetstream_answers_out():
    # Without it nats-server adds its own `$JS.API.>` import ("not enabled for account") to
    # the kind's account, racing the run account's answers (subjects.py).
    for kind in names.KINDS:
        if account_of(kind) != RUN_ACCOUNT:
            assert "$JS.API.INFO" in crossing(kind, names.kind_permissions("r", kind)).services, kind

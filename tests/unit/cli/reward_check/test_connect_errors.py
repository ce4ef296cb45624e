"""The kit's TLS errors name its command-line flags (not the run config's keys).

Run: .venv/bin/python -m pytest tests/unit/cli/reward_check/test_connect_errors.py
"""

import pytest

from meshrl.cli.reward_check.connect import open_check_channel
from meshrl.config import ConfigError


def test_an_unreadable_ca_names_the_flag_and_the_path(tmp_path):
    with pytest.raises(ConfigError, match=r"meshrl reward check: cannot read --tls-ca '.*absent.pem'"):
        open_check_channel("127.0.0.1:1", tls_ca=str(tmp_path / "absent.pem"))


def test_a_key_without_a_certificate_names_both_flags(tmp_path):
    key = tmp_path / "client.key"
    key.write_text("not used")
    with pytest.raises(ConfigError, match="mutual TLS needs both --tls-cert and --tls-key"):
        open_check_channel("127.0.0.1:1", tls_key=str(key))

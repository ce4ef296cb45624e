"""SampleWriter: the rows it appends to samples.jsonl, their fields, and which it picks."""

import json
import math

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.eval.records import EvalSample
from meshrl.eval.samples import SampleWriter
from meshrl.transport.bus.codec import pack_int32
from tests.fixtures.episodes import episode_group


def group(gid: str, rewards, *, text=True) -> pb.Group:
    task = pb.PromptTask(group_id=gid, prompt_text=f"prompt {gid}", ground_truth="7")
    samples = [
        pb.Sample(
            index=i,
            response_token_ids=pack_int32([65 + i, 66]),
            response_text=f"resp {i}" if text else "",
            reward=r,
            policy_version=3,
            finish_reason=pb.FINISH_REASON_LENGTH if i else pb.FINISH_REASON_STOP,
            reward_components=[
                pb.RewardComponent(
                    name="math",
                    value=r,
                    weight=1.0,
                    status=pb.SCORE_STATUS_OK if math.isfinite(r) else pb.SCORE_STATUS_TIMEOUT,
                )
            ],
        )
        for i, r in enumerate(rewards)
    ]
    return pb.Group(group_id=gid, task=task, samples=samples, policy_version=3)


def rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_train_rows_have_every_field(tmp_path):
    writer = SampleWriter.for_run(tmp_path, k=10)
    assert writer.write_train(5, [group("g1", [1.0, math.nan])]) == 2
    first, second = rows(tmp_path / "samples.jsonl")
    assert first == {
        "step": 5,
        "split": "train",
        "group_id": "g1",
        "sample_index": 0,
        "prompt": "prompt g1",
        "response": "resp 0",
        "ground_truth": "7",
        "reward": 1.0,
        "components": {"math": {"value": 1.0, "status": "OK"}},
        "finish_reason": "stop",
        "num_tokens": 2,
        "policy_version": 3,
    }
    assert second["reward"] is None and second["components"]["math"] == {"value": None, "status": "TIMEOUT"}
    assert second["finish_reason"] == "length"


def test_k_rows_drawn_reproducibly_and_appended(tmp_path):
    groups = [group(f"g{i}", [0.0, 1.0, 0.5]) for i in range(4)]  # 12 candidates
    a, b = SampleWriter(tmp_path / "a.jsonl", k=3, seed=1), SampleWriter(tmp_path / "b.jsonl", k=3, seed=1)
    assert a.write_train(7, groups) == b.write_train(7, groups) == 3
    assert rows(tmp_path / "a.jsonl") == rows(tmp_path / "b.jsonl")
    picked = {(r["group_id"], r["sample_index"]) for r in rows(tmp_path / "a.jsonl")}
    assert len(picked) == 3  # without replacement
    a.write_train(8, groups, k=0)
    a.write_train(9, groups, k=1)
    assert [r["step"] for r in rows(tmp_path / "a.jsonl")] == [7, 7, 7, 9]


def test_empty_text_is_decoded_with_the_tokenizer(tmp_path):
    class CharTokenizerStandIn:  # a stand-in, not the code under test
        def decode(self, ids, skip_special_tokens=True):
            return "".join(map(chr, ids))

    writer = SampleWriter.for_run(tmp_path, k=1, tokenizer=CharTokenizerStandIn())
    writer.write_train(1, [group("g", [1.0], text=False)])
    assert rows(tmp_path / "samples.jsonl")[0]["response"] == "AB"


def test_eval_rows(tmp_path):
    s = EvalSample(
        prompt_index=0,
        mode="greedy",
        group_id="run-eval-step2-0-greedy",
        sample_index=0,
        prompt="p",
        response="8",
        ground_truth="7",
        data_source="arith",
        num_tokens=1,
        finish_reason="stop",
        policy_version=2,
        reward=0.0,
        components={"math": {"value": 0.0, "status": "OK"}},
        score_ok=True,
    )
    SampleWriter.for_run(tmp_path, k=4).write_eval(2, [s])
    (row,) = rows(tmp_path / "samples.jsonl")
    assert row == {
        "step": 2,
        "split": "eval",
        "mode": "greedy",
        "group_id": "run-eval-step2-0-greedy",
        "sample_index": 0,
        "prompt": "p",
        "response": "8",
        "ground_truth": "7",
        "reward": 0.0,
        "components": {"math": {"value": 0.0, "status": "OK"}},
        "finish_reason": "stop",
        "num_tokens": 1,
        "policy_version": 2,
        "correct": False,
    }


def test_an_episode_row_holds_its_turns_for_the_episode_view(tmp_path):
    SampleWriter.for_run(tmp_path, k=10).write_train(4, [episode_group()])
    first, second = rows(tmp_path / "samples.jsonl")
    assert (first["environment"], first["env_reward"], first["response"]) == ("tool_arith", 1.0, "The answer is 42.")
    assert first["num_tokens"] == 6  # 3 turns of 2 model tokens; the 4 observation tokens not counted
    assert first["response_tokens"] == 10
    # the loss mask's holes: the model wrote [0,2) [4,6) [8,10); observations [2,4) [6,8); none after the answer
    assert [t["tokens"] for t in first["turns"]] == [[0, 2, 4], [4, 6, 8], [8, 10, 10]]
    bad_json, call, answer = first["turns"]
    assert bad_json["tool_calls"] == [
        {
            "name": "calculator",
            "arguments": '{"expression": 6*7}',
            "error": "arguments are not valid JSON: Expecting value",
        }
    ]
    assert (bad_json["observation"], bad_json["reward"]) == ("error: arguments are not valid JSON", 0.0)
    assert (call["observation"], call["reward"], call["done"]) == ("42", 0.25, False)
    assert (answer["text"], answer["tool_calls"], answer["reward"], answer["done"]) == (
        "The answer is 42.",
        [],
        0.75,
        True,
    )
    assert [t["index"] for t in first["turns"]] == [0, 1, 2] and len(second["turns"]) == 1


def test_a_turn_without_reward_is_null_not_zero(tmp_path):
    group_ = episode_group()
    group_.samples[0].turns[1].ClearField("reward")
    SampleWriter.for_run(tmp_path, k=10).write_train(4, [group_])
    assert rows(tmp_path / "samples.jsonl")[0]["turns"][1]["reward"] is None


def test_a_steps_reward_details_go_beside_its_turn(tmp_path):
    """A Step's info `reward_details` (e.g. a verifiers rubric's functions) is kept by name; a
    NaN is null, a value that is no number left out, and a turn without them has no key."""
    group_ = episode_group()
    details = {"correct_answer": 1.0, "answer_format": 0.5, "broken": float("nan"), "text": "high"}
    group_.samples[0].turns[2].info_json = json.dumps({"reward_details": details, "other": 1})
    group_.samples[0].turns[1].info_json = "not json"
    SampleWriter.for_run(tmp_path, k=10).write_train(4, [group_])
    turns = rows(tmp_path / "samples.jsonl")[0]["turns"]
    assert turns[2]["reward_details"] == {"correct_answer": 1.0, "answer_format": 0.5, "broken": None}
    assert "reward_details" not in turns[0] and "reward_details" not in turns[1]


def test_an_episode_row_holds_the_prompt_the_model_read(tmp_path):
    """The rollout's rendering (tools included) decoded from the group's prompt tokens."""

    class CharTokenizerStandIn:  # a stand-in, not the code under test
        def decode(self, ids, skip_special_tokens=True):
            return "".join(map(chr, ids))

    group_ = episode_group()
    read = "<|im_start|>system\n<tools>calculator</tools><|im_end|>\n"
    group_.task.prompt_token_ids = pack_int32([ord(c) for c in read])
    SampleWriter.for_run(tmp_path, k=10, tokenizer=CharTokenizerStandIn()).write_train(4, [group_])
    assert [r["prompt_read"] for r in rows(tmp_path / "samples.jsonl")] == [read, read]
    SampleWriter.for_run(tmp_path / "none", k=10).write_train(4, [group_])  # no tokenizer: none
    assert all("prompt_read" not in r for r in rows(tmp_path / "none" / "samples.jsonl"))

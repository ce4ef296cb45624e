"""Run Liger-Kernel's fused head and our chunked head on the same rows and print their largest
differences as JSON. Needs TRITON_INTERPRET=1 before triton is imported (Triton's interpreter
runs the GPU kernels on CPU tensors), hence its own process (test_liger_head.py starts it):

    TRITON_INTERPRET=1 .venv/bin/python -m tests.unit.algos.liger_worker
"""

import json

import torch

from meshrl.algos.head_plan import plan_head
from meshrl.algos.logprobs import head_logprobs

ROWS, COLS, HIDDEN, VOCAB, TEMPERATURE = 3, 5, 16, 96, 0.7


def run(kernel: str, head, hidden, ids, mask, upstream):
    head.zero_grad(set_to_none=True)
    hidden = hidden.clone().requires_grad_()
    logprob, entropy, _ = head_logprobs(
        head, hidden, ids, mask, temperature=TEMPERATURE, with_entropy=True, chunk_elements=4 * VOCAB, kernel=kernel
    )
    (logprob * upstream).sum().backward()
    return {
        "logprob": logprob.detach(),
        "entropy": entropy.detach(),
        "hidden": hidden.grad,
        "weight": head.weight.grad,
        "bias": head.bias.grad,
        "entropy_requires_grad": entropy.requires_grad,
    }


def main() -> None:
    torch.manual_seed(0)
    head = torch.nn.Linear(HIDDEN, VOCAB)
    hidden = torch.randn(ROWS, COLS, HIDDEN)
    ids = torch.randint(0, VOCAB, (ROWS, COLS))
    mask = torch.tensor([[1, 1, 1, 1, 0], [1, 0, 1, 1, 1], [1, 1, 0, 0, 0]], dtype=torch.float32)
    upstream = torch.randn(ROWS, COLS)  # a per-token loss weight: reduction="none" gradients
    liger, ours = (run(k, head, hidden, ids, mask, upstream) for k in ("liger", "chunked"))
    diffs = {k: float((liger[k] - ours[k]).abs().max()) for k in ("logprob", "entropy", "hidden", "weight", "bias")}
    print(
        json.dumps(
            {
                "max_abs_diff": diffs,
                "plan": plan_head("liger", "auto", 0.1, "cpu").kernel,
                "liger_entropy_requires_grad": liger["entropy_requires_grad"],
                "logprob_scale": float(ours["logprob"].abs().max()),
            }
        )
    )


if __name__ == "__main__":
    main()

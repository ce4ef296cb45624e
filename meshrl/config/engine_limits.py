"""What the pinned vLLM (0.32) can serve, for checks made before anything starts.

- `ENGINE_LORA_RANKS`: the ranks it serves an adapter at (vllm/config/lora.py: MaxLoRARanks);
- `ENGINE_CPU_HEAD_SIZES`: the attention head sizes its CPU build has kernels for (its CPU
  attention backend refuses any other at engine start).
"""

ENGINE_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
ENGINE_CPU_HEAD_SIZES = (32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512)

"""meshrl.inputs: what a run reads and writes as files — datasets (`data`), models and tokenizers
(`models`), and checkpoints and exports (`checkpoint`)."""

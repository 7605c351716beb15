"""Sources: each kind of input behind one interface (:mod:`.base`), read in bounded batches.

One module per source: :mod:`.history` (JSONL history), :mod:`.tensorboard` (TensorBoard runs),
:mod:`.wandb` (W&B run folders), :mod:`.tune` (Ray Tune trials); :mod:`.discover` finds them under
paths for a one-shot import. Below them, the readers they share: :mod:`.jsonl` (lines) and the
event-file layers :mod:`.masked_crc` → :mod:`.tf_record` → :mod:`.event_file` → :mod:`.data_compat`
→ :mod:`.run` → :mod:`.logdir`, with :mod:`.event_columns` as their batch form and :mod:`.media` the
records of the histograms, images and text they read, and :mod:`.flatten`.
"""

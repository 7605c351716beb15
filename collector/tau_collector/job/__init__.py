"""What runs beside the trainer, in the job's own process tree: the stdout normalizer, the history writer and the
system sampler.
"""

"""Generated protobuf classes for the subset of TensorFlow's Event protocol the tfevents source reads."""

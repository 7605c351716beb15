"""The collect loop and what drives it: options, delivery to the sinks, the watcher, read-ahead, the job's
completion file, stop rules and signals.
"""

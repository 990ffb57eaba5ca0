"""Where tasks come from: the Google trace reader, the shard downloader and task tables.

``trace`` reads ``task_events`` windows into arrays and finds windows; ``download`` fetches
shards (resumable, verified); ``workload`` turns either the embedded synthetic window or a
trace window into :class:`~ilets.workloads.workload.TaskTable` s (it draws the task lengths and
deadlines the trace lacks). Imports only the base layer.
"""

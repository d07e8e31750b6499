# AWS Lambda. Format: profiles/README.md.
# vCPU scale with memory: 1 vCPU per 1,769 MB, up to 6 vCPU at 10,240 MB
# (AWS Lambda developer guide, "Configuring function memory"; seed 000).
# os.cpu_count() in a function reports the HOST's cores: never size from it.
name = lambda
title = AWS Lambda
detect_env = AWS_LAMBDA_FUNCTION_NAME, AWS_LAMBDA_FUNCTION_MEMORY_SIZE
memory_env = AWS_LAMBDA_FUNCTION_MEMORY_SIZE
memory_min_mb = 128
memory_max_mb = 10240
cpu_rule = per_memory
mb_per_vcpu = 1769
max_vcpu = 6
tmp_dir = /tmp
# the plugin's per-process counters, kept after an OOM kill (tunerd stats;
# docs/tuning.md, "stats")
stats_dir = /tmp/vsitune-stats
# default ephemeral storage; configurable up to 10,240 MB
tmp_size_mb = 512
time_limit_s = 900
# the Lambda layer installs the plugin here (/opt is the layer mount)
plugin_dir = /opt/lib/gdalplugins
start_method = fork
# no /dev/shm in a function: each worker process keeps its own range cache,
# and the workers talk through pipes (TUNERD_IPC=pipe: multiprocessing's
# Pool, Queue and Lock need semaphores in /dev/shm)
shared_memory = no
note = Set these in the function configuration, not inside the handler: GDAL reads some options once per process.

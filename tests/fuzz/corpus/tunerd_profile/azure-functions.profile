# Azure Functions, Consumption plan. Format: profiles/README.md.
# One instance has 1.5 GB of memory and one CPU; the default timeout is 5
# minutes, the maximum 10 (Azure Functions docs, "scale and hosting"; seed 001).
name = azure-functions
title = Azure Functions (Consumption plan)
detect_env = FUNCTIONS_WORKER_RUNTIME, FUNCTIONS_EXTENSION_VERSION
memory_env = WEBSITE_MEMORY_LIMIT_MB
memory_min_mb = 128
memory_max_mb = 1536
cpu_rule = fixed
vcpu = 1
tmp_dir = /tmp
# the plugin's per-process counters, kept after an OOM kill (tunerd stats;
# docs/tuning.md, "stats")
stats_dir = /tmp/vsitune-stats
tmp_size_mb = 0
time_limit_s = 600
start_method = fork
# one Python language-worker process per host: the profile sizes that one process
env.FUNCTIONS_WORKER_PROCESS_COUNT = 1
note = Consumption caps an instance at 1,536 MB and one CPU; use a Premium or Flex plan for more.

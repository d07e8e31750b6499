# Google Cloud Run (services and jobs). Format: profiles/README.md.
# CPU is chosen with --cpu (1, 2, 4, 6, 8); memory is capped at 4 GiB per
# vCPU, 32 GiB at 8 vCPU (Cloud Run docs, "Configure memory limits"; seed 001).
name = cloudrun
title = Google Cloud Run
detect_env = K_SERVICE, CLOUD_RUN_JOB
memory_min_mb = 128
memory_max_mb = 32768
cpu_rule = given
cpus_allowed = 1, 2, 4, 6, 8
max_vcpu = 8
max_mb_per_vcpu = 4096
# /tmp is an in-memory filesystem: what you write there counts against the memory limit
tmp_dir = /tmp
# the plugin's per-process counters, kept after an OOM kill (tunerd stats;
# docs/tuning.md, "stats")
stats_dir = /tmp/vsitune-stats
tmp_size_mb = 0
time_limit_s = 3600
start_method = fork
note = /tmp is in memory on Cloud Run: files written there count against the container's memory limit.

# Kubernetes pods. Format: profiles/README.md.
# Limits come from the container's cgroup (resources.limits.memory / cpu),
# which `tunerd detect` reads; --memory and --cpus override them.
name = kubernetes
title = Kubernetes
detect_env = KUBERNETES_SERVICE_HOST
memory_min_mb = 64
memory_max_mb = 1048576
cpu_rule = given
tmp_dir = /tmp
# the plugin's per-process counters, kept after an OOM kill (tunerd stats;
# docs/tuning.md, "stats")
stats_dir = /tmp/vsitune-stats
tmp_size_mb = 0
time_limit_s = 0
start_method = fork
note = Set resources.limits.memory and cpu: without limits tunerd sizes for the whole node.

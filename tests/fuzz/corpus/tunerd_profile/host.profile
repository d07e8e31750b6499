# A bare host or VM (no platform variables found). Format: profiles/README.md.
# Memory and CPU come from --memory/--cpus, else cgroups, sched_getaffinity
# and /proc/meminfo.
name = host
title = Bare host
memory_min_mb = 64
memory_max_mb = 1048576
cpu_rule = given
tmp_dir = /tmp
tmp_size_mb = 0
time_limit_s = 0
start_method = fork
note = Sized for the whole machine or cgroup; pass --memory to leave room for other programs.

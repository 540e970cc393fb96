-- opsched data: table=runs schema=5 rows=2
INSERT INTO runs (uuid, command, spec, user, host, shard_index, shard_count, started_at, ended_at, status, tool_version) VALUES
('5d43396ee68acad41512a90f4f1fa0d8', 'opsched commbench --gpus 2 --ops allreduce,allgather,reducescatter,broadcast,alltoall,sendrecv --max-bytes 1G --dtype f32 --db /tmp/work/comm/commbench.db --csv /tmp/work/comm/commbench-f32.csv', NULL, NULL, 'vm', 0, 1, 1795842367.944364, 1795842407.35227, 'done', '0.1.0'),
('db32802bec83077514af54b736dd8dfb', 'opsched commbench --gpus 2 --ops allreduce,allgather,reducescatter --max-bytes 1G --dtype bf16 --db /tmp/work/comm/commbench.db --csv /tmp/work/comm/commbench-bf16.csv', NULL, NULL, 'vm', 0, 1, 1795842426.317115, 1795842455.970006, 'done', '0.1.0');

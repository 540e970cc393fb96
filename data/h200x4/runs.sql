-- opsched data: table=runs schema=5 rows=1
INSERT INTO runs (uuid, command, spec, user, host, shard_index, shard_count, started_at, ended_at, status, tool_version) VALUES
('bb112da4572c20525952df94fd011e64', 'opsched commbench --gpus 4 --ops allreduce,allgather,reducescatter,broadcast,alltoall,sendrecv --max-bytes 1G --dtype f32 --db /tmp/work/comm/commbench.db --csv /tmp/work/comm/commbench-f32.csv', NULL, NULL, 'vm', 0, 1, 1795843156.021492, 1795843201.034817, 'done', '0.1.0');

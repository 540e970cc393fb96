commbench --ops allreduce,allredux

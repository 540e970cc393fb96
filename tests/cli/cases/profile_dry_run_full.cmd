profile inception_v3 --stage full --math tf32 --algo find --algo-fallback heuristic --dry-run --backend cpu

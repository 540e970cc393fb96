sweep --default --shapes x:1x3x64x64 --dry-run

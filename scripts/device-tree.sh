#!/usr/bin/env bash
# The device tool sends the working tree (at most 64 MiB with what it
# carries); the recorded results, the shipped data set and the export set
# are larger than that and no GPU script reads them.  `aside` removes their
# tracked files from the working tree, only when they have no change of
# their own (git still has every byte); `back` restores them from git.
# An interrupted session restores them the same way: git checkout -- PATHS.
#   scripts/device-tree.sh aside|back
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
paths=(bench/results data/h100/measurements.sql bench/exports/models)
case "${1:-}" in
  aside)
    if [ -n "$(git status --porcelain --untracked-files=no -- "${paths[@]}")" ]; then
      echo "device-tree: changes under ${paths[*]}; commit them first" >&2
      git status --short --untracked-files=no -- "${paths[@]}" >&2
      exit 1
    fi
    git ls-files -z -- "${paths[@]}" | xargs -0 rm -f
    echo "device-tree: set aside: ${paths[*]} (scripts/device-tree.sh back restores them)"
    ;;
  back)
    git checkout -- "${paths[@]}"
    echo "device-tree: restored ${paths[*]}"
    ;;
  *)
    echo "usage: scripts/device-tree.sh aside|back" >&2
    exit 2
    ;;
esac

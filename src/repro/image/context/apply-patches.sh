#!/bin/sh
# Apply repro's patch series to an SGLang checkout, in order, inside `docker build`.
# Usage: apply-patches.sh SGLANG_DIR PATCH_DIR   (PATCH_DIR/series lists the files in order)
# Each patch is checked first; a patch that does not apply stops the build, naming the patch
# and the file git could not patch.
set -eu
sglang_dir=$1
patch_dir=$2
[ -f "$patch_dir/series" ] || exit 0
cd "$sglang_dir"
if git rev-parse --git-dir >/dev/null 2>&1; then use_git=1; else use_git=0; fi
while IFS= read -r name; do
  [ -n "$name" ] || continue
  file="$patch_dir/$name"
  if [ "$use_git" = 1 ]; then
    if ! out=$(git apply --check -p1 "$file" 2>&1); then
      echo "repro: patch '$name' does not apply to $sglang_dir:" >&2
      echo "$out" | sed 's/^/repro:   /' >&2
      exit 1
    fi
    git apply -p1 "$file"
  else
    if ! out=$(patch -p1 --dry-run --batch < "$file" 2>&1); then
      echo "repro: patch '$name' does not apply to $sglang_dir:" >&2
      echo "$out" | sed 's/^/repro:   /' >&2
      exit 1
    fi
    patch -p1 --batch --quiet < "$file"
  fi
  echo "repro: applied patch $name"
done < "$patch_dir/series"

#!/usr/bin/env bash
# The library's size limits, checked: no source file over 600 lines and no
# function over 80 lines in the library folders. Functions are found with
# universal-ctags (their start and end lines). Exit 1 with one line per
# offender.
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
max_file=600
max_fn=80
dirs=(src algorithms transports bindings include)
bad=0
while read -r n f; do
  echo "file over $max_file lines: $f ($n)"
  bad=1
done < <(find "${dirs[@]}" -type f \( -name '*.cc' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name '*.c' \) \
           -exec wc -l {} + | awk -v m=$max_file '$2 != "total" && $1 > m {print $1, $2}')
if ! command -v ctags >/dev/null || ! ctags --version 2>/dev/null | grep -q Universal; then
  echo "check-code-shape: universal-ctags is not installed (tools/setup.sh installs it)" >&2
  exit 2
fi
while read -r n f name; do
  echo "function over $max_fn lines: $f $name ($n)"
  bad=1
done < <(ctags -R --languages=C++,C --map-C++=+.cu --map-C++=+.cuh --kinds-C++=f --kinds-C=f --fields=+ne -x \
           --_xformat="%{end} %{line} %{input} %{name}" "${dirs[@]}" 2>/dev/null |
         awk -v m=$max_fn '$1 ~ /^[0-9]+$/ { n = $1 - $2 + 1; if (n > m) print n, $3, $4 }')
if [ $bad = 0 ]; then echo "check-code-shape: files <= $max_file lines, functions <= $max_fn lines"; fi
exit $bad

# Sourced by the scripts here that run ranks over shaped namespace links
# (validate.sh, switch-check.sh) with their BUILD_DIR argument: sets `repo`
# and `build` (absolute; default repo/build), sources netns_hosts.sh and runs
# its preflight. A non-zero status (77: this machine cannot shape links,
# with the reason printed) is the caller's exit code.
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "${1:-$repo/build}" 2>/dev/null && pwd) || { echo "no build folder ${1:-$repo/build}" >&2; return 2; }
source "$repo/tests/multihost/netns_hosts.sh"
mh_preflight_shaped

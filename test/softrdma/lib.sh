# Shared by test/softrdma/{prepare,run,stage}: cache location, messages, step timing.
# Sourced, not executed.

SOFTRDMA_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SOFTRDMA_REPO=$(cd "$SOFTRDMA_DIR/../.." && pwd)
SOFTRDMA_CACHE=${RCOLL_SOFTRDMA_CACHE:-/var/cache/rcoll-softrdma}
SOFTRDMA_ME=${SOFTRDMA_ME:-softrdma}

sr_msg() { printf '%s: %s\n' "$SOFTRDMA_ME" "$*" >&2; }
sr_die() { printf '%s: error: %s\n' "$SOFTRDMA_ME" "$*" >&2; exit 1; }

sr_now() { date +%s.%N; }
# sr_elapsed START -> seconds since START with one decimal
sr_elapsed() { awk -v a="$1" -v b="$(sr_now)" 'BEGIN { printf "%.1f", b - a }'; }

# sr_step NAME: start a timed step; sr_step_done closes it and prints its duration.
sr_step() { SR_STEP_NAME=$1; SR_STEP_T0=$(sr_now); sr_msg "step: $1 ..."; }
sr_step_done() { sr_msg "step: $SR_STEP_NAME done in $(sr_elapsed "$SR_STEP_T0") s${1:+ ($1)}"; }

# The file prepare writes last; run and stage read it to find the kernel and initramfs.
SOFTRDMA_CURRENT=$SOFTRDMA_CACHE/current.env

# Shared by the tests that run what the README shows, as written, on this
# build tree (test-demo.sh: scripts/demo; test-readme-tour.sh: the
# five-minute tour): where the tree is, skip/fail, and what every such
# run needs (pcisim built, FUSE). Source it first thing:
#
#   . "$(dirname "$0")/tour-lib.sh"
# shellcheck shell=sh
set -eu
: "${top_builddir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_srcdir:=$top_builddir}"

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }

[ -x "$top_builddir/tests/pcisim/pcisim" ] || skip "pcisim not built"
[ -e /dev/fuse ] || skip "no /dev/fuse: pcisim cannot mount"

#!/bin/sh
# The README's setup, without touching the host:
#   - scripts/demo and scripts/check run as they are for root and re-run
#     themselves under sudo for anyone else (keeping the settings they
#     read), or say that root is needed when there is no sudo;
#   - scripts/setup-deps --build asks only for the build-and-run set,
#     --test for the test stack;
#   - the binaries' default config follows configure's --sysconfdir.
# sudo, dpkg-query and apt-get are stand-ins (fakes) here: the real ones
# would need a second user with sudo rights and would install packages.
set -eu
: "${top_builddir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_srcdir:=$top_builddir}"

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }

T=$(mktemp -d "${TMPDIR:-/tmp}/svff-setup-test.XXXXXX")
trap 'rm -rf "$T"' EXIT
chmod 755 "$T"

# A copy of the scripts another user can read; bin/ holds only the tools
# the scripts' first lines use, so "no sudo" is exact.
mkdir -p "$T/src/scripts" "$T/bin" "$T/fake"
cp "$top_srcdir/scripts/demo" "$top_srcdir/scripts/check" "$top_srcdir/scripts/setup-deps" "$T/src/scripts/"
for tool in sh id dirname cat; do
        ln -s "$(command -v $tool)" "$T/bin/$tool"
done
chmod -R a+rX "$T"

if [ "$(id -u)" -eq 0 ]; then
        command -v setpriv >/dev/null || skip "setpriv (util-linux) is needed to run as another user"
        as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
else
        as_user() { "$@"; }
fi

as_user test -r "$T/src/scripts/demo" || skip "the unprivileged user cannot read '$T' (TMPDIR not world-readable)"

# A stand-in sudo: says how it was called.
cat > "$T/fake/sudo" <<'SH'
#!/bin/sh
echo "fake-sudo: $*"
SH
chmod 755 "$T/fake/sudo"

for s in demo check; do
        rc=0
        as_user env -i PATH="$T/bin" sh "$T/src/scripts/$s" > "$T/out" 2>&1 || rc=$?
        [ "$rc" = 1 ] || fail "$s without sudo as a user: exit $rc: $(cat "$T/out")"
        grep -q "scripts/$s: needs root .* there is no sudo: run it as root" "$T/out" ||
                fail "$s without sudo: $(cat "$T/out")"

        as_user env -i PATH="$T/fake:$T/bin" SVFF_BUILDDIR=/x sh "$T/src/scripts/$s" --quick > "$T/out" 2>&1 ||
                fail "$s under the stand-in sudo: $(cat "$T/out")"
        grep -q "^fake-sudo: --preserve-env=[A-Z_,]* $T/src/scripts/$s --quick$" "$T/out" ||
                fail "$s did not re-run itself under sudo: $(cat "$T/out")"
done
grep -q "preserve-env=SVFF_BUILDDIR" "$T/src/scripts/demo" || fail "demo does not keep SVFF_BUILDDIR"

# setup-deps: a stand-in dpkg-query that knows no package, a stand-in
# apt-get that says what it was asked to install.
cat > "$T/fake/dpkg-query" <<'SH'
#!/bin/sh
exit 1
SH
cat > "$T/fake/apt-get" <<'SH'
#!/bin/sh
[ "$1" = update ] || echo "fake-apt-get: $*"
SH
chmod 755 "$T/fake/dpkg-query" "$T/fake/apt-get"
deps() { PATH="$T/fake:$PATH" sh "$T/src/scripts/setup-deps" "$@"; }
deps --build > "$T/build.out" || fail "setup-deps --build: $(cat "$T/build.out")"
grep -q "fake-apt-get: install .* libvirt-dev" "$T/build.out" || fail "--build lacks the build set: $(cat "$T/build.out")"
for p in qemu-system-x86 linux-image-amd64 clang valgrind dpdk libvirt-daemon-system; do
        grep -qw -- "$p" "$T/build.out" && fail "--build installs the test package $p: $(cat "$T/build.out")"
done
deps --test > "$T/test.out" || fail "setup-deps --test"
grep -q "qemu-system-x86" "$T/test.out" && ! grep -qw "libvirt-dev" "$T/test.out" ||
        fail "--test is not the test set: $(cat "$T/test.out")"
deps > "$T/all.out" || fail "setup-deps"
grep -q "libvirt-dev" "$T/all.out" && grep -q "qemu-system-x86" "$T/all.out" || fail "setup-deps installs not both sets"
rc=0; deps --bogus > /dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "setup-deps --bogus: exit $rc"

# The README's install section asks only for the build set.
sed -n '/^## Installing on a real host/,/^## /p' "$top_srcdir/README.md" | grep -q "setup-deps --build" ||
        fail "the README installs more than the build set on a real host"
head -n 8 "$top_srcdir/README.md" | grep -q "^sudo " && fail "the README's first commands begin with sudo"

# --sysconfdir reaches the default config path (Makefile passes the
# configured sysconfdir).
if [ -n "${svff_sysconfdir:-}" ] && [ -x "$top_builddir/daemon/svffd" ]; then
        "$top_builddir/daemon/svffd" --help 2>&1 | grep -qF "(default $svff_sysconfdir/svff/svff.conf)" ||
                fail "svffd's default config is not under sysconfdir '$svff_sysconfdir': $("$top_builddir/daemon/svffd" --help 2>&1 | grep config=)"
        "$top_builddir/cli/svffctl" config check 2>&1 | grep -qF "$svff_sysconfdir/svff/svff.conf" ||
                fail "svffctl's default config is not under sysconfdir '$svff_sysconfdir'"
fi
echo PASS

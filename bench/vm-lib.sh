# Helpers of the VM-tier benches (bench/vm-*.guest.sh), sourced in the
# guest after tests/vm/lib.sh: times, ratios, and a reconf's phases from
# svffd's monitor stream. The caller sets fig (the figures file).

say() { printf '%s\n' "$*" | tee -a "$fig"; }
now() { date +%s.%N; }
since() { echo "$1 $(now)" | awk '{ printf "%.2f", $2 - $1 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "n/a" }'; }
# min A B...: the smallest of the figures.
min() { printf '%s\n' "$@" | sort -g | head -n1; }

# phases FILE: the reconf's phases from svffd's monitor events, each as
# seconds since the reconf started: "quiesce Q, numvfs N, provision P,
# bind B, restore R". Provision (the device class's steps, per VF) runs
# from the end of numvfs to its last VF's step; the journal write of the
# class state that follows it counts in bind.
phases() {
        jq -r 'select(.timestamp_usec) | "\(.timestamp_usec) \(.event) \(.phase // "-") \(.action // "-")"' "$1" |
                awk '$2 == "reconf-started" { t0 = $1 }
                     t0 && $3 == "quiesce" { q = $1 } t0 && $4 == "numvfs" { n = $1 }
                     t0 && $3 == "provision" { p = $1 }
                     t0 && $4 == "bind" { b = $1 } t0 && $3 == "restore" { r = $1 }
                     END { if (!p) p = n; if (!b) b = p; if (!q) q = t0
                           printf "quiesce %.2f, numvfs %.2f, provision %.2f, bind %.2f, restore %.2f",
                                  (q - t0) / 1e6, (n - q) / 1e6, (p - n) / 1e6, (b - p) / 1e6, (r - b) / 1e6 }'
}
# provision_s FILE: the provision phase of the reconf in FILE, seconds.
provision_s() {
        phases "$1" | sed -n 's/.*provision \([0-9.]*\),.*/\1/p'
}

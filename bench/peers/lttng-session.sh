# bench/peers/lttng-session.sh — sourced by the benchmark scripts that run a
# peer under LTTng-UST: a private session daemon and one snapshot (overwrite)
# session of 64 sub-buffers of 1 MiB, the same shape as the ltr session beside it.
#   lttng_snapshot_start NAME EVENT-PATTERN   starts it (sets $sessiond)
#   lttng_snapshot_cleanup                    destroys it and stops the daemon (trap on EXIT)
sessiond=""

lttng_snapshot_start() {
  lttng-sessiond --no-kernel >/dev/null 2>&1 &
  sessiond=$!
  sleep 1
  lttng create "$1" --snapshot >/dev/null
  lttng enable-channel -u ch --subbuf-size 1M --num-subbuf 64 --overwrite >/dev/null
  lttng enable-event -u -c ch "$2" >/dev/null
  lttng start >/dev/null
}

lttng_snapshot_cleanup() {
  if [ -n "$sessiond" ]; then lttng destroy -a >/dev/null 2>&1 || true; kill "$sessiond" 2>/dev/null || true; fi
}

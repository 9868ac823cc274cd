#!/bin/bash
# client.bash: the PodMotion benchmark's client (bench/podmotion/run.sh starts it; run.sh is
# POSIX sh, which cannot hold a socket). Holds ONE TCP connection to the CRIU counter
# (tests/criu/counter.c) for the whole benchmark and asks "inc" every TICK_MS: every answer must
# be the previous one plus one (the first sets where it starts), so a restored copy that lost
# the counter's memory, a reset or a closed connection ends the client with an ERROR line.
#
#   client.bash IP PORT LOG TICK_MS STOPFILE
#
# LOG gets one line per answer, "SENT_US ANSWERED_US VALUE" (epoch microseconds: when the request
# was written, when its answer was read), an "ERROR ..." line when the connection breaks or the
# counter does not go on, and "END VALUE" once STOPFILE exists. It connects (retrying for 5 s)
# before it writes anything. A request waits at most 30 s for its answer (a move retransmits it:
# minimum RTO 200 ms, doubling).
set -u
[ $# = 5 ] || { echo "usage: client.bash IP PORT LOG TICK_MS STOPFILE" >&2; exit 2; }
ip=$1 port=$2 log=$3 tick=$4 stop=$5
trap '' PIPE # a write to a reset connection fails with EPIPE instead of killing the client
now() { echo "${EPOCHREALTIME/./}"; }
err() { echo "$(now) ERROR $*" >>"$log"; exit 1; }

# a descriptor that never becomes readable: `read -t` on it sleeps without a fork
f=$(mktemp -u "${TMPDIR:-/tmp}/godwit-bench-tick-XXXXXX")
mkfifo -m 600 "$f" || err "mkfifo $f failed"
exec 9<>"$f"
rm -f "$f"
tick_s=$(printf '%d.%03d' $((tick / 1000)) $((tick % 1000)))

connected=0
for _ in $(seq 50); do
  if { exec 3<>"/dev/tcp/$ip/$port"; } 2>/dev/null; then connected=1; break; fi
  read -r -t 0.1 -u 9 _ || :
done
[ "$connected" = 1 ] || err "cannot connect to $ip:$port"

prev=
while [ ! -e "$stop" ]; do
  s=${EPOCHREALTIME/./}
  printf 'inc\n' >&3 || err "write: the connection broke (value ${prev:-none})"
  rc=0
  IFS= read -r -t 30 v <&3 || rc=$?
  [ "$rc" -gt 128 ] && err "no answer within 30 s (value ${prev:-none})"
  [ "$rc" = 0 ] || err "read: the connection was closed or reset (value ${prev:-none})"
  e=${EPOCHREALTIME/./}
  case $v in [0-9]*) ;; *) err "answered '$v': not a number" ;; esac
  [ -z "$prev" ] || [ "$v" = $((prev + 1)) ] || err "answered '$v' after $prev: the counter did not go on"
  echo "$s $e $v" >>"$log"
  prev=$v
  read -r -t "$tick_s" -u 9 _ || :
done
echo "$(now) END $prev" >>"$log"

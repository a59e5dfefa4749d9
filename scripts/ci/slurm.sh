#!/usr/bin/env bash
# A private SLURM cluster on loopback for the submit tests (and for trying `gpuparity submit`):
# munged with its own key, slurmctld, and two slurmd (nodes n1 and n2, one CPU each, no GPUs)
# on this machine, all in one temp dir. The machine's own SLURM and munge stay untouched.
#
#   eval "$(bash scripts/ci/slurm.sh start)"      # new cluster in a temp dir, free ports
#   bash scripts/ci/slurm.sh stop DIR             # cancel its jobs, stop its daemons
#
# `start` prints SLURM_CONF (what sbatch, squeue, scontrol and scancel read) and
# GPUPARITY_TEST_SLURM_DIR. Daemons run as the current user (root in CI); no cgroup plugins
# (proctrack/linuxproc, task/none), no accounting database (finished jobs are kept by slurmctld
# for MinJobAge). SlurmdTimeout is short so that a node that stops answering is DOWN in seconds.
set -euo pipefail

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

need() {
  command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || {
    echo "slurm.sh: $1 not found (apt-get install slurm-wlm munge)" >&2; exit 3; }
}

start() {
  local dir=${1:-} user ctl_port n1_port n2_port host
  for tool in munged slurmctld slurmd sbatch sinfo; do need "$tool"; done
  PATH=$PATH:/usr/sbin
  [ -n "$dir" ] || dir=$(mktemp -d /tmp/gpuparity-slurm.XXXXXX)
  mkdir -p "$dir"/{munge,state,log,spool-n1,spool-n2}
  chmod 755 "$dir"                 # munged wants its socket's folders searchable by all
  chmod 700 "$dir/munge"
  user=$(id -un)
  host=$(hostname)
  ctl_port=$(free_port); n1_port=$(free_port); n2_port=$(free_port)
  [ -f "$dir/munge/munge.key" ] || { dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 2>/dev/null;
                                     chmod 400 "$dir/munge/munge.key"; }
  munged --force --socket="$dir/munge/munge.sock" --key-file="$dir/munge/munge.key" \
    --log-file="$dir/log/munged.log" --pid-file="$dir/munge/munged.pid" --seed-file="$dir/munge/seed" \
    || { cat "$dir/log/munged.log" >&2; exit 4; }
  cat >"$dir/slurm.conf" <<EOF
ClusterName=gpuparity-test
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctl_port
SlurmdPort=$n1_port
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.sock
SlurmUser=$user
SlurmdUser=$user
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool-%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SchedulerType=sched/backfill
ReturnToService=2
SlurmdTimeout=5
MessageTimeout=5
InactiveLimit=0
KillWait=30
MinJobAge=900
NodeName=n1 NodeHostname=$host NodeAddr=127.0.0.1 Port=$n1_port CPUs=1 RealMemory=500 State=UNKNOWN
NodeName=n2 NodeHostname=$host NodeAddr=127.0.0.1 Port=$n2_port CPUs=1 RealMemory=500 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  export SLURM_CONF=$dir/slurm.conf
  slurmctld -f "$SLURM_CONF" || { tail -20 "$dir/log/slurmctld.log" >&2; exit 5; }
  slurmd -f "$SLURM_CONF" -N n1 || { tail -20 "$dir/log/slurmd-n1.log" >&2; exit 6; }
  slurmd -f "$SLURM_CONF" -N n2 || { tail -20 "$dir/log/slurmd-n2.log" >&2; exit 6; }
  for _ in $(seq 60); do
    if [ "$(sinfo -h -o '%D %t' 2>/dev/null)" = "2 idle" ]; then
      echo "export SLURM_CONF=$SLURM_CONF"
      echo "export GPUPARITY_TEST_SLURM_DIR=$dir"
      return
    fi
    sleep 0.5
  done
  echo "slurm.sh: the nodes did not come up: $(sinfo 2>&1 | tail -3)" >&2
  tail -5 "$dir"/log/*.log >&2
  exit 7
}

stop() {
  local dir=${1:?usage: slurm.sh stop DIR} pidfile
  PATH=$PATH:/usr/sbin
  export SLURM_CONF=$dir/slurm.conf
  squeue -h -o %i 2>/dev/null | xargs -r scancel 2>/dev/null || true
  for pidfile in "$dir"/slurmd-n1.pid "$dir"/slurmd-n2.pid "$dir"/slurmctld.pid "$dir"/munge/munged.pid; do
    [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
  done
}

case "${1:-}" in
  start) shift; start "$@" ;;
  stop) shift; stop "$@" ;;
  *) echo "usage: $0 start [DIR] | stop DIR" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# Runs scripts/slurm-grade.sbatch under a real Slurm, end to end, on this one machine (no GPU
# needed):
#
#   scripts/test-slurm.sh
#
# 1. installs Debian's Slurm and MUNGE where they are missing (slurmctld, slurmd, slurm-client,
#    munge; and jq), as root or through sudo -n;
# 2. starts, by hand (no systemd), munged, slurmctld and slurmd with their own key, sockets,
#    ports, state, spool and logs in one temporary folder: a one-node cluster of this host with
#    its nproc CPUs and two stand-in GPUs (gres "gpu", no device files), no cgroup plugins;
# 3. makes four submissions of lesson 01 (the solution, the starter, a compile error, an exercise
#    the seal refuses) and submits the sbatch script unchanged as a job array, two submissions
#    per task (PER_TASK=2) and one task past the end of the list (--array=0-2), so two tasks
#    grade at once, each with its own grading build;
# 4. waits for the array (LAB_SLURM_TIMEOUT seconds, default 900), runs lab-check merge, and
#    checks the gradebook: every submission there and complete, the two that could not be judged
#    named in its warnings, and the verdicts a machine without a GPU gives (the solution and the
#    starter `environment` (no-gpu), the compile error
#    `error` (compile), the refused exercise `error` (forbidden), the other lessons `fail`
#    (not-submitted), no points);
#    every task COMPLETED with exit code 0, each task's grading build removed.
# It fails with one sentence (the last line) when anything is wrong, and always stops the daemons
# and removes the temporary folder (LAB_SLURM_KEEP=1 keeps it, for a look at the logs).
#
# The checker: LAB_BUILD (a configured build with checker/lab-check and lab-mutant built), else build/ci's (the
# build of `cmake --workflow --preset test`; brought up to date), else one built here in
# build/slurm (configure, then only the lab-check target). The grading builds need nvcc (on PATH
# or in /usr/local/cuda/bin). 2 to 4 minutes on 2 cores with the checker already built.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
say() { echo "test-slurm: $*"; }

if ((EUID != 0)); then
  # slurmd must be root to start jobs; munged and slurmctld run as root too (SlurmUser=root).
  command -v sudo >/dev/null || { echo "test-slurm: FAILED: this needs root, and sudo is not installed." >&2; exit 1; }
  sudo -n true 2>/dev/null || { echo "test-slurm: FAILED: this needs root, and sudo -n asks for a password." >&2; exit 1; }
  exec sudo -n env "PATH=$PATH" ${LAB_BUILD:+"LAB_BUILD=$LAB_BUILD"} \
    ${LAB_SLURM_TIMEOUT:+"LAB_SLURM_TIMEOUT=$LAB_SLURM_TIMEOUT"} ${LAB_SLURM_KEEP:+"LAB_SLURM_KEEP=$LAB_SLURM_KEEP"} \
    bash "${BASH_SOURCE[0]}" "$@"
fi

timeout_s=${LAB_SLURM_TIMEOUT:-900}
lesson=01-timing-pitfalls
SECONDS=0
tmp=""
jobid=""
daemons=()        # "name pid", in the order started
failure=""
failed_line=""

# The failure sentence is printed last, after the daemons are stopped, so it stays the last line.
die() { failure="$*"; exit 1; }
trap 'failed_line=$LINENO' ERR
cleanup() {
  local rc=$? i name pid
  trap - ERR
  set +e
  if [[ -n $jobid ]] && [[ -n $(squeue -h -j "$jobid" -o %i 2>/dev/null) ]]; then
    scancel "$jobid" 2>/dev/null
    for i in $(seq 30); do [[ -z $(squeue -h -j "$jobid" -o %i 2>/dev/null) ]] && break; sleep 1; done
  fi
  for ((i = ${#daemons[@]} - 1; i >= 0; i--)); do
    read -r name pid <<<"${daemons[i]}"
    kill -TERM "$pid" 2>/dev/null || continue
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null && say "$name (pid $pid) did not stop on SIGTERM: killed"
    wait "$pid" 2>/dev/null
  done
  if [[ -n $tmp && -d $tmp ]]; then
    if [[ ${LAB_SLURM_KEEP:-0} == 1 ]]; then say "kept $tmp"; else rm -rf "$tmp"; fi
  fi
  if ((rc != 0)); then
    [[ -n $failure ]] || failure="an unexpected error on line ${failed_line:-?} of $0 (see above)"
    echo "test-slurm: FAILED: $failure" >&2
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'failure="interrupted"; exit 130' INT TERM

# --- Slurm and MUNGE, from Debian's packages --------------------------------------------------
missing=()
for entry in slurmctld:slurmctld slurmd:slurmd slurm-client:sbatch munge:munged jq:jq; do
  command -v "${entry#*:}" >/dev/null || missing+=("${entry%%:*}")
done
if ((${#missing[@]})); then
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq || die "apt-get update failed, so ${missing[*]} cannot be installed"
  # Without systemd the packages' scripts cannot start the services: we start them below.
  apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null >/tmp/test-slurm-apt.log 2>&1 ||
    { tail -n 20 /tmp/test-slurm-apt.log >&2 || true; die "apt-get install ${missing[*]} failed (log above)"; }
fi
say "$(slurmctld -V), munge $(munged -V 2>&1 | awk '{print $2; exit}')"

# --- the checker -------------------------------------------------------------------------------
[[ -d /usr/local/cuda/bin ]] && export PATH="/usr/local/cuda/bin:$PATH"
command -v nvcc >/dev/null || die "nvcc is not on PATH nor in /usr/local/cuda/bin: the grading builds need the CUDA toolkit"
if [[ -n ${LAB_BUILD:-} ]]; then
  build="$(cd "$LAB_BUILD" 2>/dev/null && pwd)" || die "LAB_BUILD=$LAB_BUILD is not a folder"
elif [[ -x $repo/build/ci/checker/lab-check ]]; then
  build=$repo/build/ci
  say "bringing $build/checker/lab-check up to date"
  cmake --build "$build" --target lab-check lab-mutant >/dev/null || die "cmake --build $build --target lab-check lab-mutant failed"
else
  build=$repo/build/slurm
  if [[ ! -f $build/CMakeCache.txt ]]; then
    say "configuring $build"
    mkdir -p "$build"
    generator=()
    command -v ninja >/dev/null && generator=(-G Ninja)
    cmake -S "$repo" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CUDA_ARCHITECTURES=90 -DLAB_BUILD_DOCS=OFF >"$build/configure.log" 2>&1 ||
      { tail -n 30 "$build/configure.log" >&2 || true; die "configuring $build failed (log above)"; }
  fi
  say "building $build/checker/lab-check"
  cmake --build "$build" --target lab-check lab-mutant || die "cmake --build $build --target lab-check lab-mutant failed"
fi
check=$build/checker/lab-check
[[ -x $check ]] || die "$check is not built"

# --- a one-node cluster in a temporary folder ------------------------------------------------
tmp=$(mktemp -d /tmp/lab-slurm.XXXXXX)
chmod 755 "$tmp"  # the grading build's user (uid 65533) must reach the grading folders
mkdir -p "$tmp"/{etc,dev,state,spool,run,log,munge,work/node-tmp}
chmod 700 "$tmp/munge"
node=$(hostname -s)
cpus=$(nproc)

free_port() {  # the first port from $1 on that nothing listens on (and not $2)
  local p
  for ((p = $1; p < $1 + 500; p++)); do
    [[ $p == "${2:-}" ]] && continue
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return 0; }
  done
  return 1
}
ctld_port=$(free_port 26817) || die "no free TCP port for slurmctld from 26817 on"
slurmd_port=$(free_port $((ctld_port + 1)) "$ctld_port") || die "no free TCP port for slurmd"

socket=$tmp/munge/munge.socket
dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$tmp/munge/munge.key"

conf=$tmp/etc/slurm.conf
cat >"$conf" <<EOF
# Written by scripts/test-slurm.sh: a one-node cluster, every file in $tmp.
ClusterName=labtest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/run/slurmctld.pid
SlurmdPidFile=$tmp/run/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
PlugStackConfig=$tmp/etc/plugstack.conf
# No cgroups, no accounting: nothing this container may not have.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
# Finished jobs stay in scontrol's view long enough to read each task's state and exit code.
MinJobAge=3600
GresTypes=gpu
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus Gres=gpu:2 State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
# Two stand-in GPUs for --gres=gpu:1 to count: Slurm drops a GPU without a device file, so each
# is an empty file (Slurm sets CUDA_VISIBLE_DEVICES from it; nothing is behind it).
touch "$tmp/dev/gpu0" "$tmp/dev/gpu1"
cat >"$tmp/etc/gres.conf" <<EOF
AutoDetect=off
NodeName=$node Name=gpu File=$tmp/dev/gpu[0-1]
EOF
: >"$tmp/etc/plugstack.conf"
export SLURM_CONF=$conf

start() {  # name log command...: in the foreground mode of each daemon, as our own child
  local name=$1 log=$2
  shift 2
  "$@" >"$log" 2>&1 &
  daemons+=("$name $!")
}
alive() {  # dies naming the first daemon that is gone, with the end of its logs
  local entry name pid
  for entry in "${daemons[@]}"; do
    read -r name pid <<<"$entry"
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 15 "$tmp/log/$name".* >&2 2>/dev/null || true
      die "$name stopped by itself (its logs above)"
    fi
  done
}

start munged "$tmp/log/munged.out" munged --foreground --force --key-file="$tmp/munge/munge.key" \
  --socket="$socket" --pid-file="$tmp/run/munged.pid" --log-file="$tmp/log/munged.log" \
  --seed-file="$tmp/munge/munged.seed"
for _ in $(seq 50); do
  [[ -S $socket ]] && munge -n -S "$socket" | unmunge -S "$socket" >/dev/null 2>&1 && break
  alive
  sleep 0.2
done
munge -n -S "$socket" | unmunge -S "$socket" >/dev/null 2>&1 || die "munged does not answer on $socket"

start slurmctld "$tmp/log/slurmctld.out" slurmctld -D -c -i -f "$conf"
start slurmd "$tmp/log/slurmd.out" slurmd -D -f "$conf" -N "$node"
state=""
for _ in $(seq 60); do
  state=$(sinfo -h -N -n "$node" -o %T 2>/dev/null || true)
  [[ $state == idle ]] && break
  alive
  sleep 1
done
if [[ $state != idle ]]; then
  tail -n 15 "$tmp"/log/slurm*.log >&2 2>/dev/null || true
  die "the node $node is not idle after 60 s (sinfo says '${state:-nothing}'; logs above)"
fi
say "Slurm up in ${SECONDS}s: node $node, $cpus CPUs, 2 stand-in GPUs, slurmctld on port $ctld_port, slurmd on $slurmd_port"

# --- four submissions, graded by a job array -----------------------------------------------
work=$tmp/work
declare -A from=(
  [good]=solutions/$lesson/exercise.cu
  [broken]=mutant:compile_error
  [starter]=lessons/$lesson/exercise.cu
  [sealed]=mutant:replaces_the_library
)
for student in "${!from[@]}"; do
  mkdir -p "$work/submissions/$student/$lesson"
  to=$work/submissions/$student/$lesson/exercise.cu
  if [[ ${from[$student]} == mutant:* ]]; then  # solutions/$lesson/mutants/<name>.patch, applied
    "$build/checker/lab-mutant" "$repo" "$lesson" "${from[$student]#mutant:}" "$to" || die "lab-mutant failed"
  else
    cp "$repo/${from[$student]}" "$to"
  fi
done
# As an instructor would, from the class folder; two per task: task 0 good+broken, task 1
# starter+sealed, task 2 nothing (past the end).
printf 'submissions/%s/\n' good broken starter sealed >"$work/submissions.txt"
out=$(cd "$work" && sbatch --parsable --array=0-2 --cpus-per-task=1 \
  --export="ALL,LAB_BUILD=$build,PER_TASK=2,TMPDIR=$work/node-tmp" \
  "$repo/scripts/slurm-grade.sbatch" submissions.txt graded 2>&1) || die "sbatch refused the job: $out"
jobid=${out%%;*}
[[ $jobid =~ ^[0-9]+$ ]] || die "sbatch did not print a job id: $out"
say "submitted array job $jobid (tasks 0-2, PER_TASK=2); waiting at most ${timeout_s}s"

deadline=$((SECONDS + timeout_s))
last=""
while :; do
  queue=$(squeue -h -j "$jobid" -o '%i:%T' 2>&1) || die "squeue failed: $queue"
  [[ -z $queue ]] && break
  now=$(tr '\n' ' ' <<<"$queue")
  [[ $now != "$last" ]] && say "[${SECONDS}s] $now"
  last=$now
  ((SECONDS < deadline)) || { tail -n 20 "$work"/lab-grade-*.out >&2 2>/dev/null || true; die "the array job $jobid did not finish within ${timeout_s}s"; }
  alive
  sleep 2
done
say "[${SECONDS}s] the array has finished"

# Every task COMPLETED with exit code 0 (scontrol keeps finished jobs for MinJobAge).
tasks=$(scontrol -o show job "$jobid" 2>&1) || die "scontrol show job $jobid failed: $tasks"
for t in 0 1 2; do
  line=$(grep -E "ArrayTaskId=$t( |$)" <<<"$tasks" || true)
  log=$work/lab-grade-${jobid}_$t.out
  state=$(grep -o 'JobState=[A-Z_]*' <<<"$line" || true)
  code=$(grep -o 'ExitCode=[0-9:]*' <<<"$line" || true)
  echo "== task $t: ${state:-no record} ${code} (log $(basename "$log"))"
  [[ -f $log ]] && sed 's/^/   | /' "$log"
  [[ $state == JobState=COMPLETED && $code == ExitCode=0:0 ]] ||
    die "array task $t ended ${state:-with no record} ${code} instead of COMPLETED with exit code 0 (its log above)"
done
for t in 0 1; do
  grep -q '^lab-check: no usable GPU here' "$work/lab-grade-${jobid}_$t.out" ||
    die "task $t's log does not start its grading with lab-check's 'no usable GPU here' line"
done
grep -q 'nothing to grade' "$work/lab-grade-${jobid}_2.out" || die "task 2 (past the end of the list) did not say it had nothing to grade"
leftovers=$(ls -A "$work/node-tmp")
[[ -z $leftovers ]] || die "the tasks left their grading builds behind in TMPDIR: $leftovers"

# --- the gradebook ----------------------------------------------------------------------------
"$check" merge "$work/graded" --csv "$work/gradebook.csv" --json "$work/gradebook.json" ||
  die "lab-check merge $work/graded failed"
echo "== gradebook.csv"
cat "$work/gradebook.csv"
book=$work/gradebook.json
students=$(jq -r '[.students[].name] | sort | join(" ")' "$book")
[[ $students == "broken good sealed starter" ]] ||
  die "the gradebook has the students '$students' instead of 'broken good sealed starter'"
# Without a GPU the solution and the starter are judged `environment`: merge names those two (not
# judged, grade again) and reports nothing else.
problems=$(jq -r '.errors[], (.warnings[] | select(test("^(good|starter): not judged in ") | not))' "$book")
[[ -z $problems ]] || die "lab-check merge reported: $(tr '\n' ' ' <<<"$problems")"
unjudged=$(jq -r '[.warnings[] | select(test(": not judged in .*[(]no-gpu[)]")) | split(":")[0]] | sort | join(" ")' "$book")
[[ $unjudged == "good starter" ]] ||
  die "merge named '$unjudged' as not judged (no GPU), not 'good starter'"
declare -A want=([good]=environment:no-gpu [starter]=environment:no-gpu [broken]=error:compile [sealed]=error:forbidden)
for student in good starter broken sealed; do
  record=$work/graded/$student/result.json
  for f in result.json gradescope.json junit.xml; do
    [[ -s $work/graded/$student/$f ]] || die "$student has no $f"
  done
  [[ $(jq -r '.complete' "$record") == true ]] || die "$student's grading is not complete"
  got=$(jq -r --arg l "$lesson" '.lessons[] | select(.lesson == $l) | "\(.verdict):\(.reason // "")"' "$record")
  [[ $got == "${want[$student]}" ]] ||
    die "$student's lesson $lesson reads '$got' (verdict:reason), not '${want[$student]}'"
  [[ $(jq -r --arg l "$lesson" --arg s "$student" '.students[] | select(.name == $s) | .lessons[$l].verdict' "$book") == "${want[$student]%%:*}" ]] ||
    die "the gradebook's verdict for $student differs from $student's record"
  others=$(jq -r --arg l "$lesson" '[.lessons[] | select(.lesson != $l) | select(.verdict != "fail" or .reason != "not-submitted" or .score != 0)] | length' "$record")
  [[ $others == 0 ]] || die "$student has $others lessons other than $lesson not graded 'not submitted'"
  [[ $(jq -r '.score' "$record") == 0 ]] || die "$student scored $(jq -r '.score' "$record") without a GPU (nothing can pass)"
done
say "OK in ${SECONDS}s: array job $jobid graded 4 submissions in 2 tasks under Slurm $(slurmctld -V | awk '{print $2}');" \
  "verdicts good/starter environment, broken error (compile), sealed error (forbidden)"

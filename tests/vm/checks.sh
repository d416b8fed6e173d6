#!/bin/sh
# The VM matrix's checks, run inside the guest by busybox sh from the repository's copy in /r: each
# mode of fnprof on targets whose truth is known, one line per check on the console:
#   CHECK MODE PASS|FAIL|REFUSED REASON
# REFUSED: fnprof exited non-zero with a message that names what the kernel lacks. The guest may be
# emulated (TCG, 10-50 times slower than the host): nothing here asserts a time, only counts, names,
# stacks and exit codes. With vmtest.run=diag on the kernel's command line, prints the verbose logs
# (-v) of a trace and of sampling, the calibration and the listing of a nop entry instead.
B=tests/bin
V=tests/bin/vm
F=./fnprof
T=/tmp/vmtest
LIMIT=300  # seconds a check may take: a hang is a failure, not the end of the run
mkdir -p "$T"

arg() { sed -n "s/.*vmtest\.$1=\([^ ]*\).*/\1/p" /proc/cmdline; }

# The first line of fnprof's own error (not a warning) in FILE.
fnerr() { grep '^fnprof: ' "$1" | grep -v '^fnprof: \(warning\|note\|debug\)' | head -1; }

# The last report of MODE (trace, sample, offcpu...) in the JSON lines of FILE.
last() { jq -c -s --arg m "$2" '[.[] | select(.mode == $m)] | last' "$1" 2>/dev/null; }

# FIELD (a jq path) of function NAME in the last MODE report of FILE.
fget() { last "$1" "$2" | jq -r --arg n "$3" "[.functions[] | select(.name == \$n)][0] | $4"; }

# A number from the target's "truth KEY field=N" line in FILE.
truth() { sed -n "s/^truth $2 \(.* \)\{0,1\}$3=\([0-9.]*\).*/\2/p" "$1" | tail -1; }

# Runs fnprof with ARGS, its stderr into $T/$name.err; the exit code in rc. In the background
# (fpbg ARGS &), $! is fnprof's own pid (busybox's timeout execs the command in its own process).
fp() {
	timeout -s KILL "$LIMIT" "$F" "$@" 2>"$T/$name.err"
	rc=$?
}
fpbg() { exec timeout -s KILL "$LIMIT" "$F" "$@" 2>"$T/$name.err"; }

# fnprof's failure as a verdict: REFUSED when its message names what the kernel lacks, else FAIL.
failed() {
	msg=$(fnerr "$T/$name.err")
	[ -n "$msg" ] || msg="exit $rc: $(tail -1 "$T/$name.err")"
	if echo "$msg" | grep -qiE 'kernel.*(lacks|has no|without|needs|missing|not supported)'; then
		verdict=REFUSED
	else
		verdict=FAIL
	fi
	reason=$msg
}

# Whether process PID still runs: an exited child stays a zombie until waited for, and kill -0 finds it.
alive() { [ -r "/proc/$1/stat" ] && ! grep -q '^[0-9]* (.*) Z ' "/proc/$1/stat"; }

ok() { verdict=PASS reason="$*"; }
bad() { verdict=FAIL reason="$*"; }

# Launch mode: every call from the first instruction, and its latency against the target's own clock,
# checked for gross error only (a median within half and twice the target's): under TCG a probe's
# trap may take 100 us, and what the probes cost inside the call varies more than the calibration
# can take out. The median read +7..15% on 5.10 and 6.1, and once +30% on 6.1 (its raw median +53%:
# 14 us of probe inside the call against 6 us calibrated). The host's suite checks the time.
check_trace() {
	fp -f spin_us --json -o "$T/$name.json" -- $B/work spin 20 200
	[ $rc -eq 0 ] || { failed; return; }
	n=$(fget "$T/$name.json" trace spin_us .calls) want=$(truth "$T/$name.err" spin_us calls)
	p=$(fget "$T/$name.json" trace spin_us '.wall_ns.p50 // 0') q=$(truth "$T/$name.err" spin_us p50_ns)
	why="spin_us $n calls of $want; median wall $p ns, $q ns by its own clock"
	[ "$n" = "$want" ] && [ "$want" = 200 ] && [ -n "$q" ] && [ $((p * 2)) -ge "$q" ] &&
		[ "$p" -le $((q * 2)) ] && ok "$why" || bad "$why"
}

# A library's function in a launched command, mapped by the dynamic loader after the exec (where the
# compat trace object reads the probes' addresses: its build-id fallback then).
check_trace_lib() {
	fp -f libtarget:lib_spin --json -o "$T/$name.json" -- $B/uselib 300
	[ $rc -eq 0 ] || { failed; return; }
	n=$(fget "$T/$name.json" trace lib_spin .calls) want=$(truth "$T/$name.err" lib_spin calls)
	lost=$(last "$T/$name.json" trace | jq '[.dropped[]] | add')
	[ "$n" = "$want" ] && [ "$want" = 300 ] && [ "$lost" = 0 ] && ok "lib_spin $n calls" ||
		bad "lib_spin $n calls of $want, $lost dropped"
}

# The first byte of the code at file offset OFF of PATH in process PID: cc once a probe is in.
code_byte() {
	while read -r range perms foff _ _ path; do
		case $path:$perms in "$2":*x*) ;; *) continue ;; esac
		s=$((0x${range%-*})) e=$((0x${range#*-})) f=$((0x$foff))
		if [ "$3" -ge $f ] && [ "$3" -lt $((f + e - s)) ]; then
			dd if="/proc/$1/mem" bs=1 skip=$((s + $3 - f)) count=1 2>/dev/null | od -An -tx1
			return
		fi
	done <"/proc/$1/maps"
}

# -p: a process that waits on its stdin until the probes are in (the int3 seen in its code, and fnprof
# says all are).
check_trace_pid() {
	rm -f "$T/gate" && mkfifo "$T/gate"
	$B/work gate 300 <"$T/gate" >"$T/$name.out" 2>"$T/$name.truth" &
	pid=$!
	exec 3>"$T/gate"
	wait_line "$T/$name.out" ready $pid >/dev/null
	off=$("$F" --list -f outer -p $pid | awk 'NR == 2 { print $3 }')
	fpbg -v -p $pid -f outer -f inner --json -o "$T/$name.json" &
	fpid=$!
	i=0
	while [ "$(code_byte $pid "$(readlink /proc/$pid/exe)" $((off)))" != " cc" ] && [ $i -lt 600 ] &&
		alive $fpid; do
		sleep 0.2
		i=$((i + 1))
	done
	# And every probe: without uprobe_multi (5.10) they go in one by one, outer's uretprobe (its int3) first.
	wait_line "$T/$name.err" "attached [0-9]* probes" $fpid >/dev/null
	echo go >&3
	exec 3>&-
	wait $pid
	wait $fpid
	rc=$?
	[ $rc -eq 0 ] || { failed; return; }
	o=$(fget "$T/$name.json" trace outer .calls) in=$(fget "$T/$name.json" trace inner .calls)
	want=$(truth "$T/$name.truth" outer calls)
	# inner's median wall time against its own clock, for gross error only, as check_trace's.
	p=$(fget "$T/$name.json" trace inner '.wall_ns.p50 // 0') q=$(truth "$T/$name.truth" inner p50_ns)
	why="outer $o, inner $in calls of $want; inner's median wall $p ns, $q ns by its own clock"
	[ "$o" = 300 ] && [ "$in" = 300 ] && [ "$want" = 300 ] && [ -n "$q" ] && [ $((p * 2)) -ge "$q" ] &&
		[ "$p" -le $((q * 2)) ] && ok "$why" || bad "$why (offset $off)"
}

# Every kind of entry site (tests/vm/sitekinds.c): each function called N times (k_ret 2N: k_call too).
check_sites() {
	fp -f 'k_*' --json -o "$T/sites.json" -- $V/sitekinds 300 >/dev/null
	[ $rc -eq 0 ] || { failed; return; }
	wrong=$(last "$T/sites.json" trace | jq -r '.functions[] |
		select(.calls != (if .name == "k_ret" then 600 else 300 end)) | "\(.name) \(.calls)"' | tr '\n' ' ')
	kinds=$(last "$T/sites.json" trace | jq -r '[.functions[].site] | unique | join(",")')
	nfn=$(last "$T/sites.json" trace | jq '.functions | length')
	[ "$nfn" = 10 ] && [ -z "$wrong" ] && ok "10 functions, exact counts; sites $kinds" ||
		bad "$nfn functions; wrong counts: $wrong; sites $kinds"
}

# A function that starts nopw; push %rbp: the probe on the nop where this kernel emulates it (the
# kernel's command line says, from tests/vm/kernels), else on the push, 6 bytes in. Reads the sites run.
check_nop_entry() {
	[ -s "$T/sites.json" ] || { bad "no sites run to read"; return; }
	s=$(fget "$T/sites.json" trace k_nopw '"\(.site) +\(.entry_skip_bytes)"')
	case "$(arg nop):$s" in
	emulated:"emulated-nop +0" | stepped:"emulated +"[1-9]*) ok "k_nopw probed at $s (nop $(arg nop) here)" ;;
	*) bad "k_nopw probed at $s, but this kernel's nop is $(arg nop)" ;;
	esac
}

# --exit=ret: probes on the ret instructions (read with capstone) instead of a uretprobe.
check_exit_ret() {
	fp -f tiny --exit=ret --json -o "$T/$name.json" -- $B/work count 300 >/dev/null
	[ $rc -eq 0 ] || { failed; return; }
	s=$(fget "$T/$name.json" trace tiny '"\(.calls) \(.exit)"')
	[ "$s" = "300 ret" ] && ok "tiny 300 calls, exit ret" || bad "tiny: calls and exit '$s', want '300 ret'"
}

# Sampling: burn's two functions sampled, and every stack through them whole down to main (the
# folded stacks), with DWARF (default) or frame pointers. No share is asserted: under TCG the
# program's start-up (the dynamic loader) takes a tenth of the samples.
sample_check() {
	fp "$@" -F 199 --json -o "$T/$name.json" --folded "$T/$name.folded" -- $B/burn 2
	[ $rc -eq 0 ] || { failed; return; }
	r=$(last "$T/$name.json" sample)
	a=$(echo "$r" | jq '[.functions[] | select(.name == "burn_a")][0].self_samples // 0')
	b=$(echo "$r" | jq '[.functions[] | select(.name == "burn_b")][0].self_samples // 0')
	n=$(echo "$r" | jq .samples)
	through=$(grep -cE '(^|;)burn_[ab]( |;)' "$T/$name.folded")
	cut=$(grep -E '(^|;)burn_[ab]( |;)' "$T/$name.folded" | grep -cvE '(^|;)main;')
	why="$n samples: burn_a $a, burn_b $b; $cut of $through stacks through them without main"
	[ "$a" -gt 0 ] && [ "$b" -gt 0 ] && [ "$cut" = 0 ] && ok "$why" || bad "$why"
}
check_sample() { sample_check; }
check_sample_fp() { sample_check --call-graph fp; }

# -a: every process; burn's rows with its pid and comm.
# The burners run for 60 s and are killed after the run: under TCG fnprof's sampling set-up alone
# took 4-6 s (DWARF), and a burner that ended first left a report with no samples (5.10, 1 in 6).
check_all() {
	$B/burn 60 >/dev/null 2>&1 &
	pid=$!
	fp -a -F 199 -d 2 --json -o "$T/$name.json"
	kill $pid 2>/dev/null
	wait $pid 2>/dev/null
	[ $rc -eq 0 ] || { failed; return; }
	s=$(last "$T/$name.json" sample | jq -r --argjson p $pid \
		'[.functions[] | select(.pid == $p and .name == "burn_a")][0] | "\(.comm) \(.self_samples)"')
	case "$s" in
	"burn "[1-9]*) ok "burn_a of pid $pid (burn): ${s#burn } samples" ;;
	*) bad "no burn_a row of pid $pid with comm burn: '$s'" ;;
	esac
}

# -p A,B without -f: each process sampled and reported on its own (its own report, its pid).
check_pid_list() {
	$B/burn 60 >/dev/null 2>&1 &
	a=$!
	$B/burn 60 >/dev/null 2>&1 &
	b=$!
	fp -p "$a,$b" -F 199 -d 2 --json -o "$T/$name.json"
	kill $a $b 2>/dev/null
	wait $a $b 2>/dev/null
	[ $rc -eq 0 ] || { failed; return; }
	s=$(jq -r -s --argjson a $a --argjson b $b '[.[] | select(.mode == "sample" and (.pid == $a or .pid == $b))
		| select(any(.functions[]; .name == "burn_a" and .self_samples > 0)) | .pid] | unique | length' \
		"$T/$name.json" 2>/dev/null)
	[ "$s" = 2 ] && ok "burn_a sampled in the reports of both pids ($a, $b)" ||
		bad "reports with burn_a: '$s' of 2 (pids $a, $b)"
}

# -a --profile offcpu: a thread sleeping 1 ms at a time in sleep_us, its row with its pid and comm.
check_all_offcpu() {
	$B/work sleep 1000 100000 >/dev/null 2>&1 &
	pid=$!
	fp -a --profile offcpu -d 2 --json -o "$T/$name.json"
	kill $pid 2>/dev/null
	wait $pid 2>/dev/null
	[ $rc -eq 0 ] || { failed; return; }
	s=$(last "$T/$name.json" offcpu | jq -r --argjson p $pid \
		'[.functions[] | select(.pid == $p and .name == "sleep_us")][0] | "\(.comm) \(.total.contentions // 0 | floor)"')
	case "$s" in
	"work "[1-9]*) ok "sleep_us of pid $pid (work): ${s#work } waits" ;;
	*) bad "no sleep_us row of pid $pid with comm work: '$s'" ;;
	esac
}

# The last line of FILE that matches PATTERN, waited for up to 120 s while process PID lives.
wait_line() {
	i=0
	until grep -q "$2" "$1" 2>/dev/null || [ $i -ge 600 ] || ! alive "$3"; do
		sleep 0.2
		i=$((i + 1))
	done
	grep "$2" "$1" | tail -1
}

# System-wide: two processes started after fnprof, of a binary named by path; counted exactly.
check_system_wide() {
	fpbg -v -f "$PWD/$B/fleet:fleet_call" --json -o "$T/$name.json" &
	fpid=$!
	wait_line "$T/$name.err" "attached [0-9]* probes" $fpid >/dev/null
	$B/fleet 100 50 2>"$T/$name.t1" >/dev/null
	$B/fleet 150 50 2>"$T/$name.t2" >/dev/null
	kill -INT $fpid
	wait $fpid
	rc=$?
	[ $rc -eq 0 ] || { failed; return; }
	want=$(($(truth "$T/$name.t1" fleet_call calls) + $(truth "$T/$name.t2" fleet_call calls)))
	n=$(fget "$T/$name.json" trace fleet_call .calls)
	[ "$n" = "$want" ] && [ "$want" = 250 ] && ok "fleet_call $n calls in 2 processes" ||
		bad "fleet_call $n calls of $want"
}

# --listen: a scrape of /metrics (busybox wget) after the target's calls sees all of them.
check_listen() {
	fpbg --listen 127.0.0.1:0 -f fleet_call -- $B/fleet 200 50 linger >/dev/null &
	fpid=$!
	url=$(wait_line "$T/$name.err" "serving http://" $fpid | sed -n 's/.*\(http:[^ ]*metrics\).*/\1/p')
	wait_line "$T/$name.err" "truth fleet_call" $fpid >/dev/null
	i=0
	while [ -n "$url" ] && [ $i -lt 50 ] && alive $fpid; do
		timeout 20 wget -q -O "$T/$name.prom" "$url" 2>/dev/null  # (busybox 1.35 wget -T crashes)
		n=$(sed -n 's/^fnprof_calls_total{.*function="fleet_call".*} \([0-9]*\)$/\1/p' "$T/$name.prom")
		[ "$n" = 200 ] && break
		sleep 0.2
		i=$((i + 1))
	done
	kill -TERM $fpid  # goes to the lingering command, whose exit ends fnprof
	wait $fpid
	rc=$?
	[ $rc -eq 0 ] || { failed; return; }
	[ "$n" = 200 ] && ok "scraped fnprof_calls_total 200 from $url" || bad "scraped '$n' calls of 200 from '$url'"
}

# A profile kind's last report, into $T/$name.json; its stdout (the target's truth) into $T/$name.out.
profile() {
	fp --json -o "$T/$name.json" --profile "$@" >"$T/$name.out"
}

check_offcpu() {
	profile offcpu -- $B/offcpu 1
	[ $rc -eq 0 ] || { failed; return; }
	w=$(fget "$T/$name.json" offcpu sleep_1ms '.total.contentions // 0 | floor')
	want=$(truth "$T/$name.out" offcpu calls)
	# Each sleep is a wait, a preemption inside the call one more; the first may come before the probes.
	[ -n "$want" ] && [ "$w" -ge $((want * 9 / 10)) ] && [ "$w" -le $((want * 3 / 2)) ] && ok "sleep_1ms $w waits, $want sleeps" ||
		bad "sleep_1ms $w waits for $want sleeps"
}

check_mutex() {
	profile mutex -- $B/mutex 1
	[ $rc -eq 0 ] || { failed; return; }
	c=$(last "$T/$name.json" mutex | jq '.kind.lock.contentions // 0 | floor')
	# Charged to the releaser; the waiters' view (wait_delay) to the waiter.
	r=$(fget "$T/$name.json" mutex release_lock '.total.contentions // 0 | floor')
	t=$(fget "$T/$name.json" mutex take_lock '.total.wait_delay // 0 | floor')
	[ "$c" -gt 0 ] && [ "$r" -gt 0 ] && [ "$t" -gt 0 ] && ok "$c lock contentions: release_lock $r, take_lock waited" ||
		bad "lock contentions $c, release_lock $r, take_lock wait_delay $t"
}

# At rate 1 every allocation is sampled with weight 1: exact.
check_heap() {
	profile heap --heap-rate 1 -- $B/heap 0 0.5
	[ $rc -eq 0 ] || { failed; return; }
	o=$(fget "$T/$name.json" heap other_paths '"\(.total.alloc_objects) \(.total.alloc_space)"')
	k=$(fget "$T/$name.json" heap keep_live '"\(.total.alloc_objects) \(.total.alloc_space)"')
	[ "$o" = "5 4576" ] && [ "$k" = "32 8388608" ] && ok "other_paths $o, keep_live $k (objects, bytes)" ||
		bad "other_paths '$o' (want '5 4576'), keep_live '$k' (want '32 8388608')"
}

# --slow: every sleeping call of handle kept (or counted as dropped), with its caller's stack and the
# stack it blocked in. The sleeping calls are told by that stack (wait_for_disk), not by their times:
# under single-threaded TCG guest time runs on while a vCPU waits its turn, and a 5 ms sleep read
# 1 ms blocked and 4 ms on the CPU once. One sleep may not block at all (its timer fired while the
# thread waited in the run queue, before it went to sleep): one of 30 may be missing.
check_slow() {
	fp -f handle --slow 1ms --json -o "$T/$name.json" -- $B/slowcall >"$T/$name.out"
	[ $rc -eq 0 ] || { failed; return; }
	want=$(truth "$T/$name.out" slow sleeps)
	r=$(last "$T/$name.json" trace)
	lost=$(echo "$r" | jq '.slow_calls_dropped + .dropped.switches_in_unseen')
	n=$(echo "$r" | jq '[.slow_calls[] | select(.function == "handle" and
		((.blocked_stack // []) | index("wait_for_disk")))] | length')
	kept=$(echo "$r" | jq '.slow_calls | length')
	stacks=$(echo "$r" | jq '[.slow_calls[] | select(.stack[0] == "handle" and (.stack | index("serve_loop")) and
		(.stack | index("main")) and .wall_ns >= 1000000)] | length')
	why="$n sleeping calls kept, $lost dropped or unseen, of $want sleeps; $stacks of $kept with the caller's stack"
	[ -n "$want" ] && [ "$n" -gt 0 ] && [ "$n" -le "$want" ] && [ $((n + lost + 1)) -ge "$want" ] &&
		[ "$stacks" = "$kept" ] && ok "$why" || bad "$why"
}

check_go() {
	fp -f main.work --json -o "$T/$name.json" -- $B/gotarget park 2 20 >/dev/null
	[ $rc -eq 0 ] || { failed; return; }
	n=$(fget "$T/$name.json" trace main.work .calls) want=$(truth "$T/$name.err" park calls)
	[ "$n" = "$want" ] && [ "$want" = 40 ] && ok "main.work $n calls in 2 goroutines" || bad "main.work $n calls of $want"
}

check_list() {
	timeout -s KILL "$LIMIT" "$F" --list -f 'k_*' -- $V/sitekinds 1 >"$T/$name.out" 2>"$T/$name.err"
	rc=$?
	[ $rc -eq 0 ] || { failed; return; }
	n=$(awk 'NR > 1 && $NF ~ /^k_/' "$T/$name.out" | wc -l)
	w=$(grep '^fnprof: warning' "$T/$name.err" | head -1)  # a library missing from the initramfs
	[ "$n" = 10 ] && [ -z "$w" ] && ok "10 functions listed" || bad "$n functions listed of 10; $w"
}

# -e: page faults per call of touch_pages(64), against the target's own count.
check_counters() {
	fp -e page-faults -f touch_pages --json -o "$T/$name.json" -- $B/work pages 64 50
	[ $rc -eq 0 ] || { failed; return; }
	pc=$(fget "$T/$name.json" trace touch_pages '.counters["page-faults"].per_call // -100 | round')
	want=$(truth "$T/$name.err" touch_pages faults_per_call)
	want=${want%.*}
	[ -n "$want" ] && [ $((pc - want)) -le 1 ] && [ $((want - pc)) -le 1 ] && ok "page-faults/call $pc (truth $want)" ||
		bad "page-faults/call $pc, truth '$want'"
}

CHECKS="trace trace_pid trace_lib sites nop_entry exit_ret sample sample_fp all pid_list system_wide listen offcpu
	all_offcpu mutex heap slow go list counters"

run_checks() {
	only=$(arg only | tr , ' ')
	for chk in ${only:-$CHECKS}; do
		name=$chk verdict=FAIL reason="no verdict" rc=0
		rm -f "$T/$name".*  # fnprof writes only new files (-o)
		t0=$(cut -d. -f1 /proc/uptime)
		"check_$chk"
		echo "CHECK $(echo "$chk" | tr _ -) $verdict $reason [$(($(cut -d. -f1 /proc/uptime) - t0)) s]" | tr -d '\r'
		# What went wrong, in the console log the host keeps (not parsed).
		[ $verdict = PASS ] || { tail -n 15 "$T/$name.err"; ps -o pid,stat,comm,args; } 2>/dev/null | sed 's/^/  | /'
		[ $verdict = PASS ] || [ ! -s "$T/$name.json" ] || sed "s/^/  > /" "$T/$name.json"
	done
}

# The logs the next steps need (issue 34): what the verifier says, what calibration measures.
run_diag() {
	for cmd in "-v -f spin_us -- $B/work spin 20 10" "-v -- $B/burn 1" "-v --profile offcpu -- $B/offcpu 0.2" \
		"-v --profile mutex -- $B/mutex 0.2" "-v --profile heap -- $B/heap 0 0.1" "--calibrate" \
		"--list -f k_* -- $V/sitekinds 1" "--version -v"; do
		echo "DIAG-BEGIN fnprof $cmd"
		# shellcheck disable=SC2086
		timeout -s KILL "$LIMIT" "$F" $cmd 2>&1
		echo "DIAG-END exit $?"
	done
}

if [ "$(arg run)" = diag ]; then run_diag; else run_checks; fi

#!/usr/bin/env bash
# make test's legs, each run to its end whatever the others did:
#   testlegs.sh run NAME COMMAND...   runs COMMAND with its output shown and
#                                     kept in bin/test-NAME.log, its exit
#                                     status in bin/test-NAME.rc; exits 0
#   testlegs.sh report NAME...        prints each leg's status and its
#                                     testsummary line, every failed test of
#                                     every leg, then the total in
#                                     testsummary's format ("tests: N passed,
#                                     N failed, N skipped"); exits 1 when a
#                                     leg failed
set -uo pipefail
mkdir -p bin
case "${1:-}" in
run)
	name=$2
	shift 2
	rm -f "bin/test-$name.rc"
	"$@" 2>&1 | tee "bin/test-$name.log"
	echo "${PIPESTATUS[0]}" >"bin/test-$name.rc"
	;;
report)
	shift
	failed=0 pass=0 fail=0 skip=0
	echo
	echo "make test: every leg"
	for name in "$@"; do
		rc=$(cat "bin/test-$name.rc" 2>/dev/null || echo "not run")
		line=$(grep -E '^tests: [0-9]+ passed' "bin/test-$name.log" 2>/dev/null | tail -n 1)
		status=ok
		if [ "$rc" != 0 ]; then
			status="FAIL (exit $rc)"
			failed=1
		fi
		echo "  $name: $status; ${line:-no test summary}"
		if [[ $line =~ ^tests:\ ([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped ]]; then
			pass=$((pass + BASH_REMATCH[1])) fail=$((fail + BASH_REMATCH[2])) skip=$((skip + BASH_REMATCH[3]))
		fi
	done
	if [ "$failed" = 1 ]; then
		echo "failures (the full output of each is above, and in bin/test-LEG.log):"
		for name in "$@"; do
			grep -E '^(--- FAIL|FAIL|# )' "bin/test-$name.log" 2>/dev/null | sed "s/^/  $name: /"
		done
	fi
	echo
	echo "tests: $pass passed, $fail failed, $skip skipped"
	exit "$failed"
	;;
*)
	echo "usage: testlegs.sh run NAME COMMAND... | report NAME..." >&2
	exit 2
	;;
esac

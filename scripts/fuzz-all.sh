#!/usr/bin/env bash
# fuzz-all.sh runs every native Go fuzz target of the module for $FUZZTIME
# each (default 10s), one at a time, starting from the committed corpora under
# each package's testdata/fuzz/. New crashers land in testdata/fuzz/ and fail
# the run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
FUZZTIME=${FUZZTIME:-10s}
GO=${GO:-go}
count=0
# inputs counts the files of a corpus directory (0 when it does not exist:
# a target with no committed corpus yet).
inputs() {
	if [ -d "$1" ]; then
		find "$1" -type f | wc -l
	else
		echo 0
	fi
}
while IFS= read -r file; do
	dir=$(dirname "$file")
	for target in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)\(f \*testing\.F\)' "$file" | sed -E 's/^func (Fuzz[A-Za-z0-9_]+).*/\1/'); do
		echo "fuzz: ./$dir $target ($FUZZTIME)"
		corpus="$dir/testdata/fuzz/$target"
		before=$(inputs "$corpus")
		# go test -fuzz sometimes ends with "context deadline exceeded" when
		# -fuzztime expires while a worker is being set up or stopped: a
		# failure that says so and wrote no new input to the corpus is not a
		# finding, and the target runs again, up to three times in all. Any
		# other failure, or a new input (a real crasher reproduces from the
		# file it wrote), fails the run.
		for attempt in 1 2 3; do
			log=$(mktemp)
			if "$GO" test -run='^$' -fuzz="^${target}\$" -fuzztime="$FUZZTIME" "./$dir" 2>&1 | tee "$log"; then
				rm -f "$log"
				break
			fi
			after=$(inputs "$corpus")
			if [ "$after" != "$before" ]; then
				echo "fuzz: $target found a failing input: $corpus" >&2
				exit 1
			fi
			if ! grep -q 'context deadline exceeded' "$log" || [ "$attempt" = 3 ]; then
				echo "fuzz: $target failed (attempt $attempt)" >&2
				exit 1
			fi
			rm -f "$log"
			echo "fuzz: $target ended with the fuzzing engine's deadline error and no failing input; running it again"
		done
		count=$((count + 1))
	done
done < <(git ls-files '*_test.go' 2>/dev/null | xargs grep -l '^func Fuzz' | sort)
echo "fuzz: $count targets ran for $FUZZTIME each"

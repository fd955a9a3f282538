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
		if ! "$GO" test -run='^$' -fuzz="^${target}\$" -fuzztime="$FUZZTIME" "./$dir"; then
			# A failure that wrote no new input to the corpus is not a finding:
			# go test -fuzz sometimes ends with "context deadline exceeded"
			# when -fuzztime expires while a worker is being set up. Run once
			# more; a real crasher reproduces from the file it wrote.
			after=$(inputs "$corpus")
			if [ "$after" != "$before" ]; then
				echo "fuzz: $target found a failing input: $corpus" >&2
				exit 1
			fi
			echo "fuzz: $target failed without a failing input; running it again"
			"$GO" test -run='^$' -fuzz="^${target}\$" -fuzztime="$FUZZTIME" "./$dir"
		fi
		count=$((count + 1))
	done
done < <(git ls-files '*_test.go' 2>/dev/null | xargs grep -l '^func Fuzz' | sort)
echo "fuzz: $count targets ran for $FUZZTIME each"

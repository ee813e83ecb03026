#!/usr/bin/env bash
# Unit tests of the handlers in main.sh, without zot: ./test_main.sh
# shellcheck source=/dev/null
source "${BASH_SOURCE[0]%test_main.sh}main.sh"

failures=0

# check WHAT EXPECTED ACTUAL
check() {
	if [[ $3 == "$2" ]]; then
		printf 'ok    %s\n' "$1"
	else
		printf 'FAIL  %s\n      expected: %q\n      got:      %q\n' "$1" "$2" "$3"
		failures=$((failures + 1))
	fi
}

check "command without text shows usage" \
	$'display\nUsage: /demo-ext TEXT\n\nSends TEXT to the model.' "$(run_command '')"
check "command sends the text to the model" \
	$'prompt\nAnswer briefly and concretely:\n\nwhat is a monad?' "$(run_command 'what is a monad?')"

# ext_test_tool runs the argument check, then the handler, as zot would.
check "tool echoes the text" hello "$(ext_test_tool 'demo_ext' '{"text": "hello"}')"
check "tool upper-cases" HÉ "$(ext_test_tool 'demo_ext' '{"text": "hé", "uppercase": true}')"
for args in '{}' '{"text": " "}' '{"text": 42}' '{"text": "hi", "uppercase": "yes"}' '["hi"]'; do
	ext_test_tool 'demo_ext' "$args" >/dev/null
	check "tool refuses $args" 1 "$?"
done

if ((failures)); then
	echo "$failures failed"
	exit 1
fi
echo "all passed"
ext_test_zot # then the template's own tests (zot/: arguments, processes, guard), one line each

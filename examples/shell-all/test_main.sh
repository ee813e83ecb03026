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

# ext_test_frames runs a request as zot would and prints the frames it sends,
# one JSON line each; every KEY after the arguments answers one
# ext_panel_key. NEWER_HOST=1 plays a zot newer than 0.1.62.
# frames JQ: jq's filter on the list of those frames, as raw text.
frames() {
	jq -rs "$1" <<<"$frames"
}

# zot's project folder, empty: put there what your pick_items reads.
HOST_CWD=$(mktemp -d)
pick_items "$HOST_CWD"
check "pick_items works in the project folder" 0 "$?"
# From here on the picker lists TEST_ITEMS, when it asks for zot's folder.
# shellcheck disable=SC2034,SC2329 # run_pick calls it and reads ITEMS
pick_items() {
	[[ $1 == "$HOST_CWD" ]] || { printf 'pick_items got %s' "$1" && return 1; }
	ITEMS=("${TEST_ITEMS[@]}")
}
TEST_ITEMS=(one two three four)
NEWER_HOST=1
frames=$(ext_test_frames command 'demo-ext-pick' '' down j enter)
check "/demo-ext-pick answers with a panel, the first item selected" \
	'open_panel pick-1 Pick a prompt|› one' \
	"$(frames '.[0] | "\(.action) \(.open_panel.id) \(.open_panel.title)|\(.open_panel.lines[0])"')"
check "down and j select the next items" '› two|› three' \
	"$(frames '[.[1:3][] | .lines[] | select(startswith("›"))] | join("|")')"
check "enter closes the panel, then sends the item" 'panel_close pick-1|submit three' \
	"$(frames '.[3:] | map("\(.type) \(.panel_id // .text)") | join("|")')"
frames=$(ext_test_frames command 'demo-ext-pick' '' end down up home pageup x esc)
check "end, up, home: the selection stops at the ends" \
	'3 3 2 0 0' "$(frames '[.[1:6][] | .lines | map(startswith("›")) | index(true)] | join(" ")')"
check "other keys do nothing, esc closes" 'panel_render panel_close' \
	"$(frames '.[5:] | map(.type) | join(" ")')"
frames=$(ext_test_frames command 'demo-ext-pick' '' close)
check "closed by zot, the panel sends nothing" 1 "$(frames length)"
TEST_ITEMS=()
frames=$(ext_test_frames command 'demo-ext-pick' '')
check "with nothing to pick, a note and no panel" "notify info $PICK_EMPTY|command_response noop" \
	"$(frames 'map([.type, .level, .message, .action] | map(values) | join(" ")) | join("|")')"
# shellcheck disable=SC2034 # zot_newer_host reads it
NEWER_HOST=
TEST_ITEMS=(one two)
frames=$(ext_test_frames command 'demo-ext-pick' '' enter)
check "an older zot gets the item as a note" \
	'info Chosen: one (this zot cannot submit it: paste it yourself)' \
	"$(frames 'last | "\(.level) \(.message)"')"
pick_items() {
	printf 'not a git repository'
	return 1
}
frames=$(ext_test_frames command 'demo-ext-pick' '')
check "a failure of pick_items is the error zot shows" 'not a git repository' "$(frames '.[0].error')"
rm -r "$HOST_CWD"

NEWER_HOST=1
frames=$(ext_test_frames tool 'demo_ext_confirm' '{"action": "Delete build/"}' down up enter)
check "ask: a note, then a panel with Approve selected" \
	"notify $NAME is waiting for your answer|ask-1 Approve?|Delete build/,,› Approve,  Decline" \
	"$(frames '"\(.[0].type) \(.[0].message)|\(.[1].panel.id) \(.[1].panel.title)|\(.[1].panel.lines | join(","))"')"
check "ask: down and up move the selection" '› Decline|› Approve' \
	"$(frames '[.[2:4][] | .lines[3], .lines[2] | select(startswith("›"))] | join("|")')"
check "ask: enter decides: the panel closed, the notes cleared, the result" \
	'panel_close clear_notes tool_result' "$(frames '.[4:] | map(.type) | join(" ")')"
check "ask: approved, in markdown, with structured content" \
	'false markdown **Approved** by the user: Delete build/ {"approved":true,"action":"Delete build/"}' \
	"$(frames 'last | "\(.is_error) \(.content[0].format) \(.content[0].text) \(.structured_content | tojson)"')"
for keys in n esc q close 'down enter'; do
	# shellcheck disable=SC2086 # one key per word
	frames=$(ext_test_frames tool 'demo_ext_confirm' '{"action": "Push"}' $keys)
	check "ask: $keys declines" \
		'**Declined** by the user: Push. Do not do it; ask the user what to do instead. false' \
		"$(frames 'last | "\(.content[0].text) \(.structured_content.approved)"')"
done
frames=$(ext_test_frames tool 'demo_ext_confirm' '{"action": "Push"}' y)
check "ask: y approves" true "$(frames 'last.structured_content.approved')"
check "ask refuses a blank action" 'invalid arguments: "action" must not be blank' \
	"$(ext_test_tool 'demo_ext_confirm' '{"action": " "}')"
check "ask refuses arguments without an action" 'invalid arguments: "action" is required' \
	"$(ext_test_tool 'demo_ext_confirm' '{}')"
# shellcheck disable=SC2034 # zot_newer_host reads it
NEWER_HOST=
frames=$(ext_test_frames tool 'demo_ext_confirm' '{"action": "Push"}')
check "ask: an older zot gets an error, no panel" \
	'1 true this zot cannot ask the user from a tool (it needs a newer zot): ask in the chat instead' \
	"$(frames '"\(length) \(last.is_error) \(last.content[0].text)"')"

DATA_DIR=$(mktemp -d)
record_event session_start '{"type":"event","event":"session_start"}' 2>/dev/null
check "events are appended to the audit log" \
	'{"type":"event","event":"session_start"}' "$(cat "$DATA_DIR/$NAME-events.jsonl")"
rm -r "$DATA_DIR"

# ext_test_intercept asks the guard about a tool call, with the rules of
# guard-rules.json and guard-policy.json, for the project folder HOST_CWD.
# shellcheck disable=SC2034 # ext_test_intercept reads it
HOST_CWD=/home/user/project
reason=$(ext_test_intercept bash '{"command": "rm -rf ~"}')
check "guard refuses a delete outside the project" yes \
	"$([[ $reason == 'refused by '*' (delete-outside-project): '* ]] && echo yes)"
check "guard allows everyday commands" '' "$(ext_test_intercept bash '{"command": "rm -rf node_modules"}')"
check "guard judges bash only" '' "$(ext_test_intercept read '{"path": "/etc/hosts"}')"
# ext_test_frames shows every frame: the refusal, then a note with it.
check "guard refuses, then notes why" 'event_intercept_response true|notify warn' \
	"$(ext_test_frames intercept bash '{"command": "rm -rf ~"}' |
		jq -rs '"\(.[0].type) \(.[0].block)|\(.[1].type) \(.[1].level)"')"

# ext_test_frames prompt FRAME: the answer to a before_agent_start intercept.
HOST_CWD=$(mktemp -d)
prompt() {
	ext_test_frames prompt "$1" | jq -j '.system_prompt // "(kept)"'
}
check "no CONVENTIONS.md: the prompt is kept" '(kept)' "$(prompt '{"system_prompt": "Be brief."}')"
printf ' \n\t\n' >"$HOST_CWD/CONVENTIONS.md"
check "a blank CONVENTIONS.md: the prompt is kept" '(kept)' "$(prompt '{"system_prompt": "Be brief."}')"
printf 'Indent with tabs.' >"$HOST_CWD/CONVENTIONS.md"
check "CONVENTIONS.md goes under a heading" \
	$'Be brief.\n\n## Project conventions (CONVENTIONS.md)\n\nIndent with tabs.' \
	"$(prompt '{"system_prompt": "Be brief."}')"
check "no prompt yet: the conventions alone" \
	$'\n\n## Project conventions (CONVENTIONS.md)\n\nIndent with tabs.' "$(prompt '{"system_prompt": null}')"
check "the frame's cwd wins over HOST_CWD" '(kept)' "$(prompt '{"system_prompt": "", "cwd": "/nonexistent"}')"
printf 'caf\xe9' >"$HOST_CWD/CONVENTIONS.md"
check "invalid UTF-8 is replaced" $'\n\n## Project conventions (CONVENTIONS.md)\n\ncaf\uFFFD' "$(prompt '{}')"
text=é
for _ in {1..20}; do text+=$text; done # 2 MiB
printf '%s' "$text" >"$HOST_CWD/CONVENTIONS.md"
check "a long file is cut to 1 MiB at a character" '1048575 é' \
	"$(ext_test_frames prompt '{"system_prompt": "Be brief"}' |
		jq -r '.system_prompt | "\(utf8bytelength) \(.[-1:])"')"
text=x
for _ in {1..20}; do text+=$text; done # 1 MiB
check "a prompt of 1 MiB already is kept" '(kept)' "$(prompt "{\"system_prompt\": \"$text\"}" 2>/dev/null)"
rm -r "$HOST_CWD"

if ((failures)); then
	echo "$failures failed"
	exit 1
fi
echo "all passed"
ext_test_zot # then the template's own tests (zot/: arguments, processes, guard), one line each

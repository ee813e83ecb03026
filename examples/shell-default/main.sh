#!/usr/bin/env bash
# demo-ext: A zot extension
#
# A zot extension: zot starts this file and talks to it in JSON lines over
# stdin/stdout. The files at the top of this folder are yours: edit the
# handlers. zot/runtime.sh handles the protocol; copier update brings its
# fixes. README.md says how to test a change.
# shellcheck disable=SC2329 # the handlers are called by zot/runtime.sh
# shellcheck source=/dev/null
source "${BASH_SOURCE[0]%main.sh}zot/runtime.sh"

NAME='demo-ext'
VERSION='0.1.0'
COMMAND_HELP='A zot extension'
TOOL_DESCRIPTION='Echo the given text back, optionally in upper case.'

# Answers `/demo-ext ARGS`; $1 is ARGS without surrounding blanks.
# Print the action on the first line (prompt, insert, display, noop or
# error), then its text. Runs in a subshell of its own; stderr goes to zot's
# log.
run_command() {
	if [[ -z $1 ]]; then
		# "display" shows a note in the chat without calling the model.
		printf 'display\nUsage: /%s TEXT\n\nSends TEXT to the model.' 'demo-ext'
		return
	fi
	# "prompt" submits the text as a new user message.
	printf 'prompt\nAnswer briefly and concretely:\n\n%s' "$1"
}

TOOL_SCHEMA='{
  "type": "object",
  "properties": {
    "text": {"type": "string", "description": "The text to echo back."},
    "uppercase": {"type": "boolean", "description": "Return it in upper case."}
  },
  "required": ["text"]
}'

# Turns the model's arguments into the handler's parameters: a jq expression
# where `.` is the arguments, which fit TOOL_SCHEMA (the runtime answers a
# call whose arguments do not with an error for the model), and every value
# it gives becomes one parameter. invalid("...") refuses the call for what the
# schema cannot say; upcase is upper case beyond ASCII.
TOOL_ARGS='
	if .text | test("\\S") | not then
		invalid("\"text\" must not be blank")
	elif .uppercase then
		.text | upcase
	else
		.text
	end'

# Runs the tool with TOOL_ARGS's values as $1, $2, ... and prints its result
# for the model; a non-zero exit status reports it as an error. Runs in a
# subshell of its own, beside other requests; stderr goes to zot's log.
run_tool() {
	# The demo echoes what TOOL_ARGS prepared. Run programs here instead,
	# e.g. `wc -w <<<"$1"`; HOST_CWD is the user's project folder.
	# What it starts ends with the call (ext_timeout SECONDS CMD: sooner); when
	# zot gives up on the call no result is sent (ext_on_cancel cleans up).
	printf '%s' "$1"
}

# What zot gets: one line per handler.
ext_new "$NAME" "$VERSION"
ext_command 'demo-ext' "$COMMAND_HELP" run_command
ext_tool 'demo_ext' "$TOOL_DESCRIPTION" "$TOOL_SCHEMA" "$TOOL_ARGS" run_tool

# Sourced (as test_main.sh does), this file only defines the handlers.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	ext_run
fi

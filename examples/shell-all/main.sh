#!/usr/bin/env bash
# demo-ext: A zot extension
#
# A zot extension: zot starts this file and talks to it in JSON lines over
# stdin/stdout. This file is yours: edit the handlers below. zot/runtime.sh
# handles the protocol and the guard's rules (yours go in guard-policy.json);
# copier update brings its fixes. README.md says how to test a change.
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
	# When zot gives up on the call, the runtime kills this subshell and what
	# it started and sends no result (ext_on_cancel COMMAND cleans up after).
	printf '%s' "$1"
}

PICK_DESCRIPTION='Pick a prompt from a list and send it to the model'
PICK_TITLE='Pick a prompt'
PICK_FOOTER='↑/↓ move · enter send · esc close'
# What /demo-ext-pick offers, in this order.
PROMPTS=(
	'Explain how this project is organised.'
	'Review the uncommitted changes for bugs.'
	'Write tests for the code I changed last.'
	'List the TODO comments and suggest which to do first.'
)

# Sets PICK_LINES to the panel's lines, with PROMPTS[$1] selected.
pick_lines() {
	local i
	PICK_LINES=()
	for i in "${!PROMPTS[@]}"; do
		if ((i == $1)); then
			PICK_LINES+=("› ${PROMPTS[i]}")
		else
			PICK_LINES+=("  ${PROMPTS[i]}")
		fi
	done
}

# Answers `/demo-ext-pick` with a panel listing PROMPTS, then handles its
# keys until the user sends one to the model or closes it: ext_panel_key
# waits for the next key (the runtime reads on meanwhile). Runs in a subshell
# of its own; the panel closes when it returns.
run_pick() {
	local selected=0 indexes=("${!PROMPTS[@]}")
	local last=${indexes[-1]}
	pick_lines "$selected"
	ext_open_panel pick "$PICK_TITLE" "$PICK_FOOTER" "${PICK_LINES[@]}"
	while ext_panel_key; do
		case $KEY in
		up | k) ((selected == 0)) || selected=$((selected - 1)) ;;
		down | j) ((selected == last)) || selected=$((selected + 1)) ;;
		home | pageup) selected=0 ;;
		end | pagedown) selected=$last ;;
		enter)
			ext_close_panel "$PANEL_ID"
			if zot_newer_host; then
				ext_submit "${PROMPTS[selected]}"
			else
				ext_notify info "Chosen: ${PROMPTS[selected]} (this zot cannot submit it: paste it yourself)"
			fi
			return
			;;
		esc | q)
			ext_close_panel "$PANEL_ID"
			return
			;;
		*) continue ;;
		esac
		pick_lines "$selected"
		ext_render_panel "$PANEL_ID" "$PICK_TITLE" "$PICK_FOOTER" "${PICK_LINES[@]}"
	done
}

ASK_DESCRIPTION='Ask the user to approve an action before you take it. Returns whether they approved.'
ASK_SCHEMA='{
  "type": "object",
  "properties": {
    "action": {"type": "string", "description": "What you want to do, in one sentence."}
  },
  "required": ["action"]
}'
ASK_OUTPUT_SCHEMA='{
  "type": "object",
  "properties": {"approved": {"type": "boolean"}, "action": {"type": "string"}},
  "required": ["approved", "action"]
}'
ASK_ARGS='
	if .action | test("\\S") then
		.action
	else
		invalid("\"action\" must not be blank")
	end'
ASK_TITLE='Approve?'
ASK_FOOTER='↑/↓ move · enter choose · y/n · esc decline'

# Sets ASK_LINES to the panel's lines for action $1, Approve selected when
# $2 is true.
ask_lines() {
	if [[ $2 == true ]]; then
		ASK_LINES=("$1" '' '› Approve' '  Decline')
	else
		ASK_LINES=("$1" '' '  Approve' '› Decline')
	fi
}

# Asks the user to approve $1, the action the model wants to take, in a
# panel and waits for the answer (the runtime reads on meanwhile). The result
# is markdown for the model plus {"approved", "action"} as structured content.
run_ask() {
	local action=$1 approved=true
	if ! zot_newer_host; then
		printf 'this zot cannot ask the user from a tool (it needs a newer zot): ask in the chat instead'
		return 1
	fi
	# Should zot cancel the call, the runtime closes the panel, then this runs.
	ext_on_cancel ext_clear_notes
	ext_notify info "$NAME is waiting for your answer"
	ask_lines "$action" "$approved"
	ext_open_panel ask "$ASK_TITLE" "$ASK_FOOTER" "${ASK_LINES[@]}"
	while :; do
		ext_panel_key || { approved=false && break; } # zot closed the panel
		case $KEY in
		up | k) approved=true ;;
		down | j) approved=false ;;
		enter) break ;;
		y) approved=true && break ;;
		n | esc | q) approved=false && break ;;
		*) continue ;;
		esac
		ask_lines "$action" "$approved"
		ext_render_panel "$PANEL_ID" "$ASK_TITLE" "$ASK_FOOTER" "${ASK_LINES[@]}"
	done
	ext_close_panel "$PANEL_ID" # unless zot closed it
	ext_clear_notes
	if [[ $approved == true ]]; then
		ext_markdown "**Approved** by the user: $action"
	else
		ext_markdown "**Declined** by the user: $action. Do not do it; ask the user what to do instead."
	fi
	ext_json_string "$action"
	ext_structured "{\"approved\": $approved, \"action\": $REPLY}"
}

# Appends one event to the audit log in zot's data folder: $1 is the event's
# name, $2 the frame plus "received_at" as one JSON line. Events arrive one
# at a time, in order; ext_append writes the line at once, so two zot
# sessions can share the log.
record_event() {
	local audit_log="$DATA_DIR/$NAME-events.jsonl"
	if ! ext_append "$audit_log" "$2" 2>/dev/null; then
		log "could not write the audit log: $audit_log"
		return
	fi
	log "event $1"
}

# Decides on each tool call before it runs: $1 is the tool's name, $2 its
# arguments (JSON) and $3 the guard's verdict, "refused by NAME (RULE):
# REASON. Instead, INSTEAD.", empty when the rules of guard-rules.json and
# guard-policy.json allow it (HOST_CWD is the project folder they see).
# Print why to refuse the call; print nothing to let it run.
guard() {
	[[ -n $3 ]] || return 0
	printf '%s' "$3"
	ext_answer # the refusal goes to zot now, the note after it
	ext_notify warn "$3"
}

CONVENTIONS_FILE=CONVENTIONS.md
MAX_PROMPT=1048576 # bytes: zot takes a system prompt of at most 1 MiB

# Adds the project's CONVENTIONS_FILE to the system prompt before each run
# of the agent: $1 is the prompt, $2 the project folder (when empty,
# HOST_CWD). Prints the new prompt; printing nothing keeps the prompt.
add_conventions() {
	local LC_ALL=C # lengths in bytes
	local file=${2:-$HOST_CWD}/$CONVENTIONS_FILE text prompt
	[[ -f $file && -r $file ]] || return 0
	IFS= read -r -N "$MAX_PROMPT" text <"$file"
	[[ $text == *[![:space:]]* ]] || return 0
	prompt="$1"$'\n\n'"## Project conventions ($CONVENTIONS_FILE)"$'\n\n'
	if [[ -n ${prompt:MAX_PROMPT} ]]; then # over MAX_PROMPT bytes
		log "kept the system prompt: it is too long to add $CONVENTIONS_FILE"
		return 0
	fi
	# A longer prompt loses its end: the runtime cuts it to MAX_PROMPT bytes.
	printf '%s%s' "$prompt" "$text"
}

# What zot gets: one line per handler.
ext_new "$NAME" "$VERSION"
ext_command 'demo-ext' "$COMMAND_HELP" run_command
ext_command --panel 'demo-ext-pick' "$PICK_DESCRIPTION" run_pick
ext_tool 'demo_ext' "$TOOL_DESCRIPTION" "$TOOL_SCHEMA" "$TOOL_ARGS" run_tool
ext_tool --interactive --output-schema "$ASK_OUTPUT_SCHEMA" \
	'demo_ext_confirm' "$ASK_DESCRIPTION" "$ASK_SCHEMA" "$ASK_ARGS" run_ask
for event in session_start turn_start tool_call turn_end assistant_message; do
	ext_on "$event" record_event
done
ext_intercept_tool_call guard
ext_intercept_before_agent_start add_conventions

# Sourced (as test_main.sh does), this file only defines the handlers.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	ext_run
fi

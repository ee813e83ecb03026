# The approval tool: demo_ext_confirm shows the model's action in a panel and
# answers with the user's choice. main.sh sources this file after ext_new.
# shellcheck shell=bash disable=SC2329 # the handlers are called by zot/runtime.sh

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

ext_tool --interactive --output-schema "$ASK_OUTPUT_SCHEMA" \
	'demo_ext_confirm' "$ASK_DESCRIPTION" "$ASK_SCHEMA" "$ASK_ARGS" run_ask

# The pick panel: /demo-ext-pick opens a list of prompts, enter sends the
# selected one to the model. main.sh sources this file after ext_new.
# shellcheck shell=bash disable=SC2329 # the handlers are called by zot/runtime.sh

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

ext_command --panel 'demo-ext-pick' "$PICK_DESCRIPTION" run_pick

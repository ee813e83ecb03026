# The pick panel: /demo-ext-pick lists what pick_items sets, enter sends
# the selected one to the model. main.sh sources this file after ext_new.
# shellcheck shell=bash disable=SC2329 # the handlers are called by zot/runtime.sh

PICK_DESCRIPTION='Pick a prompt from a list and send it to the model'
PICK_TITLE='Pick a prompt'
PICK_FOOTER='↑/↓ move · enter send · esc close'
PICK_EMPTY='Nothing to pick.' # the note when pick_items sets no ITEMS

# Sets ITEMS to what /demo-ext-pick lists, each time it opens; $1 is zot's
# project folder. When it cannot, it prints why (the error zot shows) and
# returns non-zero.
pick_items() {
	# The files git sees changed or new, for one:
	# local out; out=$(git -C "$1" ls-files --modified --others --exclude-standard) || return
	# mapfile -t ITEMS < <(printf '%s' "$out")
	ITEMS=(
		'Explain how this project is organised.'
		'Review the uncommitted changes for bugs.'
		'Write tests for the code I changed last.'
		'List the TODO comments and suggest which to do first.'
	)
}

# Sets PICK_LINES to the panel's lines, with ITEMS[$1] selected.
pick_lines() {
	local i
	PICK_LINES=()
	for i in "${!ITEMS[@]}"; do
		if ((i == $1)); then
			PICK_LINES+=("› ${ITEMS[i]}")
		else
			PICK_LINES+=("  ${ITEMS[i]}")
		fi
	done
}

# Answers `/demo-ext-pick` with a panel listing pick_items's ITEMS (with
# none, a note), then handles its keys until the user sends one to the model
# or closes it: ext_panel_key waits for the next key (the runtime reads on
# meanwhile). Runs in a subshell of its own; the panel closes when it returns.
run_pick() {
	local selected=0 indexes
	pick_items "$HOST_CWD" || return
	indexes=("${!ITEMS[@]}")
	if [[ -z ${indexes[*]} ]]; then
		ext_notify info "$PICK_EMPTY"
		printf noop
		return
	fi
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
				ext_submit "${ITEMS[selected]}"
			else
				ext_notify info "Chosen: ${ITEMS[selected]} (this zot cannot submit it: paste it yourself)"
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

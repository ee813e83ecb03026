# The project's conventions in the system prompt: before each agent run,
# CONVENTIONS.md of the project zot works in is added to it. main.sh sources
# this file after ext_new.
# shellcheck shell=bash disable=SC2329 # the handlers are called by zot/runtime.sh

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

ext_intercept_before_agent_start add_conventions

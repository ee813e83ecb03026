# shellcheck shell=bash
# The zot protocol for main.sh, which sources this file. It belongs to the
# template: `copier update` replaces it with the newest version, so keep your
# changes in main.sh. Needs bash 5.1 or newer, jq 1.6 or newer and awk.
#
# How it runs: hello goes out at once, the registrations and ready as soon as
# zot's hello_ack comes. A jq (zot/jq/reader.jq) reads every line zot sends
# (through a sed or awk that wraps each into a JSON string for jq 1.6),
# checks tool arguments and hands this shell records it reads without
# parsing. The guard (zot/guard/guard.jq, with its rules and
# guard-policy.json) is a jq of its own, started after ready. Each request runs
# in a background subshell, so a slow tool holds up nothing; it prints into a
# file of its own and passes the file's name on. An awk and a second jq
# (zot/jq/writer.jq) turn those into frames: the only writer of stdout. A handler
# that opens a panel gets its keys through a FIFO of its own, and one that
# calls zot's tools (ext_call_tool) zot's answers. Every process started
# carries ZOT_EXT_RUN, by which the end finds what is left; a request's
# carry ZOT_EXT_RUN=RUN/N, and are stopped when it ends.

EXT_NAME=extension
EXT_VERSION=0.0.0
# What zot says about itself and the session in hello_ack (empty when it
# did not say), set before the first handler runs:
DATA_DIR=$PWD       # zot's data folder for this extension (hello_ack.data_dir)
HOST_CWD=$PWD       # the user's project folder (hello_ack.cwd)
NEWER_HOST=''       # 1 when hello_ack lists capabilities (zot newer than 0.1.62)
HOST_CALL_TOOL=''   # 1 when hello_ack lists call_tool: zot runs its tools for ext_call_tool
HOST_ZOT_VERSION='' # hello_ack.zot_version
HOST_PROVIDER=''    # hello_ack.provider
HOST_MODEL=''       # hello_ack.model

# zot/jq/, beside this file
_ext_lib=${BASH_SOURCE[0]%runtime.sh}jq
_ext_frames=''   # what follows hello_ack: registrations, subscribe, ready
_ext_hello=''    # the hello frame
_ext_commands=() # names, then their handlers in _ext_command_fns
_ext_command_fns=()
_ext_tools=()
_ext_tool_fns=()
_ext_tool_args='' # jq: the argument checks, as tool_args
_ext_schemas=()
_ext_events=()
declare -A _ext_event_fns=()
_ext_intercept=''
_ext_prompt=''  # the before_agent_start function
_ext_turn=''    # the turn_start function
_ext_message='' # the assistant_message function
_ext_uses_panels=''
declare -A _ext_calls=()  # running tool calls: id (JSON) -> "SUBSHELL N"
declare -A _ext_panels=() # in a handler: the panels it has open
_ext_guard=()             # jq's options for the guard's rules
_ext_guard_in=''          # the guard's jq: its stdin
_ext_verdicts=''          # and its answers
_ext_asked=0              # bash calls asked about so far
_ext_spawned=0            # requests so far: the N of ZOT_EXT_RUN=RUN/N
_ext_run=''               # ZOT_EXT_RUN's value: this process's id and a random one
_ext_cminflt=''           # see _ext_stat_index
_ext_faults=0             # see _ext_started
_ext_call_limit=60        # seconds zot has to answer ext_call_tool
_ext_called=0             # in a handler: its calls of zot's tools so far
# For unit tests: zot's tools' answers (ext_test_zot_tool), by name.
declare -A _ext_test_tools=()

# Logs to stderr, which zot writes to its ext-NAME.log.
log() {
	printf '[%s] %s\n' "$EXT_NAME" "$*" >&2
}

# Sets REPLY to $1 as a JSON string (for the short texts of registrations).
_ext_json() {
	local text=$1 code
	text=${text//\\/\\\\}
	text=${text//\"/\\\"}
	text=${text//$'\n'/\\n}
	text=${text//$'\t'/\\t}
	while [[ $text =~ [[:cntrl:]] ]]; do
		printf -v code '\\u%04x' "'${BASH_REMATCH[0]}"
		text=${text//"${BASH_REMATCH[0]}"/$code}
	done
	REPLY="\"$text\""
}

# ext_new NAME VERSION: the name and version hello announces.
ext_new() {
	EXT_NAME=$1
	EXT_VERSION=$2
}

# ext_command [--panel] NAME DESCRIPTION FUNCTION: /NAME runs FUNCTION;
# --panel says FUNCTION opens a panel (hello then lists "panels").
ext_command() {
	[[ $1 != --panel ]] || { _ext_uses_panels=1 && shift; }
	_ext_commands+=("$1")
	_ext_command_fns+=("$3")
	_ext_json "$1"
	_ext_frames+="{\"type\":\"register_command\",\"name\":$REPLY"
	_ext_json "$2"
	_ext_frames+=",\"description\":$REPLY}"$'\n'
}

# ext_tool [OPTION...] NAME DESCRIPTION SCHEMA ARGS_JQ FUNCTION: a tool the
# model calls. SCHEMA is JSON text; ARGS_JQ a jq expression on the arguments
# whose values become FUNCTION's parameters. The options (newer zot; 0.1.62
# ignores them):
#   --interactive             the tool may open panels and wait for the user
#                             (zot sets it no time limit)
#   --output-schema SCHEMA    the JSON Schema of its ext_structured
#   --namespace NS, --namespace-description TEXT, --namespace-instructions TEXT
#                             the group zot shows the tool in, and what it says
#                             about the group
#   --exposure E              direct, codemode, deferred or model-only
#   --deferred                the model sees the tool once a result names it
#                             (ext_activate_tools)
#   --replay R                never, safe, idempotent or reconcile: whether
#                             `zot continuous` may run a call again
# A wrong option or value is logged and ends the extension (status 1), before
# hello: zot shows the log.
ext_tool() {
	local options='' exposure='' replay='' key
	while [[ $1 == --* ]]; do
		case $1 in
		--interactive) options+=',"interactive":true' _ext_uses_panels=1 ;;
		--deferred) options+=',"deferred":true' ;;
		--output-schema)
			options+=",\"output_schema\":${2//[$'\n\r\t']/ }"
			_ext_schemas+=("$2")
			shift
			;;
		--namespace | --namespace-description | --namespace-instructions)
			key=${1#--}
			_ext_json "$2"
			[[ -z $2 ]] || options+=",\"${key//-/_}\":$REPLY"
			shift
			;;
		--exposure) exposure=$2 && shift ;;
		--replay) replay=$2 && shift ;;
		*)
			log "ext_tool: unknown option $1"
			exit 1
			;;
		esac
		shift
	done
	case $exposure in
	'' | direct | codemode | deferred | model-only) ;;
	*) _ext_bad_option "$1" exposure "$exposure" 'direct, codemode, deferred, model-only' ;;
	esac
	case $replay in
	'' | never | safe | idempotent | reconcile) ;;
	*) _ext_bad_option "$1" replay "$replay" 'never, safe, idempotent, reconcile' ;;
	esac
	[[ -z $exposure ]] || options+=",\"exposure\":\"$exposure\""
	[[ -z $replay ]] || options+=",\"replay\":\"$replay\""
	# The arguments must fit the schema before ARGS_JQ reads them.
	_ext_tool_args+=" elif \$index == ${#_ext_tools[@]} then (fits_schema(${3//[$'\n\r\t']/ }) | $4)"
	_ext_tools+=("$1")
	_ext_tool_fns+=("$5")
	_ext_schemas+=("$3")
	_ext_json "$1"
	_ext_frames+="{\"type\":\"register_tool\",\"name\":$REPLY"
	_ext_json "$2"
	# Line breaks and tabs in JSON text can only be blanks between tokens.
	_ext_frames+=",\"description\":$REPLY,\"schema\":${3//[$'\n\r\t']/ }$options}"$'\n'
}

# Logs that tool $1's option $2 cannot be $3 (it must be one of $4) and ends
# the extension.
_ext_bad_option() {
	_ext_json "$3"
	log "tool $1: $2 $REPLY must be one of $4"
	exit 1
}

# ext_on EVENT FUNCTION: FUNCTION gets each EVENT.
ext_on() {
	_ext_events+=("$1")
	_ext_event_fns[$1]=$2
}

# ext_intercept_tool_call FUNCTION: FUNCTION decides on each tool call. It
# gets the tool's name ($1), its arguments (JSON, $2) and the guard's verdict
# ($3) and prints why to refuse the call, or nothing to let it run, maybe
# with other arguments (ext_modify_args); failing, it refuses the call.
ext_intercept_tool_call() {
	_ext_intercept=$1
}

# ext_modify_args JSON: in the tool_call intercept's function, runs the call
# with the arguments JSON (a JSON object) instead (print nothing then: a
# refused call is not rewritten). Anything but a JSON object is logged and
# not sent: the call runs unchanged (status 0 all the same, so that the
# function does not fail and refuse the call).
ext_modify_args() {
	if [[ ${_ext_handler-} != intercept ]]; then
		log "ext_modify_args: only the tool_call intercept's function rewrites a call"
		return 1
	fi
	if ! _ext_object "$1"; then
		log "ext_modify_args: not sent, the arguments must be a JSON object: ${1:0:80}"
		return 0
	fi
	_ext_block args "$REPLY"
}

# ext_intercept_turn_start FUNCTION: FUNCTION decides on each turn of the
# agent before it starts: it gets the step ($1, 1 for the first) and prints
# why to abort the turn, or nothing to let it run; failing, it aborts it.
ext_intercept_turn_start() {
	_ext_turn=$1
}

# ext_intercept_assistant_message FUNCTION: FUNCTION sees each of the
# model's answers before the user does: it gets the text ($1) and prints
# the text to show instead, or nothing to show it as is; ext_hide_message
# hides it. Failing, it hides it.
ext_intercept_assistant_message() {
	_ext_message=$1
}

# ext_hide_message REASON: in the assistant_message intercept's function,
# hides the answer from the user; REASON says why.
ext_hide_message() {
	if [[ ${_ext_handler-} != message ]]; then
		log "ext_hide_message: only the assistant_message intercept's function hides a message"
		return 1
	fi
	_ext_block hide "$1"
}

# ext_intercept_before_agent_start FUNCTION: FUNCTION may change the system
# prompt before each run of the agent. It gets the prompt ($1), the frame's
# cwd ($2, may be empty) and the frame (JSON, $3) and prints the new prompt
# (zot takes at most 1 MiB: a longer one is cut); printing nothing, or
# failing, keeps the prompt.
ext_intercept_before_agent_start() {
	_ext_prompt=$1
}

# Status 0 when zot is newer than 0.1.62: it takes open_panel, submit and
# clear_notes frames and may send tool_cancel and before_agent_start.
zot_newer_host() {
	[[ -n $NEWER_HOST ]]
}

# ext_json_string TEXT: sets REPLY to TEXT as a JSON string.
ext_json_string() {
	_ext_json "$1"
}

# ext_notify LEVEL MESSAGE: a note in zot's window; LEVEL is info, success,
# warn or error.
ext_notify() {
	local level
	_ext_json "$1"
	level=$REPLY
	_ext_json "$2"
	_ext_send "{\"type\":\"notify\",\"level\":$level,\"message\":$REPLY}"
}

# ext_append FILE TEXT: appends TEXT and a line break to FILE in one
# write(2), so that lines other processes append to FILE (another zot
# session's extension) never land inside it; bash's printf writes a long
# line in 4 KiB pieces.
ext_append() {
	local LC_ALL=C file=${_ext_dir:-${TMPDIR:-/tmp}}/zot-ext-append.$BASHPID status=0
	printf '%s\n' "$2" >"$file" || return
	# dd writes what one read of a regular file gives in one write.
	dd if="$file" bs=$((${#2} + 1)) count=1 2>/dev/null >>"$1" || status=$?
	rm -f "$file"
	return "$status"
}

# Removes this extension's notes.
ext_clear_notes() {
	_ext_send '{"type":"clear_notes"}'
}

# ext_submit TEXT: sends TEXT to the model as the user's prompt (newer hosts).
ext_submit() {
	_ext_newer submit || return
	_ext_json "$1"
	_ext_send "{\"type\":\"submit\",\"text\":$REPLY}"
}

# Status 1, and a log line, on zot 0.1.62, which does not know frame $1.
_ext_newer() {
	zot_newer_host || {
		log "not sent: this zot does not know $1 frames (check zot_newer_host first)"
		return 1
	}
}

# Sets REPLY to a panel's fields after its id: TITLE FOOTER LINE... as JSON.
_ext_panel_fields() {
	local title footer
	_ext_json "$1"
	title=$REPLY
	_ext_json "$2"
	footer=$REPLY
	_ext_list_reply "${@:3}"
	REPLY=",\"title\":$title,\"lines\":$REPLY,\"footer\":$footer"
}

# ext_open_panel PREFIX TITLE FOOTER [LINE...]: opens a panel whose keys
# come to this handler (ext_panel_key) and sets PANEL_ID to its id, PREFIX-N
# (N counts the panels this extension opened). In a command's handler it is
# the command's answer, sent at once; elsewhere a frame of its own (newer
# hosts only). The panel closes when the handler returns.
ext_open_panel() {
	local n=0 panel
	if [[ ! $1 =~ ^[A-Za-z0-9_.-]+$ ]]; then
		log "ext_open_panel: the prefix must be letters, digits, '_', '.' or '-': $1"
		return 1
	fi
	[[ ${_ext_kind-} == command ]] || _ext_newer open_panel || return
	set -C # a number is taken by creating its file
	until ((++n)) && { : >"$_ext_dir/n.$n"; } 2>/dev/null; do :; done
	set +C
	PANEL_ID=$1-$n
	# The main loop passes the panel's keys to the FIFO of the process named
	# in the panel's file.
	if [[ -z ${_ext_keys-} ]]; then
		mkfifo "$_ext_dir/keys.$BASHPID" || return 1
		exec {_ext_keys}<>"$_ext_dir/keys.$BASHPID"
	fi
	printf '%s\n' "$BASHPID" >"$_ext_dir/panel.$PANEL_ID"
	_ext_panels[$PANEL_ID]=1
	_ext_panel_fields "${@:2}"
	panel="{\"id\":\"$PANEL_ID\"$REPLY}"
	if [[ ${_ext_kind-} == command ]]; then
		_ext_send "{\"type\":\"command_response\",\"id\":$_ext_id,\"action\":\"open_panel\",\"open_panel\":$panel}"
		_ext_kind=answered
		exec >&2
	else
		_ext_send "{\"type\":\"open_panel\",\"panel\":$panel}"
	fi
}

# ext_render_panel ID TITLE FOOTER [LINE...]: shows new content in a panel.
ext_render_panel() {
	local id=$1
	_ext_json "$id"
	id=$REPLY
	_ext_panel_fields "${@:2}"
	_ext_send "{\"type\":\"panel_render\",\"panel_id\":$id$REPLY}"
}

# ext_close_panel ID: closes a panel this handler opened.
ext_close_panel() {
	[[ -n ${_ext_panels[$1]-} ]] || return 0
	unset '_ext_panels[$1]'
	: >"$_ext_dir/panel.$1" # forgotten: keys for it are ignored
	_ext_json "$1"
	_ext_send "{\"type\":\"panel_close\",\"panel_id\":$REPLY}"
}

# Waits for the next key in this handler's panels: sets KEY (zot's name of
# the key: up, down, enter, esc, ...; for a character key the character
# itself), KEY_TEXT (zot's text) and KEY_PANEL (the panel's id). Status 1
# when zot closed the panel KEY_PANEL instead, 2 when no panel is open.
# shellcheck disable=SC2034 # KEY_TEXT is the handler's
ext_panel_key() {
	local kind
	if [[ -z ${_ext_kind-} ]]; then # an event handler holds up the read loop
		log "ext_panel_key: keys reach command and tool handlers only"
		return 2
	fi
	while ((${#_ext_panels[@]})); do
		if [[ -n ${_ext_testing-} ]]; then # ext_test_frames's keys
			((${#_ext_test_keys[@]})) || return 2
			kind=key KEY=${_ext_test_keys[0]} KEY_TEXT='' KEY_PANEL=$PANEL_ID
			_ext_test_keys=("${_ext_test_keys[@]:1}")
			[[ $KEY != close ]] || kind=close
			((${#KEY} != 1)) || KEY_TEXT=$KEY
		else
			IFS= read -r -d '' -u "$_ext_keys" kind &&
				IFS= read -r -d '' -u "$_ext_keys" KEY_PANEL &&
				IFS= read -r -d '' -u "$_ext_keys" KEY &&
				IFS= read -r -d '' -u "$_ext_keys" KEY_TEXT || return 2
		fi
		[[ -n ${_ext_panels[$KEY_PANEL]-} ]] || continue # closed meanwhile
		if [[ $kind == close ]]; then
			unset '_ext_panels[$KEY_PANEL]'
			KEY='' KEY_TEXT=''
			return 1
		fi
		return 0
	done
	return 2
}

# ext_answer: sends the handler's answer now, from what it printed so far,
# and goes on; what it prints afterwards goes to the log.
ext_answer() {
	[[ ${_ext_kind-answered} != answered ]] || return 0
	_ext_answer 0
	_ext_kind=answered
	exec >&2
}

# A tool's result blocks after what it prints (a text block when not
# empty): ext_text TEXT, ext_markdown TEXT, ext_image MIME_TYPE BASE64, and
# ext_structured JSON, the result's structured_content.
ext_text() {
	_ext_block text "$1"
}

ext_markdown() {
	_ext_block markdown "$1"
}

ext_image() {
	_ext_block image "$2" "$1"
}

ext_structured() {
	_ext_block structured "$1"
}

# _ext_block KIND CONTENT [MIME_TYPE]: one of this request's result blocks.
# The content goes to a file of its own, as the output does: the writer's awk
# escapes it (bash takes quadratic time to replace many characters).
_ext_block() {
	local n=$((++_ext_blocks))
	printf '%s\n.\n' "$2" >"$_ext_dir/$BASHPID.b$n"
	if ((n == 1)); then
		printf '%s %d %s\n' "$1" "$n" "${3-}" >"$_ext_dir/$BASHPID.rich"
	else
		printf '%s %d %s\n' "$1" "$n" "${3-}" >>"$_ext_dir/$BASHPID.rich"
	fi
}

# ext_on_cancel COMMAND [ARG...]: in a tool's handler, what to run should
# zot cancel the call: the handler and what it started are killed, the
# panels it opened closed, then COMMAND runs.
ext_on_cancel() {
	_ext_hook=1
	printf '%s\0' "$@" >"$_ext_dir/cancel.$BASHPID"
}

# ext_timeout SECONDS COMMAND [ARG...]: runs COMMAND and returns its
# status; when it still runs after SECONDS (a number: 2, 0.5), stops it and
# every process it started and returns 124, as timeout(1) does (125 for a
# wrong SECONDS). COMMAND runs in a process of its own (a function too: what
# it sets is lost) with this handler's stdin and stdout, in a process group
# of its own, and what it starts carries ZOT_EXT_RUN=RUN/N/PID: the stop
# finds them by the group and, on Linux, by that mark (setsid or not).
ext_timeout() {
	local pid timer ended='' status control='' run=${ZOT_EXT_RUN-}
	if (($# < 2)) || [[ ! $1 =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)$ ]]; then
		log "ext_timeout: SECONDS must be a number, then a COMMAND: ext_timeout ${1-} ${2-}"
		return 125
	fi
	sleep "$1" >/dev/null 2>&1 &
	timer=$!
	shift
	[[ $- == *m* ]] || control=1
	set -m # for the job below: its process group
	{
		# A program in place of this subshell, which would log "Terminated".
		if declare -F "$1" >/dev/null; then
			ZOT_EXT_RUN=${run:+$run/$BASHPID} "$@"
		else
			ZOT_EXT_RUN=${run:+$run/$BASHPID} exec "$@"
		fi
	} <&0 &
	pid=$!
	[[ -z $control ]] || set +m
	status=129
	while [[ -z $ended ]] && ((status > 128)); do # a trapped signal interrupts wait
		wait -n -p ended "$pid" "$timer"
		status=$?
	done
	if [[ $ended == "$timer" ]] && kill -0 "$pid" 2>/dev/null; then
		_ext_stop_run "${run:+$run/$pid}" "-$pid"
		wait "$pid" 2>/dev/null
		return 124
	fi
	# (SIGKILL: a fork of this shell that has not become sleep yet would
	# run its traps on SIGTERM)
	kill -KILL "$timer" 2>/dev/null
	wait "$timer" 2>/dev/null
	[[ $ended == "$pid" ]] || wait "$pid"
	return "$status"
}

# ext_background COMMAND [ARG...]: starts the program COMMAND (not a shell
# function) in the background, to outlive the call: it carries the
# extension's ZOT_EXT_RUN instead of the call's and ends with the extension
# (a program to outlive the extension: env -u ZOT_EXT_RUN setsid PROGRAM).
# Its stdin is /dev/null, what it prints goes to the log; REPLY is its
# process id.
ext_background() {
	if declare -F "$1" >/dev/null; then
		log "ext_background: $1 is a shell function: give it a program (bash -c '...' for a few commands)"
		return 2
	fi
	# Started by a process that exits at once (waited for): no child of this
	# handler's, which the end of the call or a tool_cancel would stop.
	read -r REPLY < <(
		if [[ -n $_ext_run ]]; then
			ZOT_EXT_RUN=$_ext_run exec "$@" </dev/null >&2 &
		else
			exec "$@" </dev/null >&2 &
		fi
		printf '%s\n' "$!"
	)
	wait "$!"
}

# ext_activate_tools NAME...: in a tool's handler, the result shows zot's
# model the tools NAME... registered with ext_tool --deferred (newer zot).
ext_activate_tools() {
	if [[ ${_ext_handler-} != tool ]]; then
		log "ext_activate_tools: only a tool's result activates tools"
		return 1
	fi
	_ext_list_reply "$@"
	_ext_block activate "$REPLY"
}

# ext_tool_prompt TOOL ARGS_JSON TEXT: a command's answer, sent at once (as
# ext_open_panel's): zot runs its tool TOOL (read, bash, ...) with the
# arguments ARGS_JSON, a JSON object, then sends TEXT to the model. zot
# 0.1.62 does not know it: there TEXT goes as the prompt alone (the log says
# so). With an empty TOOL or TEXT, or ARGS_JSON not a JSON object, the answer
# is an error, and the status 1.
ext_tool_prompt() {
	local answer args
	if [[ ${_ext_kind-} != command ]]; then
		log "ext_tool_prompt: only a command's handler answers with it, once"
		return 1
	fi
	if [[ -z $1 || -z $3 ]]; then
		answer=',"error":"tool_prompt requires a name and prompt"'
	elif ! _ext_object "$2"; then
		answer=',"error":"tool_prompt args must be a JSON object"'
	elif ! zot_newer_host; then
		log 'zot 0.1.62 cannot run a tool from a command: sent the prompt alone'
		_ext_json "$3"
		answer=",\"action\":\"prompt\",\"prompt\":$REPLY"
	else
		args=$REPLY
		_ext_json "$1"
		answer=",\"action\":\"tool_prompt\",\"tool_name\":$REPLY,\"tool_args\":$args"
		_ext_json "$3"
		answer+=",\"prompt\":$REPLY"
	fi
	_ext_send "{\"type\":\"command_response\",\"id\":$_ext_id$answer}"
	_ext_kind=answered
	exec >&2
	[[ $answer != ',"error"'* ]]
}

# ext_call_tool NAME ARGS_JSON: runs zot's tool NAME (read, bash, ...) on the
# arguments ARGS_JSON, a JSON object, and waits for its result, up to 60 s.
# Sets REPLY to the result as JSON, {"content":[...],"is_error":BOOL} (when
# zot cut a result over 256 KiB, with "truncated":true and a last text block
# that says so), and REPLY_TEXT to its text blocks, a line break between
# two. Status 0 unless the result is an error. Called in a tool's handler,
# it runs inside that tool call (zot's parent_id): a tool_cancel for it
# cancels this call too. Every failure is an error result: zot's refusals
# in its words, and these: on zot 0.1.62, which cannot run its tools for
# extensions, at once (nothing is sent); no answer within 60 s; a call from
# an event handler, which holds up the loop that would pass the answer on.
ext_call_tool() {
	local name=$1 id frame status answer left deadline
	if [[ -z ${_ext_handler-} ]]; then
		_ext_call_failed "cannot call $name from an event handler, which holds up the read loop that passes zot's answers on: call it from a command's or a tool's handler"
		log "ext_call_tool: $REPLY_TEXT"
		return 1
	fi
	if [[ -z $HOST_CALL_TOOL ]]; then
		_ext_call_failed "cannot call $name: this zot is too old to run its tools for extensions (update zot)"
		return 1
	fi
	if [[ -z $name ]] || ! _ext_object "$2"; then
		_ext_call_failed 'call_tool requires a name and JSON object args'
		return 1
	fi
	frame=",\"args\":$REPLY"
	[[ ${_ext_parent:-null} == null ]] || frame+=",\"parent_id\":$_ext_parent"
	_ext_json "$name"
	frame=",\"name\":$REPLY$frame}"
	if [[ -n ${_ext_test_zot-} ]]; then
		_ext_send "{\"type\":\"call_tool\",\"id\":\"call-$((++_ext_called))\"$frame"
		_ext_test_call "$name"
		return
	fi
	_ext_call_id || {
		_ext_call_failed "cannot call $name: the runtime's folder is gone"
		return 1
	}
	id=$REPLY
	_ext_send "{\"type\":\"call_tool\",\"id\":\"$id\"$frame"
	deadline=$((${EPOCHREALTIME/./} + _ext_call_limit * 1000000))
	while left=$((deadline - ${EPOCHREALTIME/./})) && ((left > 0)); do
		printf -v left '%d.%06d' $((left / 1000000)) $((left % 1000000))
		IFS= read -r -d '' -t "$left" -u "$_ext_results" answer || break
		if [[ $answer != "$id" ]]; then # for a call given up
			rm -f "$_ext_dir/$answer.result"
			continue
		fi
		{ IFS= read -r status && IFS= read -r REPLY && IFS= read -r -d '' REPLY_TEXT; } <"$_ext_dir/$id.result"
		rm -f "$_ext_dir/$id" "$_ext_dir/$id.result"
		[[ -z $status ]]
		return
	done
	: >"$_ext_dir/$id" # given up: zot's answer, when it comes, is dropped
	_ext_send "{\"type\":\"call_tool_cancel\",\"id\":\"$id\"}"
	_ext_call_failed "zot did not answer the call of $name within $_ext_call_limit s"
	log "ext_call_tool: $REPLY_TEXT"
	return 1
}

# Sets REPLY to a new id for a call of zot's tools, call-PID-N, and readies
# this process to wait for zot's answer: the main loop passes it on (see
# _ext_call_result) to the process named in the file that has the id's name,
# through that process's FIFO. Status 1 when the folder is gone.
_ext_call_id() {
	local file
	if [[ ${_ext_results_pid-} != "$BASHPID" ]]; then
		file=$_ext_dir/answers.$BASHPID
		[[ -p $file ]] || { rm -f "$file" && mkfifo "$file"; } || return
		exec {_ext_results}<>"$file"
		_ext_results_pid=$BASHPID
	fi
	# An id is taken by creating its file, with the process and the number of
	# its request (a tool_cancel for it cancels the call). The file of a call
	# given up stays, empty, till zot's answer comes: the id is not used again.
	set -C
	until REPLY=call-$BASHPID-$((++_ext_called)) &&
		{ printf '%s %s\n' "$BASHPID" "$_ext_spawned" >"$_ext_dir/$REPLY"; } 2>/dev/null; do
		[[ -e $_ext_dir/$REPLY ]] || break
	done
	set +C
	[[ -s $_ext_dir/$REPLY ]]
}

# Sets REPLY to an error result with the text $1, and REPLY_TEXT to $1.
_ext_call_failed() {
	REPLY_TEXT=$1
	_ext_json "$1"
	REPLY="{\"content\":[{\"type\":\"text\",\"text\":$REPLY}],\"is_error\":true}"
}

# Sets REPLY to JSON text $1 on one line when it is a JSON object (jq reads
# it); status 1 when it is not.
_ext_object() {
	REPLY=$(jq -nc --arg text "$1" '$text | fromjson | objects' 2>/dev/null) && [[ -n $REPLY ]]
}

# jq: main.sh's argument checks, as tool_args ({index, args} in).
# shellcheck disable=SC2016 # $names are jq's
_ext_tool_args_jq() {
	printf 'def tool_args: .index as $index | .args | if false then .%s else error("no such tool") end;\n' \
		"$_ext_tool_args"
}

# For unit tests: runs tool NAME on ARGS (JSON) as zot would and prints its
# output, or prints the refusal of its argument check and returns 1. Frames
# the handler sends are dropped (ext_test_frames shows them). The handler
# runs as in zot, in a run of its own (see _ext_test_quiet).
ext_test_tool() {
	_ext_test_tool_args "$1" "$2" || {
		printf '%s' "$REPLY"
		return 1
	}
	_ext_test_quiet tool "${_ext_tool_fns[_ext_index]}" "${_ext_values[@]}"
}

# For unit tests: what zot's tool NAME answers when a handler calls it
# (ext_call_tool) in ext_test_tool and ext_test_frames with NEWER_HOST=1:
#   ext_test_zot_tool [--error] [--truncated] NAME TEXT   a text result
#   ext_test_zot_tool --json NAME RESULT_JSON   {"text" or "content", "is_error", "truncated"}
# A tool the test gave no answer for answers with an error. With NEWER_HOST
# empty the test's zot is 0.1.62, which runs no tools for extensions.
ext_test_zot_tool() {
	local error=false truncated=false json=''
	while [[ $1 == --* ]]; do
		case $1 in
		--error) error=true ;;
		--truncated) truncated=true ;;
		--json) json=1 ;;
		esac
		shift
	done
	if [[ -n $json ]]; then
		_ext_test_tools[$1]=$2
		return
	fi
	_ext_json "$2"
	_ext_test_tools[$1]="{\"text\":$REPLY,\"is_error\":$error,\"truncated\":$truncated}"
}

# ext_call_tool's answer in unit tests: REPLY and REPLY_TEXT from
# ext_test_zot_tool's answer for tool $1, as zot's would come.
# shellcheck disable=SC2016 # $names are jq's
_ext_test_call() {
	local -a fields
	mapfile -t -d '' fields < <(jq -nj -L "$_ext_lib" --arg name "$1" \
		--arg answer "${_ext_test_tools[$1]-}" 'include "reader"; test_call_result($name; $answer)')
	REPLY=${fields[1]-} REPLY_TEXT=${fields[2]-}
	[[ -z ${fields[0]-} ]]
}

# Sets _ext_index to tool $1's and _ext_values to its parameters for
# arguments $2, or REPLY to the refusal of its argument check (status 1).
_ext_test_tool_args() {
	for _ext_index in "${!_ext_tools[@]}"; do
		[[ ${_ext_tools[_ext_index]} != "$1" ]] || break
	done
	mapfile -t -d '' _ext_values < <(jq -j -L "$_ext_lib" --argjson index "$_ext_index" \
		"include \"zot\"; $(_ext_tool_args_jq) {\$index, args: .} | test_tool_args(tool_args)" <<<"$2")
	if [[ ${_ext_values[0]-} == $'\001'* ]]; then
		REPLY=${_ext_values[0]#$'\001'}
		return 1
	fi
}

# Runs a handler of kind $1 (tool, intercept) in a subshell whose frames go
# nowhere. A tool's calls of zot's tools get ext_test_zot_tool's answers.
# As in zot, the handler's stdin is /dev/null and its processes carry
# ZOT_EXT_RUN=RUN/1, of a run of the subshell's own: when the handler
# returns (or exits), what it left running is stopped, then, as if the
# extension stopped, what it started with ext_background.
_ext_test_quiet() (
	_ext_dir=$(mktemp -d) || exit
	_ext_test_run
	trap '_ext_test_end "$_ext_dir"' EXIT
	exec {_ext_out}>/dev/null </dev/null
	_ext_handler=$1 _ext_parent=null _ext_test_zot=1 HOST_CALL_TOOL=${NEWER_HOST:+1}
	[[ $1 != tool ]] || _ext_parent='"test"'
	"${@:2}"
)

# The end of _ext_test_quiet's handler: what it left running stopped, then
# what it started with ext_background (nothing looked up when it started
# nothing), its folder $1 removed. Not in a child (see _ext_done).
_ext_test_end() {
	[[ $BASHPID == "$_ext_me" ]] || return 0
	if _ext_started; then
		_ext_stop_call
		_ext_stop_run "$_ext_run"
	fi
	rm -rf "$1"
}

# For unit tests: a run of this process's own, request 1 of it, as
# ext_run and _ext_request set them.
_ext_test_run() {
	printf -v _ext_run '%d.%08x%08x' "$BASHPID" "$SRANDOM" "$SRANDOM"
	_ext_spawned=1 _ext_bang=${!-} _ext_me=$BASHPID
	export ZOT_EXT_RUN=$_ext_run/1
	_ext_stat_index
	_ext_faults=$REPLY # not a new process: what it waited for so far
}

# For unit tests: runs the intercept function on a call of tool NAME with
# ARGS (JSON), with the guard's verdict for the project folder HOST_CWD, and
# prints its reason to refuse.
ext_test_intercept() {
	_ext_test_verdict "$1" "$2"
	_ext_test_quiet intercept "$_ext_intercept" "$1" "$2" "$REPLY"
}

# Sets REPLY to the guard's verdict on a call of tool $1 with arguments $2.
_ext_test_verdict() {
	_ext_guard_rules
	REPLY=$(jq -j --arg name "$EXT_NAME" --arg cwd "$HOST_CWD" --arg tool "$1" \
		"${_ext_guard[@]}" "$(_ext_jq_text guard)"'{tool_name: $tool, tool_args: .}
		| refusal($name; guard_data($ARGS.named); $cwd)' <<<"$2")
}

# For unit tests: runs a request as zot would send it and prints every frame
# its handler sends, one JSON line each, its answer (id "test") included:
#   ext_test_frames command NAME TEXT [KEY...]
#   ext_test_frames tool NAME ARGS_JSON [KEY...]
#   ext_test_frames intercept TOOL_NAME ARGS_JSON   (the guard)
#   ext_test_frames prompt FRAME_JSON               (before_agent_start)
#   ext_test_frames turn_start STEP
#   ext_test_frames assistant_message TEXT
# Each KEY answers one ext_panel_key: a key's name (down, enter, ...), a
# character, or close (zot closes the panel). NEWER_HOST says which zot; a
# newer one answers calls of its tools (call_tool frames, ids call-1,
# call-2, ...) as ext_test_zot_tool says. The handler's log lines are
# dropped.
ext_test_frames() {
	local kind=$1 function index dir
	local -a fields=() keys=()
	case $kind in
	command)
		for index in "${!_ext_commands[@]}"; do
			[[ ${_ext_commands[index]} != "$2" ]] || break
		done
		function=${_ext_command_fns[index]} fields=("$3") keys=("${@:4}")
		;;
	tool)
		if ! _ext_test_tool_args "$2" "$3"; then
			_ext_json "$REPLY"
			printf '{"type":"tool_result","id":"test","is_error":true,"content":[{"type":"text","text":%s}]}\n' "$REPLY"
			return
		fi
		function=${_ext_tool_fns[_ext_index]} fields=("${_ext_values[@]}") keys=("${@:4}")
		;;
	intercept)
		_ext_test_verdict "$2" "$3"
		function=$_ext_intercept fields=("$2" "$3" "$REPLY")
		;;
	prompt)
		function=$_ext_prompt
		mapfile -t -d '' fields < <(jq -j '(.system_prompt | strings // ""), (.cwd | strings // ""), tojson
			| split("\u0000") | join("") + "\u0000"' <<<"$2")
		;;
	turn_start) kind=turn function=$_ext_turn fields=("$2") ;;
	assistant_message) kind=message function=$_ext_message fields=("$2") ;;
	esac
	dir=$(mktemp -d) || return
	local _ext_dir=$dir _ext_out _ext_testing=1 _ext_test_keys=("${keys[@]}")
	local _ext_test_zot=1 HOST_CALL_TOOL=${NEWER_HOST:+1} _ext_run _ext_cminflt
	# A run of its own, stopped after the request as the extension's end does.
	printf -v _ext_run '%d.%08x%08x' "$BASHPID" "$SRANDOM" "$SRANDOM"
	_ext_stat_index
	exec {_ext_out}>"$dir/frames"
	_ext_spawn "$kind" '"test"' "$function" "${fields[@]}" 2>/dev/null
	wait "$!"
	_ext_stop_run "$_ext_run"
	exec {_ext_out}>&-
	_ext_writer <"$dir/frames"
	rm -rf "$dir"
}

# For unit tests: the template's own tests, one line each when they pass:
# the argument checks of zot/schema-cases.json, the processes of calls and,
# with the guard, every verdict of zot/guard/guard-cases.json, given by the
# template's rules alone (a rule guard-policy.json switches off fails
# nothing here). Status 1 when one fails.
ext_test_zot() {
	_ext_test_schema_cases && _ext_test_processes && _ext_test_guard_cases_json
}

# The processes of a call, in a run of its own: what the handler left
# running (in the background, setsid'd, a bash subshell, a child's
# background) is stopped as the call ends, a program of ext_background's
# when the run ends; ext_timeout stops a tree. A line for each failure, or
# one line.
_ext_test_processes() (
	local -a problems=() pids
	local out kept status
	# shellcheck disable=SC2016 # the handler's
	out=$(_ext_test_quiet tool eval 'sleep 300 >/dev/null 2>&1 & printf "%s %s" "$!" "$ZOT_EXT_RUN"')
	read -r kept out <<<"$out"
	[[ $out =~ ^[0-9]+\.[0-9a-f]{16}/1$ ]] || problems+=("ext_test_tool runs a handler with ZOT_EXT_RUN=$out")
	_ext_running "$kept"
	((${#_ext_left[@]} == 0)) || problems+=("ext_test_tool left the handler's process running")
	_ext_test_run
	exec </dev/null
	out=$(
		_ext_bang=${!-}
		sleep 300 >/dev/null 2>&1 &
		printf '%s ' "$!"
		# A subshell of bash's, which no mark shows: a loop that would start
		# another sleep once its sleep is stopped.
		(while :; do sleep 300; done) >/dev/null 2>&1 &
		printf '%s ' "$!"
		if type -P setsid >/dev/null; then
			setsid sleep 300 >/dev/null 2>&1 &
			printf '%s ' "$!"
		fi
		# Found by its mark alone: /proc shows it.
		[[ ! -r /proc/self/environ ]] || sh -c 'sleep 300 >/dev/null 2>&1 & printf "%s " "$!"'
		ext_background sleep 300 2>/dev/null
		printf '%s' "$REPLY"
		_ext_stop_call
	)
	read -r -a pids <<<"$out"
	kept=${pids[-1]}
	unset 'pids[-1]'
	_ext_running "${pids[@]}"
	((${#_ext_left[@]} == 0)) || problems+=("a call's processes still run after it ended: ${_ext_left[*]} of ${pids[*]}")
	_ext_running "$kept"
	((${#_ext_left[@]} == 1)) || problems+=("ext_background's program ended with the call")
	if [[ -r /proc/self/environ ]] && ! grep -qzx "ZOT_EXT_RUN=$_ext_run" "/proc/$kept/environ" 2>/dev/null; then
		problems+=("ext_background's program does not carry the run's ZOT_EXT_RUN")
	fi
	_ext_stop_run "$_ext_run"
	_ext_running "$kept"
	if [[ ! -r /proc/self/environ ]]; then
		kill "$kept" 2>/dev/null # without /proc, no run's end finds it
	elif ((${#_ext_left[@]})); then
		problems+=("ext_background's program still runs after the run ended")
	fi
	out=$(ext_timeout 0.2 sh -c 'sleep 300 >/dev/null 2>&1 & printf "%s %s" "$!" "$$"; exec sleep 300 >/dev/null 2>&1')
	status=$?
	read -r -a pids <<<"$out"
	_ext_running "${pids[@]}"
	[[ $status == 124 && ${#_ext_left[@]} == 0 ]] ||
		problems+=("ext_timeout 0.2 returned $status, and left ${_ext_left[*]:-nothing} running")
	ext_timeout 5 sh -c 'exit 3'
	status=$?
	((status == 3)) || problems+=("ext_timeout returned $status for a command's status 3")
	_ext_stop_run "$_ext_run" # what a failure above left
	if ((${#problems[@]})); then
		printf 'FAIL  zot/processes: %s\n' "${problems[@]}"
		return 1
	fi
	printf 'ok    zot/processes: a call stops what it started, ext_timeout and ext_background\n'
)

# The schema checks of zot/schema-cases.json, in one jq run: a line for each
# case that fails, then the number of cases.
# shellcheck disable=SC2016 # $names are jq's
_ext_test_schema_cases() {
	local out n
	out=$(jq -r -L "$_ext_lib" 'include "zot"; .cases | (.[] | . as $c
		| ($c.args | schema_problems($c.schema; "")) as $got | select($got != $c.problems)
		| "FAIL  zot/schema-cases.json: \($c.schema) with \($c.args): \($got), not \($c.problems)"),
		length' "${_ext_lib%jq}schema-cases.json") || out=$'FAIL  zot/schema-cases.json: jq failed\n0'
	n=${out##*$'\n'}
	if [[ $out == *$'\n'* ]]; then
		printf '%s\n' "${out%$'\n'*}"
		return 1
	fi
	printf 'ok    zot/schema-cases.json: the %d cases of the argument checks\n' "$n"
}

# Every verdict of zot/guard/guard-cases.json, when the guard is there.
_ext_test_guard_cases_json() {
	local cases=${_ext_lib%jq}guard/guard-cases.json want got command n=0 failed=0
	[[ -f $cases ]] || return 0
	while IFS= read -r -d '' want && IFS= read -r -d '' got && IFS= read -r -d '' command; do
		n=$((n + 1))
		[[ $got != "$want" ]] || continue
		failed=$((failed + 1))
		printf 'FAIL  zot/guard: %q must be %s, is %s\n' "$command" \
			"${want:+refused ($want)}${want:-allowed}" "${got:+refused ($got)}${got:-allowed}"
	done < <(ext_test_guard_cases "$cases" template)
	if ((n == 0 || failed)); then
		printf 'FAIL  zot/guard: %d of %d cases of guard-cases.json\n' "$failed" "$n"
		return 1
	fi
	printf 'ok    zot/guard: the %d cases of guard-cases.json\n' "$n"
}

# For unit tests: the guard's verdicts on a table such as guard-cases.json
# ({cwd, refused: {COMMAND: RULE}, allowed: [COMMAND]}), in one jq run, with
# every rules file (with $2 = template: guard-rules.json alone). For each
# command: the rule that must refuse it ("" for none), the rule that does
# and the command, each followed by a NUL.
# shellcheck disable=SC2016 # $names are jq's
ext_test_guard_cases() {
	_ext_guard_rules
	[[ ${2-} != template ]] || _ext_guard=("${_ext_guard[@]:0:3}" --arg guard_policy '{}')
	jq -j "${_ext_guard[@]}" "$(_ext_jq_text guard)"'
		guard_data($ARGS.named) as $data
		| .cwd as $cwd
		| (.refused | to_entries[]), (.allowed[] | {key: ., value: ""})
		| [.value, (.key | check($data; $cwd) | .rule // ""), .key][]
		| split("\u0000") | join("") + "\u0000"' "$1"
}

# Sets _ext_guard to jq's options for the guard's rules: guard-rules.json,
# guard-policy.json and the files it includes as text ($guard_rules,
# $guard_policy, $guard_include_N for the Nth of its "include"), null when
# missing or unreadable, their size when over 1 MiB, not read (in each case
# the guard refuses every bash command, naming the file).
_ext_guard_rules() {
	local file text path i=0 folder=${_ext_lib%zot/jq} # the extension's
	_ext_guard=()
	_ext_guard_file guard_rules "${folder}zot/guard/guard-rules.json"
	_ext_guard_file guard_policy "${folder}guard-policy.json"
	file=${folder}guard-policy.json
	# Only a policy that names files in "include" needs jq to list them.
	if [[ ${_ext_guard[${#_ext_guard[@]} - 1]} == "$file" ]]; then
		IFS= read -r -d '' text <"$file" || : # (read to its end)
	fi
	if [[ $text == *'"include"'* ]]; then
		# each path in order, "" for one that is not a path in this folder
		# (jq says what is wrong with it)
		while IFS= read -r -d '' path; do
			[[ -n $path && $path != /* && /$path/ != */../* ]] || path=
			_ext_guard_file "guard_include_$((i++))" "${path:+$folder$path}"
		done < <(jq -j '.include | arrays | .[] | (strings // "") + "\u0000"' "$file" 2>/dev/null)
	fi
}

# Adds jq's option for a rules file to _ext_guard: file $2 as text named $1,
# null when it is missing or unreadable, its size when over 1 MiB (not read).
_ext_guard_file() {
	local size
	if [[ ! -f $2 || ! -r $2 ]]; then
		_ext_guard+=(--argjson "$1" null)
	elif size=$(wc -c <"$2") && ((size > 1048576)); then
		_ext_guard+=(--argjson "$1" "$((size))")
	else
		_ext_guard+=(--rawfile "$1" "$2")
	fi
}

# The text of zot/jq/NAME.jq (zot/guard/guard.jq for guard) for each NAME,
# to begin a program with: jq 1.6 compiles a module it reads with `include`
# about half as fast.
_ext_jq_text() {
	local name file
	for name; do
		file=$_ext_lib/$name.jq
		[[ $name != guard ]] || file=${_ext_lib%jq}guard/guard.jq
		printf '%s\n' "$(<"$file")"
	done
}

# The reader's whole program, main.sh's argument checks included.
# shellcheck disable=SC2016 # $ARGS is jq's
_ext_reader_program() {
	_ext_jq_text zot reader
	_ext_tool_args_jq
	printf 'main(tool_args; $ARGS.named)\n'
}

# The reader on zot's stdin: a bash loop skips zot's lines up to hello_ack,
# then writes the registrations and ready to zot's stdout (file descriptor
# $1) at once, and only then starts the reader, which compiles while zot
# carries on, on hello_ack's line and every line after it. (read takes a
# pipe a byte at a time: nothing after hello_ack's line is taken.)
_ext_read() {
	local line stdout=$1
	exec {_ext_out}>&- # the writer ends when the handlers have
	while IFS= read -r line; do
		if [[ $line == *'"hello_ack"'* ]]; then
			printf '%s' "$_ext_frames" >&"$stdout"
			exec {stdout}>&-
			{ printf '%s\n' "$line" && exec cat; } | _ext_lines
			exit
		fi
		[[ $line != *[![:space:]]* ]] || log "skipped a line before hello_ack: ${line:0:80}"
	done
}

# The reader on its input's lines. jq 1.6 reads a long raw line in 4 KiB
# blocks and breaks a character cut between two: there sed or awk wraps
# each line into a JSON string first.
_ext_lines() {
	case $(jq --version 2>&1) in
	jq-1.[0-6] | jq-1.[0-6][!0-9]*) _ext_wrap | _ext_reader --seq ;;
	*) _ext_reader --raw-input ;;
	esac
}

# zot/jq/reader.jq; $1 is how jq reads the lines.
_ext_reader() {
	local chars=false probe=é
	((${#probe} == 1)) && chars=true # read -N counts characters
	local intercept=false prompt=false turn=false message=false
	[[ -z $_ext_intercept ]] || intercept=true
	[[ -z $_ext_prompt ]] || prompt=true
	[[ -z $_ext_turn ]] || turn=true
	[[ -z $_ext_message ]] || message=true
	exec jq -nj "$1" --unbuffered "$(_ext_reader_program)" \
		--arg name "$EXT_NAME" --argjson chars "$chars" \
		--argjson intercept "$intercept" --argjson prompt "$prompt" \
		--argjson turn "$turn" --argjson message "$message" \
		--argjson commands "$(_ext_list "${_ext_commands[@]}")" \
		--argjson tools "$(_ext_list "${_ext_tools[@]}")" \
		--argjson events "$(_ext_list "${_ext_events[@]}")"
}

# The guard's own jq: compiles guard.jq, reads the rules, answers first with
# the start-up warning ("" when the rules can be used), then each line
# {"n", "cwd", "tool_args"} of a bash call with "N ok VERDICT" (VERDICT ""
# allows the call) or "N failed ERROR"; every answer ends in a NUL.
# shellcheck disable=SC2016 # $names are jq's
_ext_guard_serve() {
	[[ -z $_ext_out ]] || exec {_ext_out}>&-
	_ext_guard_rules
	exec jq -nj --unbuffered --arg name "$EXT_NAME" "${_ext_guard[@]}" "$(_ext_jq_text guard)"'
		def answer: split("\u0000") | join("") + "\u0000";
		($ARGS.named + {intercept: true} | guard_setup) as $guard
		| (guard_warning($name; $guard) | answer),
		(inputs
		| [.n, (try ["ok", ({frame: {tool_name: "bash", tool_args}, cwd} | guard_verdict($name; $guard))]
			catch ["failed", (if type == "string" then . else tojson end)])[]]
		| map(tostring) | join(" ") | answer)'
}

# After ready: the guard's jq started, asked and answered through FIFOs;
# the start-up warning, when the rules cannot be used, logged and shown.
_ext_guard_start() {
	local in=$_ext_dir/guard.in out=$_ext_dir/verdicts
	mkfifo "$in" "$out" || return
	_ext_guard_serve <"$in" | _ext_guard_warn >"$out" &
	exec {_ext_guard_in}>"$in" {_ext_verdicts}<"$out"
	rm -f "$in" "$out"
}

# Passes the guard's verdicts on; its start-up warning goes to zot.
_ext_guard_warn() {
	local warning
	IFS= read -r -d '' warning || exit
	if [[ -n $warning ]]; then
		log "$warning"
		ext_notify warn "$warning"
	fi
	exec {_ext_out}>&-
	exec cat
}

# Sets REPLY to the guard's verdict on bash call $1 (its arguments, JSON) in
# the project folder $2 (JSON): "" allows it. Status 1 when the guard failed
# (REPLY says why). Meanwhile the reader's records wait, as zot does; a
# guard that has not compiled yet is waited for, up to 4 s (zot allows a
# call it has no answer for after 5 s), then the call is refused.
_ext_verdict() {
	local n=$((++_ext_asked)) answer left status deadline=$((${EPOCHREALTIME/./} + 4000000))
	[[ -n $_ext_verdicts ]] || _ext_guard_start
	if [[ -z $_ext_verdicts ]]; then
		REPLY='the guard could not start'
		return 1
	fi
	trap '' PIPE # a guard that has stopped is no reason to stop
	{ printf '{"n":%d,"cwd":%s,"tool_args":%s}\n' "$n" "$2" "$1" >&"$_ext_guard_in"; } 2>/dev/null
	trap - PIPE
	while left=$((deadline - ${EPOCHREALTIME/./})) && ((left > 0)); do
		printf -v left '%d.%06d' $((left / 1000000)) $((left % 1000000))
		IFS= read -r -d '' -t "$left" -u "$_ext_verdicts" answer || {
			status=$?
			((status > 128)) && break # the time is up
			REPLY='the guard has stopped'
			return 1
		}
		[[ ${answer%% *} == "$n" ]] || continue # an answer given too late
		answer=${answer#* }
		REPLY=${answer#* }
		[[ $answer == ok* ]]
		return
	done
	REPLY="refused by $EXT_NAME (too-slow): the guard could not check the command within 4 s."
	REPLY+=" Instead, run it again in a moment, or split it into shorter commands."
}

# A JSON list of the arguments.
_ext_list() {
	_ext_list_reply "$@"
	printf '%s' "$REPLY"
}

# Sets REPLY to a JSON list of the arguments.
_ext_list_reply() {
	local list='' item
	for item; do
		_ext_json "$item"
		list+=${list:+,}$REPLY
	done
	REPLY="[$list]"
}

# awk: escapes a text for a JSON string.
_EXT_ESCAPE='
function escape(s,   i) {
	gsub(/\\/, "&&", s); gsub(/"/, "\\\"", s); gsub(/\t/, "\\t", s); gsub(/\r/, "\\r", s)
	if (s ~ /[\001-\037]/)
		for (i = 1; i < 32; i++) gsub(sprintf("%c", i), sprintf("\\u%04x", i), s)
	if (nul != "" && index(s, nul)) gsub(nul, "\\u0000", s)
	return s
}
BEGIN { nul = sprintf("%c", 0) }
# Prints the text of a file that ends in "\n.\n" (the output of a request, its
# first line read already), escaped; returns its size.
function slurp(file,   line, last, n, size) {
	while ((getline line < file) > 0) {
		if (n++) printf "%s%s", (n > 2 ? "\\n" : ""), escape(last)
		last = line
		size += length(line)
	}
	close(file)
	return size
}
function empty(file) {
	printf "" >file
	close(file)
}'

# awk, reading each line as soon as it arrives (mawk waits for a full buffer
# without -W interactive).
_ext_awk() {
	if [[ $(awk -W version 2>&1 </dev/null) == mawk* ]]; then
		LC_ALL=C exec awk -W interactive "$@"
	fi
	LC_ALL=C exec awk "$@"
}

# zot's lines, each as a JSON string after an RS (jq --seq skips to the next
# RS should one be broken). GNU sed reads a pipe in blocks and, under stdbuf,
# writes each line at once; awk is the fallback (mawk -W interactive reads a
# byte at a time: seconds for a line of megabytes).
# shellcheck disable=SC2016 # $0 is awk's
_ext_wrap() {
	if type -P stdbuf >/dev/null && sed --version >/dev/null 2>&1; then
		LC_ALL=C exec stdbuf -oL sed "$(_ext_wrap_sed)"
	fi
	local wrap="$_EXT_ESCAPE"'{ printf "%c\"%s\"\n", 30, escape($0); fflush() }'
	# mawk -W interactive ends a line at a NUL and takes the next line as the
	# rest of it: NUL becomes \001 first (such a line is no JSON either way).
	if [[ $(awk -W version 2>&1 </dev/null) == mawk* ]] && type -P stdbuf >/dev/null; then
		stdbuf -o0 tr '\000' '\001' | _ext_awk "$wrap"
	else
		_ext_awk "$wrap"
	fi
}

# The sed program of _ext_wrap: \, ", tab, CR and the other control
# characters escaped as JSON has them, the line quoted, an RS before it.
_ext_wrap_sed() {
	local byte
	printf '%s\n' 's/\\/\\\\/g' 's/"/\\"/g' 's/\t/\\t/g' 's/\r/\\r/g'
	for ((byte = 0; byte < 32; byte++)); do
		((byte == 9 || byte == 10 || byte == 13)) ||
			printf 's/\\x%02x/\\\\u%04x/g\n' "$byte" "$byte"
	done
	printf '%s\n' 's/^/\x1e"/' 's/$/"/'
}

# Answers in, frames out: "=FRAME" lines pass on, "KIND STATUS FILE" lines
# become [KIND, ID, STATUS, OUTPUT] for zot/jq/writer.jq (for KIND rich, or
# one that ends in "+", with the blocks FILE.rich lists as a fifth), "!ID"
# lines ["cancelled", ID]. FILE holds the id (JSON) on its first line, then
# the output and "\n.\n" (the line "." keeps a last newline).
_ext_writer() {
	_ext_awk "$_EXT_ESCAPE"'
		/^=/ { printf "%c%s\n", 30, substr($0, 2); fflush(); next }
		/^!/ { printf "%c[\"cancelled\",%s]\n", 30, substr($0, 2); fflush(); next }
		NF >= 3 {
			file = substr($0, length($1) + length($2) + 3)
			if ((getline id < file) <= 0) id = "null"
			printf "%c[\"%s\",%s,%d,\"", 30, $1, id, $2
			# The next request of this process id overwrites a small file; a
			# frame file is never used again.
			if (slurp(file) > 65536 || $1 == "frame") empty(file)
			printf "\""
			if ($1 == "rich" || $1 ~ /\+$/) {
				# The result blocks: [KIND, CONTENT], an image with its MIME type.
				printf ",["
				n = 0
				while ((getline line < (file ".rich")) > 0) {
					split(line, field, " ")
					block = file ".b" field[2]
					printf "%s[\"%s\",\"", (n++ ? "," : ""), field[1]
					if (field[1] != "image")
						slurp(block)
					else
						while ((getline part < block) > 0) {
							gsub(/[^A-Za-z0-9+\/=]/, "", part)
							printf "%s", part
						}
					close(block)
					empty(block)
					printf "\",\"%s\"]", escape(substr(line, length(field[1]) + length(field[2]) + 3))
				}
				close(file ".rich")
				printf "]"
			}
			printf "]\n"
			fflush()
		}' | exec jq -nj --seq --unbuffered -L "$_ext_lib" 'include "writer"; main($ARGS.named)' \
		--arg name "$EXT_NAME"
}

# Passes a frame (JSON text) to the writer: short lines go through the pipe
# in one write, which no other write can split; longer ones through a file
# of their own, in order all the same.
_ext_send() {
	local LC_ALL=C
	if ((${#1} < 500)); then
		printf '=%s\n' "$1" >&"$_ext_out"
	else
		local file=$_ext_dir/$BASHPID.$((++_ext_sent))
		printf 'null\n%s\n.\n' "$1" >"$file"
		printf 'frame 0 %s\n' "$file" >&"$_ext_out"
	fi
}

# Runs FUNCTION ARGS... in the background for request ID; KIND says how the
# writer turns its exit status and output into the answer.
_ext_spawn() {
	((++_ext_spawned))
	_ext_request "$@" &
	# bash keeps finished jobs until it reports them: now and then, it does.
	((_ext_spawned % 64)) || jobs -n >/dev/null
}

# A request's subshell: FUNCTION's output goes to a file of its own. What it
# starts carries ZOT_EXT_RUN=RUN/N, by which its end and a tool_cancel find
# what is left.
_ext_request() {
	# Globals: a failed expansion in the handler unwinds the locals.
	_ext_kind=$1 _ext_id=$2 _ext_sent=0 _ext_blocks=0 _ext_hook='' _ext_keys='' _ext_bang=${!-}
	_ext_me=$BASHPID
	# _ext_kind becomes "answered" once the answer is out; _ext_handler stays.
	_ext_handler=$1 _ext_parent=null _ext_text=''
	[[ $1 != tool ]] || _ext_parent=$2 # the tool call its calls of zot's tools run in
	[[ $1 != message ]] || _ext_text=$4
	_ext_panels=()
	[[ -z $_ext_run ]] || export ZOT_EXT_RUN=$_ext_run/$_ext_spawned
	[[ -z $_ext_verdicts ]] || exec {_ext_guard_in}>&- {_ext_verdicts}<&-
	trap '_ext_done "$?"' EXIT
	exec >"$_ext_dir/$BASHPID" </dev/null
	printf '%s\n' "$2"
	"${@:3}"
}

# In a request's subshell, at its exit: the panels it left open closed, the
# processes it left running stopped, then its answer unless it gave it
# (ext_answer). Not in a child that has the trap still: one killed between
# its fork and its exec (cmd & kill $!) runs it on the way out.
_ext_done() {
	local id
	[[ $BASHPID == "$_ext_me" ]] || return 0
	for id in "${!_ext_panels[@]}"; do
		ext_close_panel "$id"
	done
	[[ -z $_ext_hook ]] || : >"$_ext_dir/cancel.$BASHPID"
	[[ ${_ext_results_pid-} != "$BASHPID" ]] || rm -f "$_ext_dir/answers.$BASHPID"
	if (($1 != 0)); then
		log "the $_ext_handler handler exited with status $1"
	fi
	_ext_stop_call
	[[ $_ext_kind == answered ]] || _ext_answer "$1"
}

# In a request's subshell as it ends: what its handler started and left
# running is stopped (see _ext_stop_run), the processes below this subshell
# and, by their ZOT_EXT_RUN=RUN/N, those that left it (setsid, or the
# background of a child that exited). Nothing to do, and nothing looked up,
# when it started no process (see _ext_started).
_ext_stop_call() {
	local -a _ext_tree
	_ext_started || return 0
	_ext_descendants "$BASHPID"
	_ext_stop_run "${_ext_run:+$_ext_run/$_ext_spawned}" "${_ext_tree[@]}"
}

# Status 0 when this request's process has started a process: a job in the
# background ($! not as it came) or, on Linux, one it waited for (their
# page faults, cminflt, are no longer _ext_faults, 0 for a new process);
# elsewhere such a process, gone, left nothing that can be found.
_ext_started() {
	local -a stat
	[[ ${!-} == "$_ext_bang" ]] || return 0
	[[ -n $_ext_cminflt ]] || return 1
	read -r -a stat <"/proc/$BASHPID/stat"
	[[ ${stat[_ext_cminflt]} != "$_ext_faults" ]]
}

# Sets _ext_cminflt to the index of cminflt in this process's /proc/PID/stat
# read into an array, the 9th field after the name (which may hold blanks
# and ends in ")"; no field after it does), and REPLY to its value: empty
# without /proc. Forks have the same name.
_ext_stat_index() {
	local -a stat
	local i
	_ext_cminflt='' REPLY=''
	{ read -r -a stat <"/proc/$BASHPID/stat"; } 2>/dev/null || return 0
	for i in "${!stat[@]}"; do
		[[ ${stat[i]} != *')' ]] || _ext_cminflt=$((i + 9))
	done
	REPLY=${stat[_ext_cminflt]}
}

# Passes the request's output file to the writer.
_ext_answer() {
	local output=''
	# The file holds the request's id on its first line, then the output: an
	# intercept's reason, or an assistant_message's new text.
	case $_ext_kind in
	intercept | turn | message)
		(($1 != 0)) || { read -r _ && IFS= read -r -d '' output; } <"$_ext_dir/$BASHPID"
		;;
	esac
	printf '\n.\n'
	if [[ -n $output ]]; then
		case $_ext_kind in
		intercept) log "blocked a tool call" ;;
		turn) log "aborted a turn" ;;
		esac
	fi
	# An assistant_message function that printed the text as it was changes nothing.
	if [[ $_ext_kind == message && $1 == 0 && $output == "$_ext_text" ]] && ((_ext_blocks == 0)); then
		_ext_kind=shown
	fi
	if ((_ext_blocks)); then
		case $_ext_kind in
		intercept | message) _ext_kind+=+ ;; # with its blocks
		*) _ext_kind=rich ;;
		esac
	fi
	printf '%s %d %s\n' "$_ext_kind" "$1" "$_ext_dir/$BASHPID" >&"$_ext_out"
}

# On tool_cancel: the call's handler and what it started killed (zot drops
# a late result; the writer does not even send one), its panels closed,
# then its ext_on_cancel command run.
_ext_cancel() {
	local id=$1 call=${_ext_calls[$1]-} pid first='' file owner n
	unset '_ext_calls[$id]'
	pid=${call% *}
	# The subshell writes the id first: a just started one may not have yet.
	[[ -z $pid ]] || read -r first 2>/dev/null <"$_ext_dir/$pid"
	if [[ -z $pid || -n $first && $first != "$id" ]] || ! kill -0 "$pid" 2>/dev/null; then
		log "ignored tool_cancel for $id: no such call runs"
		return
	fi
	printf '!%s\n' "$id" >&"$_ext_out"
	_ext_kill_trees "$pid"
	# What it started and left behind (sh -c 'sleep 9 &'), in the background:
	# the loop reads on.
	_ext_stop_run "$_ext_run/${call#* }" &
	# Its calls of zot's tools, by the number of the request that made them.
	for file in "$_ext_dir"/call-*; do
		[[ $file != *.result && -s $file ]] && read -r _ n <"$file" && [[ $n == "${call#* }" ]] || continue
		: >"$file"
		_ext_send "{\"type\":\"call_tool_cancel\",\"id\":\"${file#"$_ext_dir"/}\"}"
	done
	for file in "$_ext_dir"/panel.*; do
		[[ -s $file ]] && read -r owner <"$file" && [[ $owner == "$pid" ]] || continue
		: >"$file"
		_ext_json "${file#"$_ext_dir"/panel.}"
		_ext_send "{\"type\":\"panel_close\",\"panel_id\":$REPLY}"
	done
	file=$_ext_dir/cancel.$pid
	if [[ -s $file ]]; then
		local -a hook
		mapfile -t -d '' hook <"$file"
		: >"$file"
		_ext_spawn hook null "${hook[@]}"
	fi
}

# panel_key and panel_close from zot: passed to the FIFO of the handler that
# opened the panel (see ext_panel_key), never waiting for it.
_ext_panel_event() {
	local kind=$1 id=$2 owner='' file=$_ext_dir/panel.$2
	[[ $id =~ ^[A-Za-z0-9_.-]+$ && -s $file ]] && read -r owner <"$file"
	if [[ -z $owner || ! -p $_ext_dir/keys.$owner ]]; then
		log "ignored panel_$kind for a panel that is not open: $id"
		return
	fi
	[[ $kind == key ]] || : >"$file"
	printf '%s\0' "$kind" "$id" "$3" "$4" 1<>"$_ext_dir/keys.$owner"
}

# zot's answer to a call of one of its tools: $1 its id, $2 "1" for an
# error, $3 the result (JSON), $4 its text. Passed to the process that waits
# for it (ext_call_tool) through a file and that process's FIFO; dropped
# quietly for a call given up.
_ext_call_result() {
	local owner='' file=$_ext_dir/$1
	if [[ $1 =~ ^call-[0-9]+-[0-9]+$ && -f $file ]]; then
		read -r owner _ <"$file"
		if [[ -z $owner ]]; then # given up, or cancelled: this was zot's last word
			rm -f "$file"
			return
		fi
		if [[ -p $_ext_dir/answers.$owner ]]; then
			printf '%s\n%s\n%s' "$2" "$3" "$4" >"$file.result"
			printf '%s\0' "$1" 1<>"$_ext_dir/answers.$owner"
			return
		fi
	fi
	_ext_json "$1"
	log "ignored a tool_result for $REPLY: no call of zot's tools waits for it"
}

# Forgets the tool calls that ended.
_ext_prune_calls() {
	local id
	for id in "${!_ext_calls[@]}"; do
		kill -0 "${_ext_calls[$id]% *}" 2>/dev/null || unset '_ext_calls[$id]'
	done
}

# Stops every request still running, with what each started. Process ids,
# not a process group: zot may not give us one.
_ext_stop_requests() {
	local -a requests=()
	local pid
	for pid in $(jobs -p); do
		[[ $pid == "$_EXT_WRITER_PID" ]] || requests+=("$pid")
	done
	((${#requests[@]})) || return 0
	_ext_kill_trees "${requests[@]}"
}

# Kills processes this shell started and everything they started: a
# snapshot of the process tree, SIGSTOP (no more forks), a second look,
# SIGKILL. A process that is no child of this shell (any more) is left alone.
_ext_kill_trees() {
	local -a requests=() tree
	local -A parent
	local pid ppid
	for _ in 1 2; do
		parent=()
		while read -r pid ppid; do
			parent[$pid]=$ppid
		done < <(ps -A -o pid= -o ppid=)
		if ((${#requests[@]} == 0)); then
			for pid; do
				[[ ${parent[$pid]-} != "$$" ]] || requests+=("$pid")
			done
			((${#requests[@]})) || return 0
		fi
		tree=("${requests[@]}")
		for pid in "${!parent[@]}"; do
			ppid=${parent[$pid]}
			# Walk up: a process below a request belongs to the tree.
			while [[ -n $ppid && $ppid != 1 && $ppid != "$$" ]]; do
				if [[ " ${requests[*]} " == *" $ppid "* ]]; then
					tree+=("$pid")
					break
				fi
				ppid=${parent[$ppid]-}
			done
		done
		kill -STOP "${tree[@]}" 2>/dev/null
	done
	kill -KILL "${tree[@]}" 2>/dev/null
	wait "${requests[@]}" 2>/dev/null
}

# Stops the processes that carry ZOT_EXT_RUN=$1 or $1/... (see
# _ext_carriers; none for an empty $1) and the processes $2... (a process
# id, or minus the id of a process group this runtime made), by process id:
# SIGTERM, up to 500 ms for them to end, then SIGKILL for those still there.
_ext_stop_run() {
	local -a _ext_pids _ext_left=("${@:2}")
	local try
	_ext_carriers "$1" || ((${#_ext_left[@]})) || return 0
	kill -TERM -- "${_ext_pids[@]}" "${_ext_left[@]}" 2>/dev/null
	for ((try = 0; try < 25; try++)); do
		sleep 0.02
		_ext_running "${_ext_left[@]}"
		_ext_carriers "$1" || ((${#_ext_left[@]})) || return 0
	done
	kill -KILL -- "${_ext_pids[@]}" "${_ext_left[@]}" 2>/dev/null
}

# Sets _ext_left to those of the processes (or groups, -ID) $@ that still
# run; a zombie, which waits for its parent to read its status, does not.
# With /proc a group runs while its first process does (the others carry
# the mark _ext_carriers looks for; a zombie of theirs may wait for init).
_ext_running() {
	local pid stat
	_ext_left=()
	for pid; do
		if [[ -r /proc/self/stat ]]; then
			stat=''
			{ read -r stat <"/proc/${pid#-}/stat"; } 2>/dev/null
			[[ -n $stat && ${stat##*) } != [ZX]* ]] || continue
		else
			kill -0 -- "$pid" 2>/dev/null || continue
		fi
		_ext_left+=("$pid")
	done
}

# Sets _ext_pids to the processes that carry ZOT_EXT_RUN=$1 or $1/...: on
# Linux, from their environment (a process that exited reads empty there);
# elsewhere, with no /proc, for a whole run (no "/" in $1) every process
# below this one. Status 1 when there are none.
_ext_carriers() {
	local file pid
	local -a _ext_tree
	_ext_pids=()
	if [[ -z $1 ]]; then
		return 1
	elif [[ -r /proc/self/environ ]]; then
		while IFS= read -r file; do
			pid=${file#/proc/}
			pid=${pid%/environ}
			[[ $pid == "$$" || $pid == "$BASHPID" ]] || _ext_pids+=("$pid")
		done < <(
			unset ZOT_EXT_RUN # or grep would find itself
			exec grep -lzxE "ZOT_EXT_RUN=${1//./\\.}(/.*)?" /proc/[0-9]*/environ 2>/dev/null
		)
	elif [[ $1 != */* ]]; then
		_ext_descendants "$BASHPID"
		_ext_pids=("${_ext_tree[@]}")
	fi
	((${#_ext_pids[@]}))
}

# Sets _ext_tree to the processes below process $1: from the kernel's lists
# of each process's children where /proc has them (no process started),
# else from ps.
_ext_descendants() {
	local -a queue=("$1") children
	local -A parent
	local pid ppid file
	_ext_tree=()
	if [[ -r /proc/$1/task/$1/children ]]; then
		while ((${#queue[@]})); do
			pid=${queue[-1]}
			unset 'queue[-1]'
			for file in /proc/"$pid"/task/*/children; do
				children=()
				{ read -r -a children <"$file"; } 2>/dev/null
				_ext_tree+=("${children[@]}")
				queue+=("${children[@]}")
			done
		done
		return
	fi
	while read -r pid ppid; do
		parent[$pid]=$ppid
	done < <(ps -A -o pid= -o ppid=)
	unset 'parent[$!]' # ps itself
	for pid in "${!parent[@]}"; do
		ppid=${parent[$pid]}
		while [[ -n $ppid && $ppid != 1 && $ppid != "$1" ]]; do
			ppid=${parent[$ppid]-}
		done
		[[ $ppid != "$1" ]] || _ext_tree+=("$pid")
	done
}

# Removes the folders of extensions that were killed (SIGKILL leaves no time
# to clean up): zot-ext.PID.* where no process PID runs.
_ext_sweep() {
	local dir pid
	for dir in "${TMPDIR:-/tmp}"/zot-ext.*.*; do
		pid=${dir##*/zot-ext.}
		pid=${pid%%.*}
		if [[ -d $dir && $pid =~ ^[0-9]+$ ]] && ! kill -0 "$pid" 2>/dev/null; then
			rm -rf "$dir"
		fi
	done
}

# Ends the extension: requests stopped, the writer's last frames out.
_ext_exit() {
	trap - TERM
	_ext_stop_requests
	if [[ -n ${_EXT_WRITER_PID-} ]]; then
		exec {_ext_out}>&-
		wait "$_EXT_WRITER_PID"
	fi
	# Then whatever a handler started that still runs (the reader too).
	_ext_stop_run "$_ext_run"
	rm -rf "$_ext_dir"
	exit 0
}

# With ZOT_EXT_CHECK set, ext_run compiles the jq programs and checks each
# tool's schema instead (./build does).
_ext_check() {
	local schema
	for schema in "${_ext_schemas[@]}"; do # input and output schemas
		jq -e 'type == "object"' <<<"$schema" >/dev/null 2>&1 || {
			log "a tool's schema is not a JSON object: $schema"
			return 1
		}
	done
	_ext_reader --seq </dev/null >/dev/null && _ext_writer </dev/null >/dev/null || return
	[[ -z $_ext_intercept ]] || _ext_guard_serve </dev/null >/dev/null
}

# Runs the extension: hello, the reader and the writer, the registrations and
# ready as soon as zot answers, then one record after another; at the end,
# whatever it started is stopped.
ext_run() {
	if [[ -n ${ZOT_EXT_CHECK-} ]]; then
		_ext_check
		exit
	fi
	local capabilities=() intercepts=() jq
	# Before hello: without jq nothing would work, and zot would only see a
	# crash after ready. (A folder named jq on PATH, such as ./jq with an
	# empty PATH entry, is not jq.)
	if ! jq=$(type -P jq) || [[ -d $jq ]]; then
		printf '%s: jq not found on the PATH zot gives it: install jq 1.6 or newer\n' "$EXT_NAME" >&2
		printf '  (https://jqlang.github.io/jq/download/; PATH is %s)\n' "$PATH" >&2
		exit 1
	fi
	((${#_ext_commands[@]} == 0)) || capabilities+=(commands)
	((${#_ext_tools[@]} == 0)) || capabilities+=(tools)
	[[ -z $_ext_intercept ]] || intercepts+=(tool_call)
	[[ -z $_ext_prompt ]] || intercepts+=(before_agent_start)
	[[ -z $_ext_turn ]] || intercepts+=(turn_start)
	[[ -z $_ext_message ]] || intercepts+=(assistant_message)
	((${#_ext_events[@]} + ${#intercepts[@]} == 0)) || capabilities+=(events)
	[[ -z $_ext_uses_panels ]] || capabilities+=(panels)
	((${#_ext_tools[@]} == 0)) || capabilities+=(tool_cancel)
	capabilities+=(call_tool) # the opt-in zot needs before it runs its tools for ext_call_tool
	_ext_json "$EXT_NAME"
	_ext_hello="{\"type\":\"hello\",\"name\":$REPLY"
	_ext_json "$EXT_VERSION"
	_ext_hello+=",\"version\":$REPLY"
	_ext_list_reply "${capabilities[@]}"
	_ext_hello+=",\"capabilities\":$REPLY}"
	if ((${#_ext_events[@]} + ${#intercepts[@]})); then
		_ext_list_reply "${_ext_events[@]}"
		_ext_frames+="{\"type\":\"subscribe\",\"events\":$REPLY"
		_ext_list_reply "${intercepts[@]}"
		_ext_frames+=",\"intercept\":$REPLY}"$'\n'
	fi
	_ext_frames+='{"type":"ready"}'$'\n'

	# Every process a handler starts inherits ZOT_EXT_RUN: at the end, those
	# still running are found by it and stopped (_ext_stop_run).
	printf -v _ext_run '%d.%08x%08x' "$$" "$SRANDOM" "$SRANDOM"
	export ZOT_EXT_RUN=$_ext_run
	_ext_dir=$(mktemp -d "${TMPDIR:-/tmp}/zot-ext.$$.XXXXXX") || exit 1
	trap _ext_exit TERM
	# hello once the loop that waits for hello_ack runs: the registrations
	# and ready go out as soon as zot answers, before the reader starts
	# (_ext_read); the writer compiles meanwhile.
	local records stdout fd
	exec {stdout}>&1
	coproc _EXT_WRITER { _ext_writer >&"$stdout"; }
	# Subshells do not inherit a coprocess's descriptors: requests get a copy.
	fd=${_EXT_WRITER[1]}
	exec {_ext_out}>&"$fd" {fd}>&-
	fd=${_EXT_WRITER[0]}
	exec {fd}<&-
	exec {records}< <(_ext_read "$stdout")
	printf '%s\n' "$_ext_hello"
	exec </dev/null {stdout}>&- >&2
	_ext_stat_index
	_ext_loop "$records"
	_ext_exit
}

# Once the reader has read hello_ack (the registrations and ready have gone
# out): the guard's jq starts compiling, and old folders are swept.
_ext_ready() {
	[[ -z $_ext_intercept ]] || _ext_guard_start
	_ext_sweep & # in the background: it never delays zot's first request
}

# On a tool call zot asks about ($1 its id, $2 the tool, $3 its arguments,
# $4 the project folder, JSON): the intercept function gets the guard's
# verdict on a bash call; a guard that fails refuses the call.
_ext_intercept_call() {
	REPLY=''
	if [[ $2 == bash ]] && ! _ext_verdict "$3" "$4"; then
		log "event_intercept handler failed: $REPLY"
		_ext_json "$EXT_NAME failed: $REPLY"
		_ext_send "{\"type\":\"event_intercept_response\",\"id\":$1,\"block\":true,\"reason\":$REPLY}"
		return
	fi
	_ext_spawn intercept "$1" "$_ext_intercept" "$2" "$3" "$REPLY"
}

# Reads the reader's records (see zot/jq/reader.jq) until shutdown or the end.
_ext_loop() {
	local -a head fields
	local length field function
	while IFS=' ' read -r -a head -u "$1"; do
		fields=()
		for length in "${head[@]:1}"; do
			field=''
			((length == 0)) || IFS= read -r -N "$length" -u "$1" field
			fields+=("$field")
		done
		case ${head[0]} in
		ack) _ext_ready ;;
		tool)
			_ext_spawn tool "${fields[0]}" "${_ext_tool_fns[fields[1]]}" "${fields[@]:2}"
			_ext_calls[${fields[0]}]="$! $_ext_spawned"
			((${#_ext_calls[@]} % 256)) || _ext_prune_calls
			;;
		command) _ext_spawn command "${fields[0]}" "${_ext_command_fns[fields[1]]}" "${fields[2]}" ;;
		intercept) _ext_intercept_call "${fields[@]}" ;;
		prompt) _ext_spawn prompt "${fields[0]}" "$_ext_prompt" "${fields[@]:1}" ;;
		turn) _ext_spawn turn "${fields[0]}" "$_ext_turn" "${fields[1]}" ;;
		message) _ext_spawn message "${fields[0]}" "$_ext_message" "${fields[1]}" ;;
		result) _ext_call_result "${fields[@]}" ;;
		panel) _ext_panel_event "${fields[@]}" ;;
		cancel) _ext_cancel "${fields[0]}" ;;
		event)
			# In order, one at a time, in a subshell: an exit ends only the handler.
			function=${_ext_event_fns[${fields[0]}]-}
			[[ -z $function ]] || ("$function" "${fields[@]}" </dev/null)
			;;
		frame) _ext_send "${fields[0]}" ;;
		log) log "${fields[0]}" ;;
		hello_ack)
			DATA_DIR=${fields[0]:-$DATA_DIR}
			HOST_CWD=${fields[1]:-$HOST_CWD}
			NEWER_HOST=${fields[2]} HOST_CALL_TOOL=${fields[6]}
			# shellcheck disable=SC2034 # for the handlers
			HOST_ZOT_VERSION=${fields[3]} HOST_PROVIDER=${fields[4]} HOST_MODEL=${fields[5]}
			;;
		shutdown)
			_ext_send '{"type":"shutdown_ack"}'
			return
			;;
		esac
	done
}

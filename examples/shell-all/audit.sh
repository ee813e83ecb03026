# The audit log: zot's lifecycle events, one JSON line each, appended to
# NAME-events.jsonl in zot's data folder. main.sh sources this file after
# ext_new.
# shellcheck shell=bash disable=SC2329 # the handlers are called by zot/runtime.sh

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

for event in session_start turn_start tool_call turn_end assistant_message; do
	ext_on "$event" record_event
done

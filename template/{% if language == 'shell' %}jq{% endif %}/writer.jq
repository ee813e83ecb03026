# Answers in, frames to zot out. Every input is a frame as it is, or
# [KIND, ID, STATUS, OUTPUT]: a handler's exit status and what it printed.

def main($config):
	def failed($status): "\($config.name) failed: exit status \($status)";

	# A command printed its action on the first line, then its text.
	def command_reply($status):
		(split("\n") | .[0] // "") as $action
		| (ltrimstr($action) | ltrimstr("\n")) as $text
		| if $status != 0 then {error: (if . == "" then failed($status) else . end)}
		elif $action == "prompt" or $action == "insert" or $action == "display" then
			{action: $action, ($action): $text}
		elif $action == "noop" or $action == "" then {action: "noop"}
		elif $action == "error" then {error: $text}
		else {error: "\($config.name): the command printed the unknown action \($action | tojson)"}
		end;

	def tool_reply($status):
		{is_error: ($status != 0),
		 content: [{type: "text", text: (if $status != 0 and . == "" then failed($status) else . end)}]};

	# The guard printed why to refuse the call, or nothing; failing, it refuses.
	def intercept_reply($status):
		if $status != 0 then {block: true, reason: (if . == "" then failed($status) else . end)}
		elif . == "" then {block: false}
		else {block: true, reason: .} end;

	def frame:
		if type != "array" then .
		else
			.[0] as $kind | .[1] as $id | .[2] as $status
			| .[3]
			| if $kind == "command" then {type: "command_response", id: $id} + command_reply($status)
			elif $kind == "tool" then {type: "tool_result", id: $id} + tool_reply($status)
			elif $kind == "intercept" then
				{type: "event_intercept_response", id: $id} + intercept_reply($status)
			elif $kind == "frame" then fromjson
			else empty end
		end;

	# jq 1.6 reports the end of input as "break"
	{} | recurse([try {value: input}
		catch (if . == "No more inputs" or . == "break" then {eof: true} else {} end)]
		| .[0]; .eof | not)
	| select(has("value"))
	| [try (.value | frame | tojson + "\n") catch empty] | .[];

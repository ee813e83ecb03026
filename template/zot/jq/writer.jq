# Answers in, frames to zot out. Every input is a frame as it is,
# [KIND, ID, STATUS, OUTPUT]: a handler's exit status and what it printed
# (for KIND rich, and a KIND that ends in "+", with a fifth item: its blocks,
# [KIND, CONTENT, MIME_TYPE]), or ["cancelled", ID]: no tool_result for that
# call from now on.

# A frame as one line. zot disconnects an extension that writes a line of
# 4 MiB or more: such an answer becomes its request's error instead.
def within_limit:
	(tojson + "\n") as $line
	| ($line | utf8bytelength) as $size
	| if $size < 4194304 then $line
	else "the answer is \($size) bytes, over zot's limit of 4 MiB for one line: send less" as $why
		| if .type == "tool_result" then {type, id, content: [{type: "text", text: $why}], is_error: true}
		elif .type == "command_response" then {type, id, action: "noop", error: $why}
		elif .type == "event_intercept_response" then {type, id, block: true, reason: $why}
		else {type: "notify", level: "error", message: $why} end
		| tojson + "\n"
	end;

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

	# The last content of the blocks of kind $kind, or null.
	def last_block($blocks; $kind): [$blocks[] | select(.[0] == $kind) | .[1]] | last;

	# What the handler printed, then its blocks, [KIND, CONTENT, MIME_TYPE];
	# the last ext_structured's is the structured_content; every
	# ext_activate_tools's names (a JSON list each) are activate_tools.
	def rich_reply($status; $blocks):
		last_block($blocks; "structured") as $structured
		| ([$structured | values | try {structured_content: fromjson} catch null] | .[0]) as $extra
		| (if . == "" then [] else [{type: "text", text: .}] end
		   + [$blocks[]
			| if .[0] == "text" then {type: "text", text: .[1]}
			elif .[0] == "markdown" then {type: "text", text: .[1], format: "markdown"}
			elif .[0] == "image" then {type: "image", mime_type: .[2], data: .[1]}
			else empty end]) as $content
		| (reduce ($blocks[] | select(.[0] == "activate") | .[1] | try fromjson catch [] | .[]? | strings)
			as $name ([]; if any(.[]; . == $name) then . else . + [$name] end)) as $activate
		| if $structured != null and $extra == null then
			{is_error: true, content: [{type: "text",
				text: "\($config.name) failed: ext_structured got no JSON: \($structured[:80])"}]}
		else
			{is_error: ($status != 0),
			 content: (if $content == [] and $status != 0
				then [{type: "text", text: failed($status)}] else $content end)}
			+ ($extra // {})
			+ (if $activate == [] then {} else {activate_tools: $activate} end)
		end;

	# At most $max bytes of UTF-8, cut at a character.
	def cut($max):
		if utf8bytelength <= $max then .
		else . as $text
		| [0, $max]
		| until(.[0] >= .[1];
			((.[0] + .[1] + 1) / 2 | floor) as $mid
			| if ($text[:$mid] | utf8bytelength) <= $max then .[0] = $mid else .[1] = $mid - 1 end)
		| $text[:.[0]]
		end;

	# before_agent_start: the new system prompt (zot takes at most 1 MiB), or
	# none to keep it.
	def prompt_reply($status):
		if $status == 0 and . != "" then {system_prompt: cut(1048576)} else {} end;

	# The guard printed why to refuse the call, or nothing; failing, it
	# refuses. (A turn_start intercept the same: why to abort the turn.)
	def intercept_reply($status):
		if $status != 0 then {block: true, reason: (if . == "" then failed($status) else . end)}
		elif . == "" then {block: false}
		else {block: true, reason: .} end;

	# The guard's answer, with its ext_modify_args when it lets the call run.
	def rewrite_reply($status; $blocks):
		intercept_reply($status) as $reply
		| ([last_block($blocks; "args") | values | try fromjson catch null] | .[0]) as $args
		| if $reply.block or ($args | type) != "object" then $reply
		else $reply + {modified_args: $args} end;

	# assistant_message: the new text printed (the text as it was comes as
	# KIND shown), or nothing; ext_hide_message hides it, and so does a
	# failure.
	def message_reply($status; $blocks):
		last_block($blocks; "hide") as $hide
		| if $status != 0 then {block: true, reason: failed($status)}
		elif $hide != null then {block: true, reason: $hide}
		elif . == "" then {block: false}
		else {block: false, replace_text: .} end;

	def frame:
		if type != "array" then .
		else
			(.[0] | rtrimstr("+")) as $kind | .[1] as $id | .[2] as $status | (.[4] // []) as $blocks
			| .[3]
			| if $kind == "command" then {type: "command_response", id: $id} + command_reply($status)
			elif $kind == "tool" then {type: "tool_result", id: $id} + tool_reply($status)
			elif $kind == "rich" then {type: "tool_result", id: $id} + rich_reply($status; $blocks)
			elif $kind == "prompt" then
				{type: "event_intercept_response", id: $id} + prompt_reply($status)
			elif $kind == "intercept" then
				{type: "event_intercept_response", id: $id} + rewrite_reply($status; $blocks)
			elif $kind == "turn" then
				{type: "event_intercept_response", id: $id} + intercept_reply($status)
			elif $kind == "message" then
				{type: "event_intercept_response", id: $id} + message_reply($status; $blocks)
			elif $kind == "shown" then {type: "event_intercept_response", id: $id, block: false}
			elif $kind == "frame" then fromjson
			else empty end
		end;

	# A tool's answer after its cancellation is dropped.
	def dropped($cancelled):
		type == "array" and (.[0] == "tool" or .[0] == "rich")
		and (.[1] | type) == "string" and $cancelled[.[1]] != null;

	# jq 1.6 reports the end of input as "break"
	foreach ({} | recurse([try {value: input}
		catch (if . == "No more inputs" or . == "break" then {eof: true} else {} end)]
		| .[0]; .eof | not)
	| select(has("value")) | .value) as $in ({cancelled: {}};
		.cancelled as $cancelled
		| if ($in | type) == "array" and $in[0] == "cancelled" and ($in[1] | type) == "string" then
			.cancelled[$in[1]] = true | .out = null
		elif $in | dropped($cancelled) then del(.cancelled[$in[1]]) | .out = null
		else .out = $in end)
	| .out | select(. != null)
	| [try (frame | within_limit) catch empty] | .[];

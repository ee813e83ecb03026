# zot's frames in, records for zot/runtime.sh out.
#
# Every input is one line from zot: read raw, or as a JSON string where
# zot/runtime.sh wraps the lines for jq 1.6. Every record is a header line
# "KIND LENGTH..." and then its fields back to back, LENGTH characters each
# (bytes when $config.chars is false), for bash's read -N.
#
# Lines before zot's hello_ack are skipped (zot/runtime.sh passes on zot's
# lines from hello_ack on); the line with hello_ack gives an "ack" record
# first.
def shown: if type == "string" then . elif . == null then "None" else tojson end;

# A bash variable cannot hold NUL.
def has_nul: index("\u0000") != null;
def nul: "bash cannot pass it to a handler; send the text without it";
def without_nul: if index("\u0000") != null then split("\u0000") | join("") else . end;

# The index of .name in $names, or null.
def position($names):
	.name as $wanted
	| if ($wanted | type) != "string" then null
	else first(range(0; $names | length) | select($names[.] == $wanted)) // null end;

def timestamp:
	now * 1000 | floor
	| (. / 1000 | floor | strftime("%Y-%m-%dT%H:%M:%S"))
	+ "." + (1000 + . % 1000 | tostring | .[1:]) + "+00:00";

# The string fields of a JSON object fromjson cannot read (jq 1.6 stops at
# 256 levels, zot goes to 10000).
def top_level_fields:
	reduce scan("\"(?:[^\"\\\\]|\\\\.)*\"|[\\[\\]{}:,]") as $token ({depth: 0, fields: {}};
		if $token == "{" or $token == "[" then .depth += 1
		elif $token == "}" or $token == "]" then .depth -= 1
		elif .depth != 1 then .
		elif $token == ":" or $token == "," then .value = ($token == ":")
		elif .value then .fields[.key] = ($token | fromjson) | .value = false
		else .key = ($token | fromjson) end)
	| .fields;

# The next line: {line}, {error} (a line that was no JSON string), or {eof}
# (jq 1.6 reports the end as "break", and a last line cut off, when zot
# stopped without shutdown, as text abandoned at EOF: a stop all the same).
def next_line:
	[try {line: input}
	 catch (if . == "No more inputs" or . == "break" or (tostring | test("abandoned text at EOF"))
		then {eof: true} else {error: .} end)]
	| .[0];

# zot's answer to a call of one of its tools (a tool_result frame) as
# ext_call_tool gives it: ["1" for an error or "", the result as JSON, its
# text blocks joined by line breaks]. Odd fields read as none: content not a
# list as [], is_error or truncated not true as false. A result zot cut
# gets a last text block that says so.
def call_result:
	(.truncated == true) as $truncated
	| {content: ((.content | arrays // [])
		+ if $truncated then [{type: "text", text: "[zot cut this result: over 256 KiB]"}] else [] end),
	   is_error: (.is_error == true)}
	+ (if $truncated then {truncated: true} else {} end)
	| [(if .is_error then "1" else "" end), tojson,
		([.content[] | objects | select(.type == "text") | .text | strings] | join("\n"))];

# For ext_call_tool in unit tests: ext_test_zot_tool's answer for tool
# $name (JSON text, "" for none) as zot would send it, as call_result's
# fields, each followed by a NUL.
def test_call_result($name; $answer):
	([$answer | select(. != "") | try fromjson catch null] | .[0]) as $given
	| if $answer == "" then
		{is_error: true, content: [{type: "text", text: "this test's zot has no answer for its tool \($name)"}]}
	elif ($given | type) != "object" then
		{is_error: true, content: [{type: "text",
			text: "ext_test_zot_tool: the answer for \($name) is no JSON object: \($answer[:80])"}]}
	elif $given | has("content") then $given
	else $given + {content: [{type: "text", text: ($given.text // "" | tostring)}]} end
	| call_result[] | without_nul + "\u0000";

# The cwd a line sets when it is a hello_ack that has one, else $cwd.
def host_cwd($cwd):
	([try fromjson catch null] | .[0]) as $frame
	| if ($frame | type) == "object" and $frame.type == "hello_ack" and ($frame | has("cwd"))
	then $frame.cwd else $cwd end;

def main(tool_args; $config):
	def record($kind; $fields):
		($fields | map(tostring | without_nul)) as $fields
		| $kind + ($fields | map(" \(if $config.chars then length else utf8bytelength end)") | add // "")
		+ "\n" + ($fields | add // "");
	def log($message): record("log"; [$message]);
	def send: record("frame"; [tojson]);

	# The answer to request . when handling it failed (a guard refuses).
	def failure($why):
		"\($config.name) failed: \($why)" as $text
		| if (.id | type) != "string" then empty
		elif .type == "command_invoked" then {type: "command_response", id, error: $text} | send
		elif .type == "tool_call" then
			{type: "tool_result", id, is_error: true, content: [{type: "text", text: $text}]} | send
		elif .type == "event_intercept" then
			{type: "event_intercept_response", id, block: true, reason: $text} | send
		else empty end;

	def on_command:
		position($config.commands) as $index
		| if $index == null then
			{type: "command_response", id, error: "unknown command: /\(.name | shown)"} | send
		elif (.args | type) == "string" and (.args | has_nul) then
			{type: "command_response", id,
			 error: "\($config.name): the text holds a NUL character: \(nul)"} | send
		else
			record("command"; [(.id | tojson), $index,
				(.args | if type == "string" then sub("^\\s+"; "") | sub("\\s+$"; "") else "" end)])
		end;

	def on_tool_call:
		position($config.tools) as $index
		| if $index == null then
			{type: "tool_result", id, is_error: true,
			 content: [{type: "text", text: "unknown tool: \(.name | shown)"}]} | send
		else
			([try {values: [{index: $index, args} | tool_args | tostring]} catch {error: .}]
			 | .[0]
			 | if .values and (.values | any(has_nul)) then
				{error: {invalid_arguments: "a NUL character: \(nul)"}}
			 else . end) as $run
			| if $run.values then record("tool"; [(.id | tojson), $index] + $run.values)
			else
				($run.error
				 | if type == "object" and has("invalid_arguments") then
					{text: "invalid arguments: \(.invalid_arguments)"}
				 else {text: "\($config.name) failed: \(shown)", failed: shown} end) as $error
				| (if $error.failed then log("tool_call handler failed: \($error.failed)")
				   else empty end),
				({type: "tool_result", id, is_error: true,
				  content: [{type: "text", text: $error.text}]} | send)
			end
		end;

	# $cwd: the project folder, from hello_ack.
	def on_intercept($cwd):
		if .event == "before_agent_start" and $config.prompt then
			record("prompt"; [(.id | tojson), (.system_prompt | strings // ""),
				(.cwd | strings // ""), tojson])
		elif .event == "turn_start" and $config.turn then
			record("turn"; [(.id | tojson), (.step | (numbers | tostring) // "")])
		elif .event == "assistant_message" and $config.message then
			record("message"; [(.id | tojson), (.text | strings // "")])
		elif .event != "tool_call" or ($config.intercept | not) then
			{type: "event_intercept_response", id, block: false} | send
		else
			# The guard's own jq judges bash calls in the project folder $cwd.
			record("intercept"; [(.id | tojson),
				(.tool_name | if type == "string" then . else tojson end),
				(.tool_args | tojson), ($cwd | tojson)])
		end;

	def on_event:
		(.event | shown) as $event
		| if $config.events | index([$event]) then
			record("event"; [$event, (. + {received_at: timestamp} | tojson)])
		else empty end;

	# A key goes to the handler as its name, or for a character key (a
	# "rune") the character itself.
	def on_panel:
		if (.panel_id | type) != "string" then log("skipped a \(.type) frame without a panel_id")
		elif .type == "panel_close" then record("panel"; ["close", .panel_id, "", ""])
		else
			(.text | strings // "" | .[:64]) as $text
			| (.key | strings // "") as $key
			| record("panel"; ["key", .panel_id,
				(if $key == "rune" and ($text | length) == 1 then $text else $key end), $text])
		end;

	def with_id(handler):
		if (.id | type) == "string" then handler
		else log("skipped a \(.type) frame without an id") end;

	def on_frame($cwd):
		.type as $type
		| if $type == "hello_ack" then
			record("hello_ack"; [
				(first(.data_dir, .extension_dir | strings | select(. != "")) // ""),
				(.cwd | strings // ""),
				# A newer zot lists its capabilities; 0.1.62 does not.
				(if (.capabilities | type) == "array" then "1" else "" end),
				(.zot_version, .provider, .model | strings // ""),
				# and call_tool, when it runs its tools for extensions
				(if .capabilities | arrays // [] | any(. == "call_tool") then "1" else "" end)])
		elif $type == "command_invoked" then with_id(on_command)
		elif $type == "tool_call" then with_id(on_tool_call)
		elif $type == "event_intercept" then with_id(on_intercept($cwd))
		elif $type == "event" then on_event
		elif $type == "tool_cancel" then with_id(record("cancel"; [.id | tojson]))
		# zot's answer to a call of its tools (ext_call_tool)
		elif $type == "tool_result" then with_id(record("result"; [.id] + call_result))
		elif $type == "panel_key" or $type == "panel_close" then on_panel
		elif $type == "panel_resize" then empty
		else log("ignored a frame of type \($type | shown)") end;

	# A line too deeply nested to read: a request in it is answered as failed
	# (a guard refuses), anything else is skipped.
	def on_unreadable:
		. as $line
		| ([try top_level_fields catch {}] | .[0]) as $fields
		| if ($fields.id | type) == "string"
			and ($fields.type == "command_invoked" or $fields.type == "tool_call"
				or $fields.type == "event_intercept")
		then
			log("could not read a frame nested too deeply: \($line[:80] | tojson)"),
			($fields | failure("the request is nested too deeply to read"))
		elif ($fields.id | type) == "string" and $fields.type == "tool_result" then
			# zot's answer to ext_call_tool, which need not wait for it in vain
			log("could not read zot's answer nested too deeply: \($line[:80] | tojson)"),
			record("result"; [$fields.id] + ({is_error: true, content: [{type: "text",
				text: "\($config.name) could not read zot's answer: it is nested too deeply"}]} | call_result))
		else log("skipped a line nested too deeply: \($line[:80] | tojson)") end;

	def on_line($cwd):
		. as $line
		| ([try {frame: fromjson} catch {error: .}] | .[0]) as $parsed
		# jq 1.6 refuses a lone \ud800..\udbff escape, which zot passes on: read
		# it as U+FFFD rather than drop the whole frame.
		| (if $parsed.error and ($parsed.error | tostring | test("surrogate")) then
			[try {frame: gsub("\\\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\\\u[dD][c-fC-F])"; "\\ufffd")
				| fromjson} catch {error: .}] | .[0]
		else $parsed end) as $parsed
		| if $parsed.error then
			if $parsed.error | tostring | test("depth limit") then $line | on_unreadable
			else log("skipped a malformed line: \($line[:80] | tojson)") end
		elif ($parsed.frame | type) != "object" then
			log("skipped a line that is not a JSON object: \($line[:80] | tojson)")
		elif $parsed.frame.type == "shutdown" then record("shutdown"; [])
		else
			$parsed.frame
			| [try on_frame($cwd) catch (shown as $error | log("a frame failed: \($error)"), failure($error))]
			| .[]
		end;

	# One record after another until the end of input, or shutdown; each
	# hello_ack may set the project folder.
	label $done
	| foreach ({} | recurse(next_line; .eof | not)) as $item ({};
		.acked as $acked
		| if $item.line | type == "string" and index("hello_ack") != null then
			.cwd as $cwd | .cwd = ($item.line | host_cwd($cwd))
			| .acked = ($acked or ($item.line | index("\"hello_ack\"") != null))
		else . end
		| .item = $item + {first: (.acked and ($acked | not)), early: (.acked | not)})
	| .cwd as $cwd
	| .item as $item
	| if $item.error then log("skipped a line: \($item.error)")
	elif $item | has("line") then
		$item.line | tostring | select(test("\\S"))
		| if $item.early then log("skipped a line before hello_ack: \(.[:80])")
		else
			(if $item.first then record("ack"; []) else empty end),
			(on_line($cwd) | ., if startswith("shutdown") then break $done else empty end)
		end
	else empty end;

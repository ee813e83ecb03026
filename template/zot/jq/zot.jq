# Helpers for the argument checks of main.sh's tools (ext_tool's ARGS_JQ).

# Refuses the call: the model gets "invalid arguments: MESSAGE".
def invalid($message): error({invalid_arguments: $message});

# The problems of . as a tool's arguments for JSON Schema $schema, each
# naming where: "\"text\" is required", "\"tags[1]\" must be a string"; []
# when there are none. The keywords checked: type, required, properties,
# additionalProperties, items, enum, minimum, maximum, minLength, maxLength;
# others never refuse a call. Every runtime of the template words them so.
def schema_problems($schema; $path):
	def name: if . == "boolean" then "true or false" elif . == "null" then "null"
		elif . == "integer" or . == "array" or . == "object" then "an \(.)" else "a \(.)" end;
	def is($t):
		if $t == "integer" then type == "number" and . == floor
		elif [$t] | inside(["string", "number", "boolean", "object", "array", "null"]) then type == $t
		else true end;
	def bounds($size; $where; $low; $high; $unit):
		def shown($n): "\($n | tojson)\(if $unit == "" then "" elif $n == 1 then $unit else "\($unit)s" end)"
			+ (if $unit == "" then "" else " long" end);
		(if ($schema[$low] | type) == "number" and $size < $schema[$low]
		 then ["\($where) must be at least \(shown($schema[$low]))"] else [] end)
		+ (if ($schema[$high] | type) == "number" and $size > $schema[$high]
		   then ["\($where) must be at most \(shown($schema[$high]))"] else [] end);
	. as $value
	| if ($schema | type) != "object" then []
	else
		(if $path == "" then "the arguments" else $path | tojson end) as $where
		| ($schema.type | if type == "string" then [.] elif type == "array" then . else null end) as $types
		| if $types != null and ($types | any(. as $t | $value | is($t)) | not) then
			($types | map(name)) as $names
			| ["\($where) must be \(if ($names | length) == 1 then $names[0]
				else ($names[:-1] | join(", ")) + " or " + $names[-1] end)"]
		else
			(if ($schema.enum | type) == "array" and ($schema.enum | index([$value]) | not)
			 then ["\($where) must be one of \($schema.enum | map(tojson) | join(", "))"] else [] end)
			+ if type == "string" then bounds(length; $where; "minLength"; "maxLength"; " character")
			elif type == "number" then bounds(.; $where; "minimum"; "maximum"; "")
			elif type == "array" and ($schema.items | type) == "object" then
				[range(length) as $i | .[$i] | schema_problems($schema.items; "\($path)[\($i)]")[]]
			elif type == "object" then
				(if $path == "" then "" else "\($path)." end) as $prefix
				| ($schema.properties | if type == "object" then . else {} end) as $properties
				| (if $schema | has("additionalProperties") then $schema.additionalProperties else true end) as $extra
				| [($schema.required | if type == "array" then .[] | strings else empty end)
					| select(. as $name | $value | has($name) | not) | "\($prefix + . | tojson) is required"]
				+ [keys[] as $name
					| if $properties | has($name) then $value[$name] | schema_problems($properties[$name]; $prefix + $name)[]
					elif $extra == false then "\($prefix + $name | tojson) is not expected"
					else $value[$name] | schema_problems($extra; $prefix + $name)[] end]
			else [] end
		end
	end;

# Refuses arguments that do not fit JSON Schema $schema (ext_tool checks each
# call with its tool's schema before ARGS_JQ).
def fits_schema($schema):
	schema_problems($schema; "") as $found
	| if $found == [] then . else invalid($found | join("; ")) end;

# Upper case for ASCII, Latin, Greek, Cyrillic and Armenian letters; ß
# becomes SS.
def upcase:
	if length == utf8bytelength then ascii_upcase
	else [explode[]
		| if . < 128 then (if . >= 97 and . <= 122 then . - 32 else . end)
		elif . < 256 then
			if . == 181 then 924 elif . == 223 then 83, 83 elif . == 255 then 376
			elif . >= 224 and . != 247 then . - 32 else . end
		elif . < 384 then
			if . == 305 then 73 elif . == 329 then 700, 78 elif . == 383 then 83
			elif . < 312 or (. >= 330 and . < 376) then . - . % 2
			elif (. >= 313 and . < 329) or . >= 377 then . - 1 + . % 2
			else . end
		elif . >= 940 and . < 975 then
			if . == 940 then 902 elif . < 944 then . - 37 elif . == 962 then 931
			elif . >= 945 and . < 972 then . - 32 elif . == 972 then 908
			elif . >= 973 then . - 63 else . end
		elif . >= 1072 and . < 1328 then
			if . < 1104 then . - 32 elif . < 1120 then . - 80
			elif . == 1231 then 1216 elif . >= 1217 and . < 1231 then . - 1 + . % 2
			elif . < 1154 or . >= 1162 then . - . % 2 else . end
		elif . >= 1377 and . < 1415 then . - 48
		elif . >= 7680 and . < 7936 then
			if . < 7830 or . >= 7840 then . - . % 2 elif . == 7835 then 7776 else . end
		elif . >= 9424 and . < 9450 then . - 26
		elif . >= 65345 and . < 65371 then . - 32
		else . end
	] | implode end;

# For ext_test_tool: . is {index, args}; the parameters, each followed by a
# NUL, or the refusal after a \u0001.
def test_tool_args(tool_args):
	[try {values: [tool_args | tostring]} catch {error: .}]
	| .[0]
	| if .values then .values[] + "\u0000"
	else "\u0001" + (.error | if type == "object" and has("invalid_arguments")
		then "invalid arguments: \(.invalid_arguments)" else tostring end)
	end;

# Helpers for the argument checks of main.sh's tools (ext_tool's ARGS_JQ).

# Refuses the call: the model gets "invalid arguments: MESSAGE".
def invalid($message): error({invalid_arguments: $message});

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

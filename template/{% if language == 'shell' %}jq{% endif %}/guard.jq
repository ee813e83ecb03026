# The guard's decision on an event_intercept frame for a tool call: why to
# refuse it, or nothing to allow it. $dangerous lists guard.sh's DANGEROUS,
# three entries per pattern; a command longer than $max_command (a number, or
# null for no limit) is refused unread.
def refusal($name; $dangerous; $max_command):
	if .tool_name == "bash" and (.tool_args | type) == "object" then
		# bash joins continued lines
		.tool_args.command | strings | (split("\\\n") | join("")) as $command
		| if $max_command != null and ($command | length) > $max_command then
			"refused by \($name): a command of over \($max_command) characters, too long"
			+ " to check. Instead, split it up, or write long text to a file with the write tool."
		else
			first(range(0; $dangerous | length; 3) as $i
				| select($dangerous[$i] as $pattern | $command | test($pattern))
				| "refused by \($name): \($dangerous[$i + 1]). Instead, \($dangerous[$i + 2]).")
		end
	else empty end;

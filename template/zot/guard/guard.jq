# The guard: bash commands refused before they run.
#
# The rules are data, in guard-rules.json (the template's) and
# guard-policy.json (yours: rules you add, rules you switch off). This file
# reads a command the way bash splits it, finds each simple command behind
# its wrappers (sudo, env, xargs, bash -c '...', $(...)), and asks the rules
# about it. It belongs to the template: `copier update` replaces it.

# A longer command is refused unread: checking it could take too long.
def max_command: 65536;
# Code inside code (bash -c '...', eval ...) deeper than this is refused.
def max_depth: 8;
# So are $(...), `...` and ( ... ) nested deeper than this.
def max_nesting: 32;
# Where cd leads stops being followed past a path this long.
def max_path: 4096;
# What a $(...), `...` or <(...) leaves in a word.
def substitution: "$()";
# What xargs or parallel puts in a word from their input: unknown text.
def input_word: "${:input}";
# parallel runs at most this many values one by one; more count as unknown.
def max_values: 64;

def too_long:
	{rule: "too-long", reason: "a command of over \(max_command) characters, too long to check",
	 instead: "split it up, or write long text to a file with the write tool"};
def too_deep:
	{rule: "too-deep", reason: "code nested more than \(max_depth) levels deep, too deep to check",
	 instead: "write the script to a file and run that"};
# At most this many words of commands are judged again in one decision, with
# a variable's value or a call's arguments in place ($cmd, f() { "$@"; }).
def max_again: 4096;
def too_many_again:
	{rule: "too-many-calls",
	 reason: "more than \(max_again) words of commands run through variables or function arguments, too many to check",
	 instead: "write the script to a file and run that"};
# A command not checked within this many seconds is refused: zot waits 5 s
# for the verdict, and jq takes seconds on some long commands (more on a
# busy machine).
def max_seconds: 2;
def too_slow:
	{rule: "too-slow", reason: "a command that takes over \(max_seconds) s to check",
	 instead: "split it into shorter commands, or write a script to a file and run that"};

# any and all, quicker in jq 1.6.
def some(generator; condition): isempty(first(generator | select(condition))) | not;
def every(generator; condition): isempty(first(generator | select(condition | not)));

# --- Words --------------------------------------------------------------------

def is_blank: . == " " or startswith(" ") or startswith("\t");
def is_number: length > 0 and (explode | every(.[]; . >= 48 and . <= 57));
# -x, -xyz, --long (not -, --, or -1, which is a number).
def is_option:
	length > 1 and .[0:1] == "-" and (.[1:2] | . < "0" or . > "9") and . != "--";
def is_short: length > 1 and .[0:1] == "-" and .[1:2] != "-";
def basename: split("/") | .[-1] // "";
# The text after the first $sep (the word split at it once).
def after($sep): split($sep) | .[1:] | join($sep);
# NAME=, NAME+= or NAME[...]= at the start: an assignment.
def is_assignment:
	index("=") != null and test("\\A[A-Za-z_][A-Za-z0-9_]*(\\[[^\\]]*\\])?\\+?=");
def is_keyword:
	{"if": 1, "then": 1, "elif": 1, "else": 1, "fi": 1, "do": 1, "done": 1, "while": 1, "until": 1,
	 "!": 1, "{": 1, "}": 1, "esac": 1, "coproc": 1}[.] != null;

# Whether . fits the glob $pieces (a pattern split at its *s).
def glob_fits($pieces):
	($pieces[0]) as $head | ($pieces[-1]) as $tail
	| length >= ($head | length) + ($tail | length) and startswith($head) and endswith($tail)
	and (reduce $pieces[1:-1][] as $piece (.[($head | length):length - ($tail | length)];
		if . == null or $piece == "" then .
		elif index($piece) == null then null
		else after($piece) end) != null);

# {TEXT: true} for each text of a list (quicker than from_entries in jq 1.6).
def as_set: reduce (.[] | strings) as $text ({}; setpath([$text]; true));

# A list of patterns, made ready for fits: {exact: {WORD: true}, globs}.
def patterns:
	{exact: map(select(type == "string" and index("*") == null)) | as_set,
	 globs: map(select(type == "string" and index("*") != null) | split("*"))};

# Whether . fits one of the patterns ($p from patterns), * standing for any text.
def fits($p): . as $w | $p.exact[$w] or some($p.globs[]; . as $g | $w | glob_fits($g));

# Where the first letter of a cluster that takes a value stands (0: none):
# in git checkout -qbNAME, b; the rest of the word is its value.
# $with_value: {OPTION: true} for the options that take the next word.
def value_at($with_value):
	explode as $letters
	| first(range(1; $letters | length) | select($with_value["-" + ([$letters[.]] | implode)] != null)) // 0;

# Whether the next word is the option's value: -C DIR, or -qb NAME.
def takes_value($with_value):
	$with_value[.] != null
	or length > 2 and ($with_value | length) > 0 and is_short and value_at($with_value) == length - 1;

# -f matches any cluster with an f (-rf) before a letter that takes a value
# (not -bfix); longer names match whole (=value aside).
def option_matches($wanted; $with_value):
	if ($wanted | length) == 2 and $wanted != "--" then
		is_short
		and ((if length > 2 and ($with_value | length) > 0 then value_at($with_value) else 0 end) as $at
			| if $at > 0 then .[1:$at + 1] else .[1:] end | index($wanted[1:2]) != null)
	else
		(split("=") | .[0] // "") as $name
		| . == $wanted or $name == $wanted
		or ($wanted | index("*") != null) and ($name | glob_fits($wanted | split("*")))
	end;

# The number written in . in base $base (hexadecimal or octal digits).
def radix($base):
	explode | reduce .[] as $c (0; . * $base + (if $c >= 97 then $c - 87 elif $c >= 65 then $c - 55 else $c - 48 end));

# The text of $'...' with its escapes decoded, as bash reads them; a NUL ends
# it, and a byte that is not ASCII, or no character, stands as U+FFFD. The
# text is cut at each backslash: each piece after one starts with an escape.
def ansi_c:
	split("\\") as $pieces
	| ($pieces | length) as $n
	| [$pieces[0], foreach range(1; $n) as $j ({literal: false, stop: false, out: null};
		$pieces[$j] as $piece
		| if .stop then .out = null
		elif .literal then .out = $piece | .literal = false
		elif $piece == "" or $piece == "c" and $j < $n - 1 then
			# two backslashes: one (one at the end: kept); \c and a backslash: control-backslash
			.out = (if $piece == "" then "\\" else "\u001c" end) | .literal = ($j < $n - 1)
		else
			($piece[0:10] | [match("\\A([abeEfnrtv\\\\'\"?]|[0-7]{1,3}|x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|c[\\s\\S])").string][0])
				as $escape
			| if $escape == null then .out = "\\" + $piece
			else
				$escape[0:1] as $kind
				| ({"a": 7, "b": 8, "e": 27, "E": 27, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11}[$kind]
					// if "\\'\"?" | contains($kind) then $kind | explode[0]
					elif $kind == "x" then $escape[1:] | radix(16)
					elif $kind == "u" or $kind == "U" then
						$escape[1:] | radix(16) | if . > 1114111 or . >= 55296 and . <= 57343 then 65533 else . end
					elif $kind == "c" then
						$escape[1:] | explode[0]
						| if . >= 128 then 65533 elif . == 63 then 127 elif . >= 97 and . <= 122 then (. - 32) % 32
						else . % 32 end
					else $escape | radix(8) % 256 end) as $raw
				| (if $kind != "u" and $kind != "U" and $raw >= 128 and $raw <= 255 then 65533 else $raw end) as $code
				| if $code == 0 then .stop = true | .out = null
				else .out = ([$code] | implode) + $piece[($escape | length):] end
			end
		end;
		.out | values)]
	| add // "";

# The words of env -S's string: split at blanks, quotes and backslashes
# taken off; each character read once (.mode: the quote, or backslash, that
# the characters before opened; .started: a word has begun, '' is one), the
# words' characters given out with -1 after each word.
def split_string:
	# the usual case: words between spaces, nothing quoted
	if test("[\t\n\u000b\f\r'\"\\\\]") | not then split(" ") | map(select(. != ""))
	else
	[foreach (explode[], -1) as $c ({mode: "", started: false, out: []};
		if $c == -1 then .out = (if .started then [-1] else [] end)
		elif (.mode == "'" and $c == 39) or (.mode == "\"" and $c == 34) then .mode = "" | .out = []
		elif .mode == "\"" and $c == 92 then .mode = "\"\\" | .out = []
		elif .mode != "" then
			.out = [$c] | .mode = (if .mode == "\"\\" then "\"" elif .mode == "\\" then "" else .mode end)
		elif $c == 32 or $c >= 9 and $c <= 13 then
			.out = (if .started then [-1] else [] end) | .started = false
		elif $c == 39 or $c == 34 or $c == 92 then .started = true | .mode = ([$c] | implode) | .out = []
		else .started = true | .out = [$c] end;
		.out[])]
	| . as $codes
	| indices(-1) as $ends
	| [range($ends | length) as $k
		| $codes[(if $k == 0 then 0 else $ends[$k - 1] + 1 end):$ends[$k]] | implode]
	end;

# --- Reading a command the way bash splits it -----------------------------------
#
# The parser's state: the tokens .t (.n of them) and where it stands (.i);
# .done, every simple command in the order they end (a substitution's before
# its command's): {id, words, keywords (how many of its first words are
# keywords), redirects: [[operator, target]], pipeline, subs: the words of its
# $(...)'s commands, nested}; .stdins, what here-documents and here-strings
# give each command (by id), in order;
# .fnames, the functions defined; .found, the words of the current level's
# commands;
# .w, .r and .s, the words, redirections and subs of the command being read,
# .nw its words and .kw its first words that are keywords, .cb the body it is
# in; .p, the parts of the word being read; .heredocs, the here-documents
# started on the current line; .ret, what the last step gives back.
# Subshells: .scope, the one read, and .parents, each one's parent. Function
# bodies: .bodies ({id, name, scope} each), .open (those being read,
# innermost last: {id, depth}, depth the braces open around it, -1 until its
# { or ( is read), .closed (the ids of those whose } or ) was read), .braces.
# Steps change it with setpath, several times quicker than .i += 1 in jq 1.6.
# Lists that grow with the command are chains, [rest, last] (null when
# empty): adding to them takes the same time however long they are.

# A chain as an array.
def items: if . == null then [] else [recurse(.[0]; . != null) | .[1]] | reverse end;
# Adds the items of the chain .ret to the chain at $key.
def add_chain($key): reduce (.ret | items[]) as $item (.; setpath([$key]; [.[$key], $item]));

# Long text cut at single spaces between other characters, in pieces of
# about 256 characters.
def chunks:
	if length < 512 then .
	else foreach (split(" ")[], null) as $part ({chunk: null};
		if $part == null then .out = .chunk
		elif .chunk == null then .chunk = $part | .out = null
		elif (.chunk | length) > 256 and $part != "" and ($part | startswith("\t") | not)
			and (.chunk | . == "" or endswith(" ") or endswith("\t") | not)
		then .out = .chunk | .chunk = $part
		else .chunk += " " + $part | .out = null end;
		.out | values)
	end;

# Runs of ordinary characters, runs of blanks, or one character of syntax.
# Long text is first cut at characters that are always a token of their
# own, then at single spaces: matching is then quicker (jq 1.6 counts each
# match's place from the start of the text).
def tokens:
	def pieces($separators):
		if $separators == [] or length < 512 then
			def each: match("[^ \\t\\n'\"\\\\$`()|&;<>]+|[ \\t]+|[\\s\\S]"; "g").string;
			[chunks] as $chunks | ($chunks[0] | each), ($chunks[1:][] | " ", each)
		else $separators[0] as $separator | $separators[1:] as $rest
		| split($separator) as $parts
		| ($parts[0] // "" | pieces($rest)), ($parts[1:][] | $separator, pieces($rest))
		end;
	[pieces(["\n", ";", "|", "&", "\"", "'", "(", ")", "<", ">", "$", "`", "\\"])];

def ends_word: {"\n": 1, ";": 1, "&": 1, "|": 1, "(": 1, ")": 1, "<": 1, ">": 1}[.] != null;
def syntax:
	if length > 1 then startswith("#") or is_blank
	else {" ": 1, "\t": 1, "\n": 1, "'": 1, "\"": 1, "\\": 1, "$": 1, "`": 1, "(": 1, ")": 1, "|": 1,
		"&": 1, ";": 1, "<": 1, ">": 1, "#": 1}[.] != null end;

def peek: .t[.i] // "";
def skip_blanks: until(.i >= .n or (.t[.i] | is_blank | not); setpath(["i"]; .i + 1));
def new_pipeline: setpath(["pipelines"]; .pipelines + 1) | setpath(["pipe"]; .pipelines);
# The index of the next token $token at or after .i, or .n.
def next($token): .t as $t | first(range(.i; .n) | select($t[.] == $token)) // .n;
# The text up to the token $close (taken too), as it stands.
def raw_until($close):
	next($close) as $j | setpath(["ret"]; .t[.i:$j] | add // "") | setpath(["i"]; $j + 1);

# Whether the plain word ends with the token at .i (no quote or $ joined to it).
def ends_after($token; $stop):
	(.t[.i + 1] // " ")
	| if . == "(" and ($token | endswith("=")) then false # a=(x y): an array
	else is_blank or ends_word or . == $stop end;
# Whether the token at .i stands at a word's start (where # starts a comment).
def starts_word: .i == 0 or (.t[.i - 1] | ends_word or is_blank);

# What a $(...) leaves in its word (.ret: the words of its commands): the
# text of a here-document when its only command is cat of one ($(cat <<EOF
# ... EOF)), or substitution. $ns: how many stdins there were before it.
def heredoc_text($ns):
	if .ns == $ns or (.ret | items) != [["cat"]] then substitution
	else .done[1] as $cat
	| if some($cat.redirects[]; .[0] != "<<") then substitution
	else
		# a here-document's text, or else the first here-string's
		[limit(.ns - $ns; .stdins | recurse(.[0]; . != null) | .[1]) | select(.[1] == $cat.id)] as $mine
		| (first($mine[] | select(.[0] == "<<")) // ([$mine[] | select(.[0] == "<<<")] | last))
		| if . == null then substitution else .[2] end
	end end;

# The simple commands up to $stop (")" or "`"), or to the text's end, into .ret.
def parse($stop):
	# The text of ${...} ($close "}") or $((...)) ($close ")", after its
	# "(("), up to its end, into .ret; the $(...) and `...` in it run: their
	# commands go to .s. .xd: the ( open in $((...)); .xe: its end is read.
	def expansion($close):
		.i as $start | {xd, xe} as $outer
		| setpath(["xd"]; 0) | setpath(["xe"]; false)
		| until(.xe or .i >= .n;
			.t[.i] as $token
			| setpath(["i"]; .i + 1)
			| if $token == "$" and peek == "(" and .t[.i + 1] != "(" then
				setpath(["i"]; .i + 1) | parse(")") | add_chain("s")
			elif $token == "`" then parse("`") | add_chain("s")
			elif $token == "\\" then setpath(["i"]; .i + 1)
			elif $close == "}" and ($token | index("}") != null) then setpath(["xe"]; true)
			elif $close == ")" and $token == "(" then setpath(["xd"]; .xd + 1)
			elif $close == ")" and $token == ")" then
				if .xd > 0 then setpath(["xd"]; .xd - 1)
				else (if peek == ")" then setpath(["i"]; .i + 1) else . end) | setpath(["xe"]; true) end
			else . end)
		| setpath(["ret"]; .t[$start:.i] | add // "") | . + $outer;

	# What follows a $: $(...), $((...)), ${...}, $'...' or a name.
	def dollar:
		peek as $following
		| if $following == "(" then
			setpath(["i"]; .i + 1)
			| if peek == "(" then # $(( arithmetic )): a number
				setpath(["i"]; .i + 1) | expansion(")") | setpath(["p"]; [.p, "$((0))"])
			else .ns as $ns | parse(")") | add_chain("s") | setpath(["p"]; [.p, heredoc_text($ns)]) end
		elif $following | startswith("{") then # ${...} as written, up to its }
			expansion("}") | setpath(["p"]; [.p, "$" + .ret])
		elif $following == "'" then # $'...': escapes decoded as bash does
			setpath(["i"]; .i + 1)
			| .i as $start
			| until(.i >= .n or .t[.i] == "'"; setpath(["i"]; .i + (if .t[.i] == "\\" then 2 else 1 end)))
			| setpath(["p"]; [.p, (.t[$start:.i] | add // "" | ansi_c)])
			| setpath(["i"]; .i + 1)
		else setpath(["p"]; [.p, "$"]) end;

	def double_quoted:
		# the text up to the next " \ $ or `, taken at once
		.t as $t
		| (first(range(.i; .n) | select({"\"": 1, "\\": 1, "$": 1, "`": 1}[$t[.]] != null)) // .n) as $upto
		| (if $upto == .i then . else setpath(["p"]; [.p, ($t[.i:$upto] | add)]) | setpath(["i"]; $upto) end)
		| if .i >= .n then .
		else .t[.i] as $token
		| setpath(["i"]; .i + 1)
		| if $token == "\"" then .
		else
			(if $token == "\\" then
				peek as $following
				| if {"$": 1, "`": 1, "\"": 1, "\\": 1}[$following] != null then
					setpath(["i"]; .i + 1) | setpath(["p"]; [.p, $following])
				else setpath(["p"]; [.p, "\\"]) end
			elif $token == "$" then
				if peek == "'" then setpath(["p"]; [.p, "$"]) # "$'": no escapes inside double quotes
				else dollar end
			elif $token == "`" then parse("`") | add_chain("s") | setpath(["p"]; [.p, substitution])
			else setpath(["p"]; [.p, $token]) end)
			| double_quoted
		end end;

	# One word, quotes taken off, into .ret; its substitutions go to .s.
	def word($stop):
		def parts:
			if .i >= .n then .
			else .t[.i] as $token
			| if $token == $stop or ($token | ends_word or is_blank) then
				if $token == "(" and (.p != null and (.p[1] | endswith("="))) then
					# a=(x y): an array's words are data
					setpath(["i"]; .i + 1) | raw_until(")") | setpath(["p"]; [.p, "(" + .ret + ")"])
					| parts
				else . end
			else
				setpath(["i"]; .i + 1)
				| if $token == "'" then raw_until("'") | setpath(["p"]; [.p, .ret])
				elif $token == "\"" then double_quoted
				elif $token == "\\" then
					if peek != "" then setpath(["p"]; [.p, .t[.i]]) | setpath(["i"]; .i + 1) else . end
				elif $token == "$" then
					if peek == "\"" then . else dollar end # $"...": a double-quoted string
				elif $token == "`" then parse("`") | add_chain("s") | setpath(["p"]; [.p, substitution])
				else setpath(["p"]; [.p, $token]) end
				| parts
			end end;
		.p as $outer
		| setpath(["p"]; null) | parts | setpath(["ret"]; .p | items | add // "") | setpath(["p"]; $outer);

	# The word after a redirection operator ("" if there is none), into .ret.
	def target($stop):
		skip_blanks
		| peek as $token
		| if $token == "" or ($token | ends_word) or $token == $stop then setpath(["ret"]; "")
		else word($stop) end;

	def redirect($stop):
		.t[.i] as $first
		| (if .w != null and (.w[1] | is_number) and .t[.i - 1] == .w[1] then
			setpath(["w"]; .w[0]) # 2> file: the 2 belongs to the redirection
		else . end)
		| setpath(["i"]; .i + 1)
		| peek as $second
		| if $second == "(" then # <(...) or >(...): a process substitution, a word
			setpath(["i"]; .i + 1) | parse(")") | add_chain("s") | setpath(["w"]; [.w, substitution])
		elif $first == "<" and $second == "<" then
			setpath(["i"]; .i + 1)
			| if peek == "<" then # <<< word: a here-string
				setpath(["i"]; .i + 1) | target($stop) | setpath(["r"]; [.r, ["<<", .ret]])
				| setpath(["stdins"]; [.stdins, ["<<<", .cur, .ret]]) | setpath(["ns"]; .ns + 1)
			else
				(peek | startswith("-")) as $strip # <<-: leading tabs stripped
				| (if peek == "-" then setpath(["i"]; .i + 1) # <<- EOF
				elif $strip then .t[.i] |= .[1:] # <<-EOF
				else . end)
				| target($stop)
				| setpath(["heredocs"]; [.heredocs, [.cur, .ret, $strip]])
			end
		elif $second == "&" then # >&2 and <&0 copy a descriptor; >& FILE writes it
			setpath(["i"]; .i + 1)
			| target($stop)
			| if $first == ">" and (.ret | is_number or . == "-" | not) then setpath(["r"]; [.r, [">", .ret]])
			else . end
		else
			# >> and >| append or overwrite; <> reads and writes
			(($second == ">" or $second == "|") and $first == ">" or $second == ">" and $first == "<")
			as $two
			| (if $two then setpath(["i"]; .i + 1) else . end)
			| target($stop) | setpath(["r"]; [.r, [if $two then ">" else $first end, .ret]])
		end;

	# The text of the here-documents started on the line just ended.
	def read_heredocs:
		def lines($heredoc; $found):
			if .i >= .n then setpath(["ret"]; $found)
			else next("\n") as $j
			| (.t[.i:$j] | add // "") as $text
			| setpath(["i"]; $j + 1)
			| if $j >= .n then setpath(["ret"]; $found + [$text])
			elif ($text | if $heredoc[2] then sub("^\t+"; "") else . end) == $heredoc[1] then
				setpath(["ret"]; $found)
			else lines($heredoc; $found + [$text]) end
			end;
		reduce (.heredocs | items[]) as $heredoc (.;
			lines($heredoc; []) | setpath(["stdins"]; [.stdins, ["<<", $heredoc[0], (.ret | join("\n"))]])
			| setpath(["ns"]; .ns + 1))
		| setpath(["heredocs"]; null);

	# name() or function name: what follows is the function's body.
	def define($name):
		.nb as $id
		| setpath(["nb"]; $id + 1) | setpath(["fnames"]; [.fnames, $name])
		| setpath(["bodies"]; [.bodies, {id: $id, name: $name, scope: .scope}])
		| setpath(["open"]; [.open, {id: $id, depth: -1}]) | setpath(["cb"]; $id);

	# function NAME: the name is defined.
	def function_name($stop):
		skip_blanks
		| if peek != "" and (peek | ends_word | not) then word($stop) | define(.ret)
		else . end;

	# A word of the command; { and } in front open and close bodies.
	def add_word($word; $stop):
		if .nw == .kw and $word == "function" then function_name($stop)
		else
			(if .nw == .kw and ($word | is_keyword) then
				setpath(["kw"]; .kw + 1)
				| if $word == "{" then
					(if .open != null and .open[1].depth < 0 then
						setpath(["open", 1, "depth"]; .braces) # the body starts
					else . end)
					| setpath(["braces"]; .braces + 1)
				elif $word == "}" then
					setpath(["braces"]; [.braces - 1, 0] | max)
					| if .open != null and (.open[1].depth as $depth | $depth >= 0 and .braces <= $depth) then
						setpath(["closed"]; [.closed, .open[1].id]) | setpath(["open"]; .open[0])
					else . end
				else . end
			else . end)
			| setpath(["w"]; [.w, $word]) | setpath(["nw"]; .nw + 1)
		end;

	def simple_command($stop):
		# Whether the token $k is a plain word, taken whole (the usual case).
		def plain($t; $k):
			$t[$k] as $token
			| ($token | syntax | not) and $token != "function"
			and ($t[$k + 1] // " " | if . == "(" and ($token | endswith("=")) then false # a=(x y)
				else is_blank or ends_word or . == $stop end);
		def words:
			.t as $t
			# plain words and blanks, taken at once once a word that is not a
			# keyword has come
			| (if .nw == .kw and (.i >= .n or ($t[.i] | is_blank or is_keyword) or (plain($t; .i) | not))
			then .i
			else first(range(.i; .n) | select(($t[.] | is_blank) or plain($t; .) | not)) // .n end) as $upto
			| if $upto == .i then . else
				[range(.i; $upto) | select($t[.] | is_blank | not)] as $plain
				| setpath(["w"]; reduce $plain[] as $k (.w; [., $t[$k]]))
				| setpath(["nw"]; .nw + ($plain | length))
				| setpath(["i"]; $upto)
			end
			| if .i >= .n then .
			else .t[.i] as $token
			| if $token == $stop or {";": 1, "\n": 1, "|": 1, ")": 1}[$token] != null then .
			elif $token == "&" then
				if .t[.i + 1] == ">" then # &> and &>>: both outputs into a file
					setpath(["i"]; .i + 2) | (if peek == ">" then setpath(["i"]; .i + 1) else . end)
					| target($stop) | setpath(["r"]; [.r, [">", .ret]]) | words
				else . end
			else
				(if $token | is_blank then setpath(["i"]; .i + 1)
				elif $token == "<" or $token == ">" then redirect($stop)
				elif $token == "(" then
					setpath(["i"]; .i + 1) | skip_blanks
					| if .nw == .kw + 1 and peek == ")" then # name() { ...; }
						setpath(["i"]; .i + 1) | .w[1] as $name
						| setpath(["w"]; .w[0]) | setpath(["nw"]; .nw - 1) | define($name)
					elif .nw == .kw and .open != null and .open[1].depth < 0 then
						if peek == ")" then setpath(["i"]; .i + 1) # function name() { ...; }
						else # name() ( ... ): the body is a subshell
							.open[1].id as $id
							| setpath(["open", 1, "depth"]; .braces) | parse(")") | add_chain("found")
							# unless a } closed it: closed, with the bodies left open in it
							| (.open | until(. == null or .[1].id <= $id; .[0])) as $from
							| if $from != null and $from[1].id == $id then
								setpath(["closed"]; [.closed, $id]) | setpath(["open"]; $from[0])
							else . end
						end
					else parse(")") | add_chain("found") end # a subshell: its commands run
				elif ($token | startswith("#")) and starts_word then
					setpath(["i"]; next("\n")) # a comment
				elif ($token | syntax | not) and ends_after($token; $stop) then
					setpath(["i"]; .i + 1) # a plain word: the usual case, taken whole
					| add_word($token; $stop)
				else word($stop) | add_word(.ret; $stop) end)
				| words
			end end;
		{cur, w, r, s, nw, kw, cb} as $outer
		# nested: inside ( ), $( ), `` or <( ), where a cd does not last
		| {id: .ids, pipeline: .pipe, nested: (.depth > 1), scope} as $command
		| setpath(["cur"]; .ids) | setpath(["ids"]; .ids + 1)
		| setpath(["w"]; null) | setpath(["r"]; null) | setpath(["s"]; null)
		| setpath(["nw"]; 0) | setpath(["kw"]; 0) | setpath(["cb"]; .open[1].id)
		| words
		| if .w == null and .r == null then .
		else
			(.w | items) as $words
			| setpath(["found"]; [.found, $words])
			| setpath(["done"]; [.done, $command
				+ {words: $words, keywords: .kw, redirects: (.r | items), subs: (.s | items), body: .cb}])
		end
		| . + $outer;

	def commands:
		if .i >= .n then .
		elif now > .deadline then setpath(["too_slow"]; true) | setpath(["i"]; .n)
		else .t[.i] as $token
		| if $token == $stop then setpath(["i"]; .i + 1)
		else
			(if $token == "|" then # | and |& go on with the pipeline, || ends it
				setpath(["i"]; .i + 1)
				| if peek == "|" then setpath(["i"]; .i + 1) | new_pipeline
				elif peek == "&" then setpath(["i"]; .i + 1)
				else . end
			elif $token == ";" or $token == "&" or $token == "\n" or $token == ")" then
				setpath(["i"]; .i + 1) | new_pipeline | if $token == "\n" then read_heredocs else . end
			elif $token | is_blank then setpath(["i"]; .i + 1)
			else simple_command($stop) end)
			| commands
		end end;
	if .depth >= max_nesting then setpath(["too_deep"]; true) | setpath(["i"]; .n) | setpath(["ret"]; null)
	else
		{found, pipe, scope} as $outer
		# ( ), $( ), `` and <( ) start a subshell
		| setpath(["parents"]; [.parents, .scope]) | setpath(["scope"]; .scopes) | setpath(["scopes"]; .scopes + 1)
		| setpath(["depth"]; .depth + 1) | setpath(["found"]; null) | new_pipeline
		| commands
		| setpath(["depth"]; .depth - 1) | setpath(["ret"]; .found) | . + $outer
	end;

# The simple commands of a text, each with .subs as the words of its
# substitutions' commands, and the functions it defines.
def parsed($deadline):
	{t: tokens, deadline: $deadline, too_slow: false, i: 0, ids: 0, done: null, stdins: null, ns: 0, fnames: null, pipelines: 0, pipe: 0,
	 depth: 0, too_deep: false, heredocs: null, found: null, w: null, r: null, s: null, p: null, cur: null,
	 nw: 0, kw: 0, cb: null, scope: -1, scopes: 0, parents: null, bodies: null, nb: 0, open: null,
	 closed: null, braces: 0, xd: 0, xe: false}
	| setpath(["n"]; (.t | length))
	| parse("")
	# a here-document sets a command's stdin; a here-string, when none has yet
	| (reduce (.stdins | items[]) as [$kind, $id, $text] ({};
		($id | tostring) as $key
		| if $kind == "<<<" and has($key) then . else setpath([$key]; $text) end)) as $stdin
	| ([.closed | items[] | {key: tostring, value: true}] | from_entries) as $closed
	| {too_deep, too_slow, parents: (.parents | items),
	   functions: ([.fnames | items[] | {key: ., value: true}] | from_entries),
	   bodies: [.bodies | items[] | select($closed[.id | tostring])],
	   commands: [.done | items[] | .stdin = $stdin[.id | tostring]]};

# --- Where a path points -------------------------------------------------------------

# The parts of an absolute path, with . and .. worked out.
def normal:
	reduce (split("/")[] | select(. != "" and . != ".")) as $part ([];
		if $part == ".." then .[:-1] else . + [$part] end);

def climbs_out:
	some(foreach (split("/")[] | select(. != "" and . != ".")) as $part (0;
		if $part == ".." then . - 1 else . + 1 end); . < 0);

def is_wildcard:
	index("*") != null and (explode | until(.[0] != 46; .[1:]) | every(.[]; . == 42 or . == 63));

# The class of a path: inside, temp, remote, or one of the unsafe ones. $c
# holds here (where relative paths start, null: not known), project (the
# project folder's parts) and temp (the temp folders' parts).
def where($c):
	if . == "" or . == "{}" then "inside"
	else
		(if . == "$HOME" or startswith("$HOME/") then "~" + .[5:]
		elif . == "${HOME}" or startswith("${HOME}/") then "~" + .[7:]
		else . end)
		| if index("$") != null or index("{") != null and index(",") != null then "unknown"
		elif startswith("~") then
			if . != "~" and (startswith("~/") | not) then "home" # ~user
			elif (.[1:] | normal | length <= 1) or (.[2:] | climbs_out) then "home"
			else "outside" end
		elif (startswith("/") | not) and (split("/")[0] | index(":") != null) then
			"remote" # host:path
		else
			(startswith("/") | not) as $relative
			| if $relative and $c.here == null then "unknown"
			else
				(if $relative then $c.here + "/" + . else . end | normal) as $parts
				| ($c.project | length) as $length
				| if $parts == [] or ($parts | length) == 1 and ($parts[0] | is_wildcard) then "root"
				elif $parts[:$length] == $c.project then
					$parts[$length:] as $rest
					| if $rest == [] or ($rest | length) == 1 and ($rest[0] | is_wildcard) then "project"
					else "inside" end
				elif $relative and $c.here == "/" + ($c.project | join("/")) then
					"parent" # climbed out of the project
				elif ($parts | length) == 1 then "system"
				elif some($c.temp[]; . as $top
					| $parts[:$top | length] == $top and ($parts | length) > ($top | length))
				then "temp"
				else "outside" end
			end
		end
	end;

# A word, and the file it names in @file, name=@file and --opt=file.
def secret_forms:
	[., (if startswith("@") then .[1:] else empty end),
	 (if index("=@") != null then after("=@")
	 elif startswith("--") and index("=") != null then after("=")
	 else empty end)]
	| map(if startswith("$HOME/") then "~" + .[5:]
		elif startswith("${HOME}/") then "~" + .[7:]
		else . end);

# --- The rules ---------------------------------------------------------------------

# Stops reading the rules: the file `$file` $problem, so the guard refuses
# every bash command, saying why (see guard_setup).
def unusable($file; $problem):
	error({unusable: {rule: "unreadable-rules",
		reason: "\($file) \($problem), so the guard refuses every command",
		instead: (if $problem | startswith("is missing") and ($file == "zot/guard/guard-rules.json" or $file == "guard-policy.json" | not) then
				"restore \($file) (from a submodule: git submodule update --init), or take it out of \"include\" in guard-policy.json"
			elif $problem | startswith("is missing") then "restore \($file) (git checkout \($file), or copier update)"
			elif $problem | startswith("includes ") then "name a file inside the extension's folder, relative to it"
			elif $problem | startswith("has an \"include\" that is not") then
				"fix guard-policy.json (\"include\": [\"team-policy/guard-policy.json\"])"
			elif $problem | startswith("has an \"include\" of its own") then
				"move the files \($file) includes into guard-policy.json's \"include\""
			elif $problem | endswith("over the guard's limit of 1 MiB") then
				"keep \($file) under 1 MiB (fewer rules, or broader patterns)"
			else "fix \($file) (./smoke-test points at the problem)" end)}});

# The rules file $file as it is, or unusable when one of its rules or lists
# has an empty pattern, which no two engines would read alike.
def no_empty_pattern($file):
	def empty_in: type == "array" and any(.[]; . == "");
	(first((.rules | if type == "array" then .[] else empty end | objects
		| select(any(.[]; empty_in)) | "rule \(.id | tojson)"),
	  (.lists | if type == "object" then to_entries[] else empty end
		| select(.value | empty_in) | "list \(.key | tojson)")) // null) as $bad
	| if $bad then unusable($file; "has an empty pattern in \($bad)") else . end;

# The keys of guard-rules.json a policy adds to: objects merged name by name,
# lists extended ("lists" and "option values" are read on their own).
def adds_to: "classes", "code", "find", "one dash or two", "programs", "shells", "wrappers";
# What a policy's new entry of "code" or "wrappers" may hold (a wrapper of
# the template's may hold these too).
def new_entry:
	{code: [],
	 wrappers: {"options with value": [], "bare options": [], args: 0, assignments: false, "adds args": false}};

# What is wrong with a policy's value . at $where (keys joined by /), where
# guard-rules.json has $form; a new name may be given when $entry (the form
# of one) is: "" if nothing is.
def form_problem($form; $where; $entry):
	($form | type) as $kind
	| if $kind == "array" then
		if type == "array" and every(.[]; type == "string") then "" else "has \"\($where)\" that is not a list of names" end
	elif $kind == "boolean" then
		if type == "boolean" then "" else "has \"\($where)\" that is not true or false" end
	elif $kind == "number" then # a whole number from 0 to 100 (1.0 is one): how many words to pass
		if type == "number" and . >= 0 and . <= 100 and . == floor then ""
		else "has \"\($where)\" that is not a whole number from 0 to 100" end
	elif $kind == "string" then
		if type == "string" then "" else "has \"\($where)\" that is not a text" end
	elif type != "object" then "has \"\($where)\" that is not an object"
	else
		. as $value
		| first(keys[] as $key
			| $form[$key] as $known
			| (if ($entry | type) == "object" and ($known | type) == "object" then $entry + $known
			elif $known == null then $entry
			else $known end) as $known
			| if $known == null then "has a key the guard does not read: \"\($where)/\($key)\""
			else $value[$key] | form_problem($known; "\($where)/\($key)"; null) end
			| select(. != ""))
		// ""
	end;

# The policy file $file as it is, or unusable when it has a key the guard
# does not read (one of $known: {KEY: true}), or a key's value of the wrong
# type (for what it adds to guard-rules.json, $template: the type there).
def policy_keys($file; $known; $template):
	def names: type == "array" and every(.[]; type == "string");
	def lists: type == "object" and every(.[]; names);
	(first(keys[] | select($known[.] == null)) // null) as $unknown
	| if $unknown != null then unusable($file; "has a key the guard does not read: \"\($unknown)\"")
	elif has("off") and (.off | names | not) then unusable($file; "has an \"off\" that is not a list of rule ids")
	elif has("rules") and (.rules | type == "array" and every(.[]; type == "object") | not) then
		unusable($file; "has \"rules\" that is not a list of rules")
	elif has("lists") and (.lists | lists | not) then
		unusable($file; "has \"lists\" that is not an object of lists of names")
	elif has("option values") and (.["option values"] | lists | not) then
		unusable($file; "has \"option values\" that is not an object of lists of options")
	else
		. as $policy
		| (first(adds_to as $key | select($policy | has($key))
			| ($template[$key] // (if $key == "one dash or two" then [] else {} end)
				# of "programs", only its languages' lists: "runs", ...
				| if $key == "programs" then {languages: (.languages // {})} else . end) as $form
			| $policy[$key] | form_problem($form; $key; new_entry[$key]) | select(. != ""))
			// null) as $problem
		| if $problem != null then unusable($file; $problem) else . end
	end;

# The keys a policy file may have (an included one: all but "include").
def policy_known:
	{about: true, include: true, lists: true, off: true, "option values": true, rules: true}
	+ reduce adds_to as $key ({}; setpath([$key]; true));

# A policy's value $more added to the one before (.): objects merged name by
# name, lists extended; anything else replaces.
def added($more):
	if type == "object" and ($more | type) == "object" then
		reduce ($more | keys_unsorted[]) as $key (.; setpath([$key]; .[$key] | added($more[$key])))
	elif type == "array" and ($more | type) == "array" then . + $more
	else $more end;

# --- Code run by an interpreter ---------------------------------------------------
#
# python -c CODE, node -e CODE, perl -e CODE, ruby -e CODE, or a program read
# from a here-document: the guard reads the program's tokens (names, string
# literals, punctuation), not its meaning. A call of guard-rules.json's
# "programs" that runs a command is judged as that command (one string as
# bash -c STRING), and one that deletes files as rm with the call's paths.

def program_grammars: "python", "node", "perl", "ruby";
# A program with more calls that run commands or delete files is refused:
# checking it could take too long. A call's arguments are read up to
# max_call_tokens tokens.
def max_calls: 64;
def max_call_tokens: 128;
def too_many_calls:
	{rule: "too-many-calls",
	 reason: "a program with more than \(max_calls) calls that run commands or delete files, too many to check",
	 instead: "write the script to a file and run that"};
def closing: {"(": ")", "[": "]", "{": "}", "<": ">", "/": "/", "|": "|", "!": "!"};
# Words that end a perl or ruby call written without ( ): system "ls" if $x
def call_ends: {"if": 1, "unless": 1, "or": 1, "and": 1, "do": 1, "while": 1, "until": 1};
def is_word_start: .[0:1] | . == "_" or (. >= "a" and . <= "z") or (. >= "A" and . <= "Z");
def program_piece: "(?:\\.|::)?[A-Za-z_][A-Za-z0-9_]*(?:(?:\\.|::)[A-Za-z_][A-Za-z0-9_]*)*|=>|==|\\\\[\\s\\S]|[ \\t]+|[\\s\\S]";

# A program cut into names (os.system, .execSync, File::Path::rmtree), => and
# ==, escapes, runs of blanks, and single characters. Long text is first cut
# about every 256 characters where no piece goes on (jq 1.6 counts each
# match's place from the start of the text); a run of blanks cut in two is
# read the same.
def program_pieces:
	def word_start($x): $x != null and ($x == 95 or ($x >= 97 and $x <= 122) or ($x >= 65 and $x <= 90));
	def word($x): word_start($x) or ($x != null and $x >= 48 and $x <= 57);
	def cut_at($c; $p):
		$c[$p - 1] as $a | $c[$p] as $b
		| if $a == 92 then false
		elif word($a) then (word($b) | not) and ($b != 46 or (word_start($c[$p + 1]) | not))
			and ($b != 58 or $c[$p + 1] != 58 or (word_start($c[$p + 2]) | not))
		elif $a == 46 or $a == 58 then (word_start($b) | not) and $b != 58
		elif $a == 61 then $b != 61 and $b != 62
		else true end;
	if length < 512 then [match(program_piece; "g").string]
	else
		explode as $c | ($c | length) as $n
		| [0, (range(256; $n; 256) as $b
			| first(range($b; [$b + 256, $n] | min) | select(cut_at($c; .))) // empty), $n] as $cuts
		| [range(0; ($cuts | length) - 1) as $k | $c[$cuts[$k]:$cuts[$k + 1]] | implode
			| match(program_piece; "g").string]
	end;

# "programs" of guard-rules.json, made ready for find_program.
def programs_ready:
	(.languages // {}) as $languages
	| [program_grammars as $g | ($languages[$g].names // [])[] | strings] as $names
	| {"delete as": (.["delete as"] // {}),
	   names: ($names | patterns),
	   # the first letters of those names (null: any), a quick test before fits
	   initials: (if any($names[]; startswith("*")) then null else [$names[] | .[0:1]] | as_set end),
	   languages: (reduce program_grammars as $g ({}; setpath([$g];
		($languages[$g] // {})
		| {names: ((.names // []) | patterns), code: (.code // []),
		   "with value": ((.["options with value"] // []) | as_set), last: (.["last option"] // []),
		   attached: (.["code attached"] != false), "path objects": ((.["path objects"] // []) | patterns),
		   runs: ((.runs // []) | patterns), deletes: ((.deletes // []) | patterns),
		   "deletes files": ((.["deletes files"] // []) | patterns)})))};

# Whether the option . is one of $wanted, as {value}: its value when it is in
# the word (-cCODE, --eval=CODE; null: the next word); null when it is not.
def code_option_value($wanted; $with_value):
	. as $arg
	| if startswith("--") then
		first($wanted[] as $option
			| if $arg == $option then {value: null}
			elif ($option | startswith("--")) and ($arg | startswith($option + "=")) then
				{value: $arg[($option | length) + 1:]}
			else empty end) // null
	else
		explode as $letters
		| first(range(1; $letters | length) as $k
			| ("-" + ([$letters[$k]] | implode)) as $letter
			| if any($wanted[]; . == $letter) then
				{value: (if $k + 1 < ($letters | length) then $letters[$k + 1:] | implode else null end)}
			elif $with_value[$letter] then {stop: true} # the rest is that option's value
			else empty end)
			// {stop: true}
		| if .stop then null else . end
	end;

# The program a run of an interpreter runs: the values of its code options
# (python -c CODE), or $stdin, the text it reads, when it reads its program
# there (python3 <<EOF, perl <<< CODE, echo CODE | ruby); null when there is
# none.
def program_code($spec; $stdin):
	. as $run
	| .args as $args | ($args | length) as $n
	| {i: 0, codes: [], script: null, stop: false, last: false}
	| until(.stop or .i >= $n;
		$args[.i] as $arg | setpath(["i"]; .i + 1)
		| if $arg == "--" then setpath(["script"]; $args[.i]) | setpath(["stop"]; true)
		elif $arg | is_option | not then setpath(["script"]; $arg) | setpath(["stop"]; true)
		else
			($arg | code_option_value($spec.code; $spec["with value"])
				| if . and $spec.attached == false and ($arg | startswith("--") | not) then {value: null} # node -pe CODE
				else . end) as $found
			| if $found then
				if $found.value != null then setpath(["codes"]; .codes + [$found.value])
				elif .i < $n then setpath(["codes"]; .codes + [$args[.i]]) | setpath(["i"]; .i + 1)
				else . end
			elif $arg | code_option_value($spec.last; $spec["with value"]) then # python -m MODULE ...
				setpath(["last"]; true) | setpath(["stop"]; true)
			elif $arg | takes_value($spec["with value"]) then setpath(["i"]; .i + 1)
			else . end
		end)
	| if .codes != [] then .codes | join("\n")
	elif .last then null
	elif $stdin != null and (.script == null or .script == "-" or .script == "/dev/stdin") then $stdin
	else null end;

# A program's tokens, [KIND, TEXT]: "n" a name, "s" a string literal's value,
# "x" a command literal's (`...`, qx(...), %x(...)), "p" punctuation.
def program_tokens($g):
	program_pieces as $p
	| ($p | length) as $n
	| ($g == "node") as $node
	| ($g == "perl" or $g == "ruby") as $perlish
	| def at($k): $p[$k] // "";
	def emit($token): setpath(["out"]; [.out, $token]);
	def add($text): setpath(["v"]; [.v, $text]);
	def ended: emit([.q.kind, ([.v | items[]] | join(""))]) | setpath(["q"]; null);
	# a literal from piece $k, after its opening $quote, started with $prefix:
	# r, f, ... (python), q, qq, qx (perl), %q, %Q, %x (ruby)
	def open($k; $quote; $prefix):
		(if {"q": 1, "Q": 1, "x": 1}[$prefix[-1:]] then closing[$quote] // $quote else $quote end) as $close
		| ($g == "python" and at($k) == $quote and at($k + 1) == $quote) as $triple
		| (($quote == "'" and $perlish) or $prefix == "q" or $prefix == "%q") as $single
		| setpath(["i"]; if $triple then $k + 2 else $k end)
		| setpath(["v"]; null)
		| setpath(["q"]; {close: $close, triple: $triple, single: $single,
			raw: ($g == "python" and ($prefix | index("r")) != null),
			kind: (if ($quote == "`" and $perlish) or $prefix == "qx" or $prefix == "%x" then "x" else "s" end),
			interpolates: (($single | not) and ($perlish or ($node and $quote == "`")
				or ($g == "python" and ($prefix | index("f")) != null)))});
	def outside($k):
		$p[$k] as $piece | at($k + 1) as $following
		| setpath(["i"]; $k + 1)
		| if $piece[0:1] == " " or $piece[0:1] == "\t" or $piece == "\r" then .
		elif $piece == "\n" then (if $perlish then emit(["p", ";"]) else . end) # a line ends a statement
		elif ($piece == "#" and ($node | not)) or ($node and $piece + $following == "//") then
			setpath(["i"]; first(range($k + 1; $n) | select($p[.] == "\n")) // $n) # a comment
		elif $node and $piece + $following == "/*" then
			setpath(["i"]; (first(range($k + 2; $n) | select($p[. - 1] == "*" and $p[.] == "/")) // $n) + 1)
		elif $piece == "'" or $piece == "\"" or $piece == "`" then
			if $g == "python" and $piece == "`" then emit(["p", $piece]) else open($k + 1; $piece; "") end
		elif $g == "python" and ($following == "'" or $following == "\"")
			and {"r": 1, "u": 1, "b": 1, "f": 1, "br": 1, "rb": 1, "fr": 1, "rf": 1}[$piece | ascii_downcase]
		then open($k + 2; $following; $piece | ascii_downcase)
		elif $g == "perl" and ($piece == "q" or $piece == "qq" or $piece == "qx") and closing[$following] then
			open($k + 2; $following; $piece)
		elif $g == "ruby" and $piece == "%" and ($following == "x" or $following == "q" or $following == "Q")
			and closing[at($k + 2)]
		then open($k + 3; at($k + 2); "%" + $following)
		elif ($piece | is_word_start) or (($piece[0:1] == "." or $piece[0:1] == ":") and ($piece | length) > 1) then
			emit(["n", $piece])
		else emit(["p", $piece]) end;
	def inside($k):
		$p[$k] as $piece | at($k + 1) as $following | .q as $q
		| setpath(["i"]; $k + 1)
		| if $piece == $q.close and (($q.triple | not) or (at($k + 1) == $q.close and at($k + 2) == $q.close)) then
			(if $q.triple then setpath(["i"]; $k + 3) else . end) | ended
		elif $piece[0:1] == "\\" and ($piece | length) > 1 then
			$piece[1:] as $escaped
			| if $q.raw or ($q.single and $escaped != "\\" and $escaped != $q.close) then add($piece)
			elif $escaped == "n" then add("\n")
			elif $escaped == "t" then add("\t")
			else add($escaped) end
		elif $q.interpolates | not then add($piece)
		elif $g == "python" and ($piece == "{" or $piece == "}") and $following == $piece then
			add($piece) | setpath(["i"]; $k + 2) # {{ and }} in an f-string
		elif ($piece == "{" and $g == "python")
			or ($following == "{" and (($piece == "$" and ($g == "node" or $g == "perl"))
				or ($piece == "#" and $g == "ruby") or ($piece == "@" and $g == "perl")))
		then # {...}, ${...}, #{...}: a value the code computes
			setpath(["i"]; (first(range($k + 1; $n) | select($p[.] == "}")) // $n) + 1) | add("$_")
		elif $g == "perl" and ($piece == "$" or $piece == "@") and ($following | is_word_start) then
			add("$_") | setpath(["i"]; $k + 2) # "$dir/x": a variable's value
		else add($piece) end;
	reduce range(0; $n) as $k ({i: 0, out: null, q: null, v: null};
		if $k < .i then . elif .q then inside($k) else outside($k) end)
	| if .q then ended else . end
	| [.out | items[]];

# The tokens with each path object made of a string (Path("x")) as that string.
def with_paths($spec):
	. as $t | ($t | length) as $n
	| [range(3; $n) as $i | select($t[$i - 3][0] == "n" and $t[$i - 2] == ["p", "("] and $t[$i - 1][0] == "s"
		and $t[$i] == ["p", ")"] and ($t[$i - 3][1] | fits($spec["path objects"]))) | $i - 3] as $at
	| if $at == [] then $t
	else
		# (the four tokens of one never overlap those of another)
		(reduce ($at[] | [., "start"], ((. + 1, . + 2, . + 3) | [., "in"])) as [$k, $r] ({};
			setpath([$k | tostring]; $r))) as $role
		| [range(0; $n) as $i | $role[$i | tostring] as $r
			| if $r == "in" then empty elif $r == "start" then $t[$i + 2] else $t[$i] end]
	end;

# The arguments of a call whose name ends before the token $i of $t, each a
# list of tokens; null when the name is not called there.
def call_args($t; $i; $g):
	($t[$i] == ["p", "("]) as $parens
	| if ($parens | not) and $g != "perl" and $g != "ruby" then null
	else
		(if $parens then $i + 1 else $i end) as $start
		| ($t | length) as $n
		| def add($token): setpath(["args", (.args | length) - 1]; .args[-1] + [$token]);
		{j: $start, args: [[]], depth: 0, done: false}
		| until(.done or .j >= $n;
			if .j - $start == max_call_tokens then # the rest: taken as computed
				add(["p", "..."]) | setpath(["done"]; true)
			else
				$t[.j] as $token | setpath(["j"]; .j + 1)
				| ($token[0] == "p") as $punct | $token[1] as $text
				| if $punct and ($text == "(" or $text == "[" or $text == "{") then
					setpath(["depth"]; .depth + 1) | add($token)
				elif $punct and ($text == ")" or $text == "]" or $text == "}") then
					if .depth == 0 then setpath(["done"]; true) else setpath(["depth"]; .depth - 1) | add($token) end
				elif $punct and $text == ";" then # (a line break inside ( ) or [ ])
					if .depth == 0 and ($parens | not) then setpath(["done"]; true) else . end
				elif .depth == 0 and $punct and $text == "," then setpath(["args"]; .args + [[]])
				elif .depth == 0 and ($parens | not) and $token[0] == "n" and call_ends[$text] then
					setpath(["done"]; true)
				else add($token) end
			end)
		| .args
	end;

# Whether an argument can be a command's word or a path: not an object or
# hash ({...}), a function (=>, function, lambda), or a keyword argument
# (shell=True, exception: true).
def is_value:
	length > 0 and .[0] != ["p", "{"]
	and (any(.[]; . == ["p", "=>"] or . == ["n", "function"] or . == ["n", "lambda"]) | not)
	and (length > 1 and .[0][0] == "n" and (.[1] == ["p", "="] or .[1] == ["p", ":"]) | not);

# The text of string literals, with $_ for what the code computes.
def value_of:
	reduce .[] as $token ({out: "", computed: false};
		if $token[0] == "s" then setpath(["out"]; .out + $token[1]) | setpath(["computed"]; false)
		elif .computed then .
		else setpath(["out"]; .out + "$_") | setpath(["computed"]; true) end)
	| .out;

# [whether an argument is a list ([...]), its values]
def arg_values:
	if .[0] == ["p", "["] and .[-1] == ["p", "]"] then
		[true, (reduce .[1:-1][] as $token ({items: [[]], depth: 0};
			($token[0] == "p") as $punct
			| if $punct and ($token[1] == "(" or $token[1] == "[" or $token[1] == "{") then
				setpath(["depth"]; .depth + 1)
			elif $punct and ($token[1] == ")" or $token[1] == "]" or $token[1] == "}") then
				setpath(["depth"]; .depth - 1)
			else . end
			| if .depth == 0 and $token == ["p", ","] then setpath(["items"]; .items + [[]])
			else setpath(["items", (.items | length) - 1]; .items[-1] + [$token]) end)
			| [.items[] | select(length > 0) | value_of])]
	else [false, [value_of]] end;

# A value as one word in shell code (what xargs or parallel read stays unknown).
def shell_quoted: if . == input_word then . else "'" + (split("'") | join("'\\''")) + "'" end;

# The shell code of the calls in the program's tokens that run a command or
# delete files; null when there are too many to check.
def program_commands($spec; $g; $delete_as):
	. as $t | ($t | length) as $n
	# what each name calls, asked once a name
	| (reduce ([$t[] | select(.[0] == "n") | .[1]] | unique[]) as $name ({};
		setpath([$name];
			first(("runs", "deletes", "deletes files") as $k | select($name | fits($spec[$k])) | $k) // null)))
		as $kinds
	| {i: 0, calls: 0, found: [], over: false}
	| until(.over or .i >= $n;
		.i as $i | $t[$i] as $token | setpath(["i"]; $i + 1)
		| if $token[0] == "x" then # `...`: run by a shell
			if .calls >= max_calls then setpath(["over"]; true)
			else setpath(["calls"]; .calls + 1) | setpath(["found"]; .found + [$token[1]]) end
		elif $token[0] != "n" then .
		else
			$kinds[$token[1]] as $what
			| if $what == null then .
			else
				call_args($t; $i + 1; $g) as $args
				| if $args == null then .
				elif .calls >= max_calls then setpath(["over"]; true)
				else
					setpath(["calls"]; .calls + 1)
					| (if ($token[1] | startswith(".")) and $what != "runs" and $i > 0 and $t[$i - 1][0] == "s" then
						[[false, [$t[$i - 1][1]]]] # Path("x").unlink()
					else [$args[] | select(is_value) | arg_values] end) as $values
					| [$values[][1][]] as $words
					| if $what == "runs" and ($values | length) == 1 and ($values[0][0] | not) then
						setpath(["found"]; .found + [$words[0]]) # one string: a shell runs it
					elif $words != [] then
						setpath(["found"]; .found
							+ [(if $what == "runs" then [] else $delete_as[$what] // [] end) + $words
								| map(shell_quoted) | join(" ")])
					else . end
				end
			end
		end)
	| if .over then null else .found end;

# The grammar of interpreter . ("programs" made ready), or null.
def program_grammar($programs):
	. as $name | first(program_grammars as $g | select($name | fits($programs.languages[$g].names)) | $g) // null;

# Adds to the run's code what program $code of grammar $g hands to a shell or
# runs, and the files it deletes, as shell code (too many calls: a refusal).
def read_program($code; $g; $programs):
	$programs.languages[$g] as $spec
	| ($code | program_tokens($g) | with_paths($spec) | program_commands($spec; $g; $programs["delete as"]))
		as $found
	| if $found != null then setpath(["code"]; .code + $found)
	elif .refusal == null then setpath(["refusal"]; too_many_calls)
	else . end;

# The commands a program run by python -c, node -e, ... hands to a shell or
# runs, and the files it deletes, added to the run's code as shell code.
def find_program($data):
	$data.programs as $programs
	| (.name | program_grammar($programs)) as $g
	| if $g == null then .
	else
		program_code($programs.languages[$g]; .command.stdin) as $code
		| if $code == null then . else read_program($code; $g; $programs) end
	end;

# A rules file read: . is its text, null when it is missing or cannot be read,
# or its size when it is over 1 MiB, too large to read.
def rules_file($name):
	if . == null then unusable($name; "is missing or cannot be read")
	elif type == "number" then unusable($name; "is \(.) bytes, over the guard's limit of 1 MiB")
	# (in an array: an error further on must not land in this catch)
	else [try {value: fromjson} catch {bad: .}][0] as $read
		| if $read | has("bad") then unusable($name; "is not valid JSON (\($read.bad))")
		else $read.value end end;

# The team's policy files guard-policy.json (.[0]) names in "include", in
# order: $named.guard_include_N is the text of the Nth (as rules_file takes
# it); .[1] is guard-rules.json.
def included($named):
	.[1] as $template
	| (.[0].include | if . == null then [] else . end) as $paths
	| if ($paths | type) != "array" or any($paths[]; type != "string" or . == "") then
		unusable("guard-policy.json"; "has an \"include\" that is not a list of file paths")
	else first(($paths[] | select(startswith("/") or any(split("/")[]; . == ".."))), null) as $outside
	| if $outside then unusable("guard-policy.json"; "includes \($outside | tojson), outside the extension's folder")
	else [range($paths | length) as $i | $paths[$i] as $path | $named["guard_include_\($i)"] | rules_file($path)
		| if type != "object" then unusable($path; "does not hold a JSON object")
		elif has("include") then unusable($path; "has an \"include\" of its own (an included file cannot include)")
		else no_empty_pattern($path) | policy_keys($path; policy_known | del(.include); $template) end] end end;

# guard-rules.json ($rules) with the changes of the files guard-policy.json
# ($policy) includes (included, given guard-policy.json) and of guard-policy.json,
# all objects, made ready for check: every @name in a rule's lists expanded, and
# each list of patterns prepared for fits.
def guard_policy($rules; $policy; included):
	($rules | if type == "object" then . else unusable("zot/guard/guard-rules.json"; "does not hold a JSON object") end
		| no_empty_pattern("zot/guard/guard-rules.json"))
	as $data
	| ($policy | if type == "object" then . else unusable("guard-policy.json"; "does not hold a JSON object") end
		| no_empty_pattern("guard-policy.json") | policy_keys("guard-policy.json"; policy_known; $data))
	as $own
	| ([$data] + ([$own, $data] | included) + [$own]) as $layers
	# what the policy files add to guard-rules.json's classes, code, ...
	| (reduce ($layers[1:][] as $layer | adds_to as $key | select($layer | has($key)) | [$key, $layer[$key]])
		as [$key, $more] ($data; setpath([$key]; .[$key] | added($more))))
	as $data
	# a list replaces the one of its name before; a file's off holds for it and those before
	| (reduce $layers[] as $layer ({}; . + ($layer.lists // {}))) as $lists
	| ([foreach ($layers | reverse[]) as $layer ({}; . + (($layer.off // []) | map(tostring) | as_set);
		. as $off | [($layer.rules // [])[] | select((.id | tostring) as $id | $off[$id] | not)])]
		| reverse | add) as $kept
	| def expand($depth):
		if $depth > 100 then error("a list of guard-rules.json names itself") else
		[.[] | if type == "string" and startswith("@") then ($lists[.[1:]] // []) | expand($depth + 1)[]
		else . end] end;
	($kept
		| map(if any(.[]; type == "array" and any(.[]; type == "string" and startswith("@"))) then
				with_entries(if .value | type == "array" then .value |= expand(0) else . end)
			else . end))
	as $list
	| ($data.classes // {}) as $classes
	| ($data.code // {}) as $code
	| {rules: [$list | to_entries[] | .value + {
			at: .key,
			"command patterns": (.value.command | if type == "array" then patterns else null end),
			subcommands: (.value.subcommand | if type == "array" then as_set else null end),
			"fits": (.value as $rule | reduce ("arg", "runs output of", "piped to") as $field ({};
				if $rule | has($field) then setpath([$field]; $rule[$field] | patterns) else . end))}],
	   wrappers: ($data.wrappers // {}),
	   code: $code,
	   "code globs": [$code | to_entries[] | select(.key | index("*") != null)
		| {parts: (.key | split("*")), options: .value}],
	   shells: (($data.shells // []) | patterns),
	   # the programs whose options take one dash or two alike (terraform -destroy, --destroy)
	   "one dash or two": (($data["one dash or two"] // []) | patterns),
	   programs: ($data.programs // {} | programs_ready),
	   # {NAME: {OPTION: true}}: the options of NAME that take the next word,
	   # from every file (a policy adds to them)
	   "option values": (reduce ($layers[] | .["option values"] // {} | to_entries[]) as $entry ({};
		setpath([$entry.key]; (.[$entry.key] // {}) + ($entry.value | as_set)))),
	   temp: [($classes.temp // [])[] | normal],
	   # find's tests that narrow what it finds to FOLDER/NAME, and those that undo it
	   find: ($data.find // {} | {narrowed: .["narrowed by"], widened: .["widened by"]}
		| map_values(. // [] | map(select(type == "string") | {key: ., value: true}) | from_entries)),
	   devices: (($classes.device // []) | patterns),
	   secrets: (($classes.secret // []) | patterns),
	   "not secrets": (($classes["not secret"] // []) | patterns)}
	# the lists of interpreters "piped to" asks about (the shells first), each rule knowing its own
	| setpath(["piped lists"]; [.shells] + [.rules[] | .fits["piped to"] | values])
	| setpath(["rules"]; [foreach .rules[] as $rule (0;
		if $rule.fits["piped to"] then . + 1 else . end;
		if $rule.fits["piped to"] then $rule + {"piped list": .} else $rule end)])
	# (grouped, not added one by one: jq 1.6 would copy the object each time)
	| setpath(["named"]; [.rules[] | .at as $at | .["command patterns"].exact // {} | keys[] | [., $at]]
		| reduce group_by(.[0])[] as $group ({}; setpath([$group[0][0]]; $group | map(.[1]))))
	| setpath(["unnamed"]; [.rules[] | select(.command == null or (.["command patterns"].globs != []))]);

# The rules for the command name ., in order: those that name it, and those
# that name no command or one that fits with a *.
def rules_for($data):
	. as $name
	| [$data.unnamed[] | select(.command == null or (.["command patterns"] as $p | $name | fits($p)))]
	| if $data.named[$name] then . + [$data.rules[$data.named[$name][]]] | unique_by(.at) else . end;

# The rules for check from the text of guard-rules.json, guard-policy.json and
# the files it includes ($named.guard_rules, $named.guard_policy and
# $named.guard_include_N, as rules_file takes them).
def guard_data($named):
	guard_policy($named.guard_rules | rules_file("zot/guard/guard-rules.json");
		$named.guard_policy | rules_file("guard-policy.json"); included($named));

# --- Checking -----------------------------------------------------------------------
#
# $c is the checker: the policy ($c.data) and the project (see where); its
# .here changes with each cd, and .again counts the words of commands judged
# again (see max_again). A run is a simple command behind its wrappers:
# {name ("" for redirections only), args, command, code (the shell code it
# runs: sh -c CODE, eval ..., a here-document), execs (find's -exec ... ;)}.

def has_class($c; $classes):
	. as $word
	| some($classes[]; . == "secret")
		and (secret_forms | some(.[]; fits($c.data.secrets))
			and (some(.[]; fits($c.data["not secrets"])) | not))
	or some($classes[]; . == "device") and fits($c.data.devices)
	or some($classes[]; . != "secret" and . != "device")
		and (where($c) as $class | some($classes[]; . == $class));

# The options after which a shell or interpreter takes its code (-c).
def code_options($data):
	. as $name
	| if $data.code | has($name) then $data.code[$name]
	else
		first($data["code globs"][] | select(.parts as $parts | $name | glob_fits($parts)) | .options)
		// []
	end;

# The words before the first option (find's paths).
def leading: first(range(length) as $i | select(.[$i] | is_option or . == "(" or . == "!") | .[:$i])
	// .;

# find's folders first in its words (narrowed to NAME by -name NAME), its
# tests after them, and the commands of its -exec ... ; apart.
def find_paths($data):
	.args as $args
	| ($args | length) as $n
	# -H, -L, -P, -D opts, -O3: options before the folders
	| ({i: 0} | until(.i >= $n or {"-H": 1, "-L": 1, "-P": 1, "-D": 1, "-O": 1}[$args[.i][0:2]] == null;
		.i += (if $args[.i] == "-D" then 2 else 1 end)) | .i) as $start
	| (first(range($start; $n) | select($args[.] | is_option or . == "(" or . == "!")) // $n) as $tests_at
	| [foreach range($tests_at; $n) as $i ({skip: 0};
		if .skip > 0 then .skip -= 1 | .out = null
		elif {"-exec": 1, "-execdir": 1, "-ok": 1, "-okdir": 1}[$args[$i]] != null then
			(first(range($i + 1; $n) | select($args[.] == ";" or $args[.] == "+")) // $n) as $stop
			| .skip = $stop - $i | .out = {exec: $args[$i + 1:$stop]}
		else .out = {test: $i} end;
		.out | values)] as $parts
	| [$parts[] | .test | values] as $tests
	| (first($tests[] | select($data.find.narrowed[$args[.]] != null) | {name: $args[. + 1]})
		// {name: null} | .name) as $name
	# -o, !: what the name does not match may be found too
	| (some($tests[]; $data.find.widened[$args[.]] != null)) as $widened
	| ($args[$start:$tests_at]
		| if $name != null and ($widened | not) and ($name | test("[*?\\[\\\\]") | not) then
			(if . == [] then ["."] else . end) | map(. + "/" + $name)
		else . end) as $folders
	| ($folders | if . == [] then ["."] else . end) as $paths
	| .args = $folders + $args[:$start] + [$tests[] | $args[.]]
	| .execs += [$parts[] | .exec | values # the folders take the place of the first {}
		| index(["{}"]) as $first | if $first == null then . else .[:$first] + $paths + .[$first + 1:] end];

# The shell code a run runs: sh -c CODE, eval ..., find -exec ... ;
def find_code($data):
	(if .name == "eval" then .code += [.args | join(" ")] else . end)
	| (if .name | fits($data.shells) then
		(.name | code_options($data)) as $options
		| .args as $args
		| (first(range(0; ($args | length) - 1) as $i
			| select(some($options[]; . as $o | $args[$i] | option_matches($o; {})))
			| if $args[$i + 1] == "--" and $i + 2 < ($args | length) then $args[$i + 2] # bash -c -- CODE
			else $args[$i + 1] end)
			// null) as $code
		| if $code != null then .code += [$code]
		elif .command.stdin != null and every($args[]; is_option) then
			.code += [.command.stdin] # bash <<EOF, bash <<< CODE
		else . end
	else . end)
	| if .name == "find" then find_paths($data) else . end
	| .name as $name
	| if ($data.programs.initials | . == null or .[$name[0:1]]) and ($name | fits($data.programs.names))
	then find_program($data) else . end;

# The value of the option . if $names names it (-C DIR, -CDIR, --chdir=DIR),
# and whether it is the next word: [value, next], or null.
def option_value($names; $following):
	. as $option
	| if some($names[]; . == $option) then [$following, true]
	elif startswith("--") and (split("=") | length > 1 and (.[0] as $name | some($names[]; . == $name))) then
		[after("="), false]
	elif is_short and length > 2 and (.[0:2] as $start | some($names[]; . == $start)) then [.[2:], false]
	else null end;

# A wrapper's option .w[.i - 1], read: a folder to run in (.chdir: env -C),
# a string split into words (env -S: .w changes, .splits counts them), a
# replacement string (.replace: xargs -I), a file of values (.input:
# parallel -a); .i, where the next option stands.
def wrapper_option($wrapper):
	.w[.i - 1] as $option
	| (.w[.i] // "") as $following
	| ($wrapper.values.replace // {}) as $replace
	| (first(
		["chdir", $wrapper.values.chdir // []], ["split", $wrapper.values["split string"] // []],
		["replace", ($replace | keys_unsorted)], ["input", $wrapper.values["input file"] // []]
		| .[0] as $what | .[1] as $names | ($option | option_value($names; $following)) as $found
		| select($found != null) | [$what] + $found) // null) as $hit
	| if $hit == null then
		if some(($wrapper["options with value"] // [])[]; . == $option) then setpath(["i"]; .i + 1) else . end
	else
		(if $hit[0] == "replace" and ($replace[$option] // "") != "" then [$replace[$option], false] # xargs -i: {}
		else $hit[1:] end) as [$value, $next]
		| (if $next then .i + 1 else .i end) as $upto
		| if $hit[0] == "split" and .splits < max_depth then # the string's words come in its place
			setpath(["splits"]; .splits + 1)
			| setpath(["w"]; .w[:(.i - 1)] + ($value | split_string) + .w[$upto:])
			| setpath(["i"]; .i - 1)
		elif $hit[0] == "split" then setpath(["i"]; $upto)
		else setpath([$hit[0]]; $value) | setpath(["i"]; $upto) end
	end;

# Whether a shell or interpreter runs what xargs reads (xargs sh -c): the run
# with .from_input set.
def code_from_input($data):
	if some(.args[]; . == input_word) | not then .
	else
		.args as $args
		| (.name | code_options($data)) as $options
		| (first(range(0; ($args | length) - 1) as $i
			| select(some($options[]; . as $o | $args[$i] | option_matches($o; {})))
			| if $args[$i + 1] == "--" and $i + 2 < ($args | length) then $args[$i + 2] # bash -c -- CODE
			else $args[$i + 1] end) // null) as $code
		| if $code == null then . else .from_input = ($code == input_word) end
	end;

# The value . as {.}, {/}, {//}, {/.}, {#} or {%} give it ($how: ., /, ...).
def transformed($how):
	def trim_slashes: explode as $c | $c[:(first(range(($c | length) - 1; -1; -1) | select($c[.] != 47)) // -1) + 1] | implode;
	if . == input_word then .
	elif $how == "#" or $how == "%" then "1" # the job's or the slot's number
	elif $how == "//" then # the folder
		(trim_slashes) as $path
		| if $path == "" then (if . != "" then "/" else "." end)
		elif $path | index("/") == null then "."
		else $path | split("/") | .[:-1] | join("/") | trim_slashes | if . == "" then "/" else . end end
	else
		(if $how | startswith("/") then basename else . end)
		# without its extension
		| if $how | endswith(".") then
			split(".") as $parts
			| if ($parts | length) > 1 and ($parts[-1] | index("/") == null) then $parts[:-1] | join(".") else . end
		else . end
	end;

# parallel's command line for the value .: in place of each {} (or of
# parallel -I's string $replace), or after the command $cmd; the value quoted.
def fill($cmd; $replace):
	. as $value
	| [$cmd[]
		| if $replace != null and $replace != "" then
			{found: (index($replace) != null), word: (split($replace) | join($value | shell_quoted))}
		else
			. as $word
			| [match("\\{([0-9]*)(\\.|/|//|/\\.|#|%)?\\}"; "g")] as $ms
			| if $ms == [] then {found: false, word: $word}
			else
				{found: true,
				 word: (reduce $ms[] as $m ({out: [], at: 0};
					.out += [$word[.at:$m.offset], ($value | transformed($m.captures[1].string // "") | shell_quoted)]
					| .at = $m.offset + $m.length)
					| .out + [$word[.at:]] | add)}
			end
		end]
	| map(.word) + (if some(.[]; .found) then [] else [$value | shell_quoted] end)
	| join(" ");

# parallel CMD ::: VALUES (the unwrap state: .w, .i where CMD starts,
# .parallel, .replace, .chdir, .input): a shell runs CMD once for each value,
# in place of its {} (or after it); values from its input, or from the files
# of ::::, are unknown. With no CMD, each value is a command line.
def parallel($command):
	.parallel["value lists"] as $lists
	| .w as $words | .i as $i | .replace as $replace | .chdir as $chdir | .input as $input
	| (first(range($i; $words | length) | select($lists[$words[.]] != null)) // ($words | length)) as $at
	| [foreach $words[$at:][] as $word ({kind: ""};
		if $lists[$word] != null then .kind = $lists[$word] | .value = null
		else .value = (if .kind == "words" then $word else input_word end) end;
		.value | values)] as $all
	# each value once, in order
	| ([$all | to_entries | group_by(.value)[] | min_by(.key)] | sort_by(.key) | map(.value)) as $values
	| $words[$i:$at] as $cmd
	| {values: $values | map(select(. != input_word)),
	   unknown: ($at == ($words | length) or some($values[]; . == input_word))} as $read
	# too many to judge one by one: as unknown as values read from input
	| (if ($read.values | length) > max_values or ($read.values | length) * ($cmd | join(" ") | length) > max_command
		then {values: [], unknown: true} else $read end) as $read
	# GNU parallel joins the command's words into one line; with -q, and
	# moreutils' parallel, they stay words (bash -c 'CODE'): both judged
	| [$cmd, (if some($cmd[]; test("[ \\t\\n'\"\\\\$`|&;<>()]")) then $cmd | map(shell_quoted) else empty end)]
		as $readings
	| [$read.values[], (if $read.unknown then input_word else empty end)
		| if $cmd == [] then . else . as $value | $readings[] as $reading | $value | fill($reading; $replace) end]
		as $codes
	| {name: "parallel", args: [], command: $command, code: [$codes[] | select(. != input_word)], execs: [],
	   chdir: $chdir, from_input: some($codes[]; . == input_word)}
	# no values and no command: it runs the lines it reads
	| if .from_input and $at == ($words | length) and ($input // "") == "" then .code_on_stdin = true else . end;

# The command that runs, behind keywords, assignments and wrappers.
def unwrap($data; $command):
	. as $words
	| length as $n
	| if $n > 0 and ($words[0] | is_keyword or index("=") != null or $data.wrappers[basename] != null
		| not)
	then # the usual case: no wrapper
		{name: ($words[0] | basename), args: $words[1:], command: $command, code: [], execs: []}
		| find_code($data)
		| code_from_input($data)
	else
	# .w: the words (env -S puts its string's in its place); .chdir, .replace
	# and .splits: see wrapper_option
	{i: 0, adds: false, w: $words, chdir: null, replace: null, input: null, splits: 0}
	| until(.i >= (.w | length) or .done;
		.w[.i] as $word
		| if ($word | is_keyword or is_assignment) then setpath(["i"]; .i + 1)
		else $data.wrappers[$word | basename] as $wrapper
		| if $wrapper == null then setpath(["done"]; true)
		else
			setpath(["i"]; .i + 1)
			| ($wrapper["options with value"] // []) as $with_value
			| ($wrapper["bare options"] // []) as $bare
			| until(.i >= (.w | length) or .stop
				or (.w[.i] | (length <= 1 or .[0:1] != "-") and (. as $word | some($bare[]; . == $word) | not));
				setpath(["i"]; .i + 1)
				| .w[.i - 1] as $option
				| if $option == "--" then setpath(["stop"]; true)
				elif $wrapper.values != null then wrapper_option($wrapper)
				elif some($with_value[]; . == $option) then setpath(["i"]; .i + 1)
				else . end)
			| del(.stop)
			| if $wrapper["value lists"] != null then setpath(["parallel"]; $wrapper) | setpath(["done"]; true)
			else
				(if $wrapper.assignments then
					until(.i >= (.w | length) or (.w[.i] | is_assignment | not); setpath(["i"]; .i + 1))
				else . end)
				| setpath(["i"]; .i + ($wrapper.args // 0))
				| setpath(["adds"]; (.adds or ($wrapper["adds args"] // false)))
			end
		end end)
	| if .parallel != null then parallel($command)
	else
		.replace as $replace | .adds as $adds
		| {name: (if .i < (.w | length) then .w[.i] | basename else "" end),
		   args: (.w[.i + 1:]
			# xargs -I R: R stands for what xargs reads
			| if $replace != null and $replace != "" then map(split($replace) | join(input_word))
			elif $adds then . + [input_word]
			else . end),
		   command: $command, code: [], execs: [], chdir: .chdir}
		| find_code($data)
		| code_from_input($data)
	end
	end;

# A command named by a variable set in the code ($cmd after cmd="rm -rf x";
# $values: what it is set to), . being [the run, how many words are judged
# again so far]: [the command of its first value, the others to be judged
# beside it; the count with their words]. Past max_again words, the run is
# refused as it is.
def run_variable($data; $values):
	.[0] as $run | .[1] as $again
	# each value's words, with the count after them, up to the first past max_again
	| (if $again > max_again then [{again: $again}]
	elif ($values | length) == 1 then [$values[0] | split_string + $run.args | {words: ., again: ($again + length)}]
	else
		[label $over | foreach $values[] as $value ({again: $again};
			($value | split_string + $run.args) as $words | {words: $words, again: (.again + ($words | length))};
			., if .again > max_again then break $over else empty end)]
	end) as $found
	| if $found[-1].again > max_again then [($run | .refusal = too_many_again), $found[-1].again]
	else
		[($found[0].words | unwrap($data; $run.command)
			| (if .chdir == null and $run.chdir != null then .chdir = $run.chdir else . end)
			| .execs += [$found[1:][] | .words]),
		 $found[-1].again]
	end;

# Where the first word that is not an option stands (git's push, ...), or
# null. $with_value: {OPTION: true} for the options that take the next word.
def subcommand($with_value):
	. as $args
	| if length > 0 and (.[0] | is_option | not) and (.[0] | takes_value($with_value) | not)
	then 0 # the usual case
	else {i: 0}
	| until(.i >= ($args | length) or .found;
		$args[.i] as $arg
		| if $arg | takes_value($with_value) then setpath(["i"]; .i + 2)
		elif $arg | is_option then setpath(["i"]; .i + 1)
		else setpath(["found"]; true) end)
	| if .found then .i else null end
	end;

# Options, positional words, and the values of --name=value options.
def split_args($with_value):
	. as $args
	| if every(.[]; . != "--" and (takes_value($with_value) | not))
	then # the usual case: a word is an option or not, whatever stands before it
		{options: map(select(is_option)), positionals: map(select(is_option | not)),
		 values: [.[] | select(startswith("--") and index("=") != null) | after("=")]}
	else
	# each word as an option (with the value of --name=value), a positional,
	# or the value of the option before it
	[foreach .[] as $arg ({};
		if .rest then {out: {positional: $arg}, rest: true}
		elif .value then {}
		elif $arg == "--" then {out: {option: $arg}, rest: true}
		elif $arg | is_option then
			($arg | takes_value($with_value)) as $value
			| {out: {option: $arg,
				value: (if ($value | not) and ($arg | startswith("--")) and ($arg | index("=") != null)
					then $arg | after("=") else null end)},
			   value: $value}
		else {out: {positional: $arg}} end;
		.out | values)] as $words
	| {options: [$words[] | .option | values], positionals: [$words[] | .positional | values],
	   values: [$words[] | .value | values]}
	end;

# The words a rule's "target" looks at, by its "targets".
def pick_targets($rule; $split):
	($rule.targets // "all") as $mode
	| if $mode == "leading" then leading
	elif $mode == "last" then $split.positionals[-1:]
	elif $mode == "after first" then $split.positionals[1:]
	elif $mode != "all" then [.[] | select(startswith($mode)) | .[$mode | length:]]
	else $split.positionals + $split.values end
	| if . == [] and ($rule | has("default target")) then [$rule["default target"]] else . end;

# The words . of a program whose options take one dash or two alike
# (terraform -destroy, --destroy), each option spelt with two: each option
# one name, never letters run together.
def two_dashes: map(if is_option and .[1:2] != "-" then "-" + . else . end);

# What the rules' word fields look at, worked out once per run: the options
# that take a value (.with_value), the split of all the words, and when a
# rule has a subcommand ($sub), where it stands (or null) and the split of
# the words after it. $dashes: the options take one dash or two alike (the
# run's are spelt with two already).
def word_memo($c; $sub; $dashes):
	($c.data["option values"][.name] // {} | if $dashes then keys_unsorted | two_dashes | as_set else . end)
		as $with_value
	| (if $sub then .args | subcommand($with_value) else null end) as $sub
	| {sub: $sub, with_value: $with_value, dashes: $dashes, all: (.args | split_args($with_value)),
	   after: (if $sub == null then null else .args[$sub + 1:] | split_args($with_value) end)};

def has_word_fields:
	has("subcommand") or has("option") or has("not option") or has("arg") or has("target")
	or has("min args");

# Whether the rule's subcommand, option, arg and target fields hold ($memo
# from word_memo).
def words_hold($c; $rule; $memo):
	(if $rule | has("subcommand") then
		if $memo.sub == null or (.args[$memo.sub] as $word | some($rule.subcommand[]; . == $word) | not)
		then null
		else {args: .args[$memo.sub + 1:], split: $memo.after} end
	else {args: .args, split: $memo.all} end)
	| if . == null then false
	elif ($rule | has("option") or has("not option") or has("arg") or has("target") or has("min args") | not)
	then true
	else
		$memo.with_value as $with_value
		| (if ($rule.skip // 0) == 0 then .
		else .args[$rule.skip:] | {args: ., split: split_args($with_value)}
		end)
		| .split as $split
		| .args
		| def spelt: if $memo.dashes then two_dashes else . end;
		if ($rule | has("option")) and (some($split.options[]; . as $option
			| some($rule.option | spelt[]; . as $wanted | $option | option_matches($wanted; $with_value))) | not)
		then false
		elif ($rule | has("not option")) and some($split.options[]; . as $option
			| some($rule["not option"] | spelt[]; . as $wanted | $option | option_matches($wanted; $with_value)))
		then false
		elif ($split.positionals | length) < ($rule["min args"] // 0) then false
		elif ($rule | has("arg")) and (some($split.positionals[]; fits($rule.fits.arg)) | not)
		then false
		elif $rule | has("target") then
			some(pick_targets($rule; $split)[]; has_class($c; $rule.target))
		else true end
	end;

# The commands that set the variables they are given (export X=1).
def setters: {"export": 1, "declare": 1, "typeset": 1, "local": 1, "readonly": 1};

# The values each variable is set to in the commands . (cmd="rm -rf x", also
# by export, declare, ...), by the name a command uses for it ("$cmd",
# "${cmd}"): {NAME: [VALUE]}, each value once, in order; an array's words as
# written (cmd=(rm -rf x)).
def assigned:
	[.[] | .words[.keywords:] | select(.[0] != null and (.[0] | index("=") != null or setters[.] != null))]
	# each list of words once, where it first stands (x=1; x=1; ...: read once)
	| (if length > 1 then [to_entries | unique_by(.value)[]] | sort_by(.key) | map(.value) else . end)
	| [.[] | if setters[.[0]] != null then [.[1:][] | select(is_option | not)] else . end
		| select(. != [] and every(.[]; is_assignment))
		| .[] | split("=") | [.[0], (.[1:] | join("=") | if startswith("(") and endswith(")") then .[1:-1] else . end)]
		| select(.[0] | index("[") == null and (endswith("+") | not))] # not a[1]=x, a+=x
	| if . == [] then {}
	else
		# (grouped, not added one by one: jq 1.6 would copy the list each time)
		group_by(.[0])
		| reduce (.[] | .[0][0] as $name
			| [to_entries | group_by(.value[1])[] | .[0]] | sort_by(.key) | map(.value[1]) as $values
			| "$" + $name, "${" + $name + "}", "${" + $name + "[@]}", "${" + $name + "[*]}"
			| [., $values]) as [$form, $values] ({}; setpath([$form]; $values))
	end;

# Where a function's arguments stand in its body: "@" or "*" for "$@", $*,
# ${@} and ${*}, "N" for $N and ${N} (1 to 9); null for another word.
def positional:
	if length > 4 or (startswith("$") | not) then null
	else .[1:] | (if startswith("{") and endswith("}") then .[1:-1] else . end)
		| . as $which | if length == 1 and ("@*123456789" | index($which)) != null then . else null end
	end;

# The words . of a function's command with a call's arguments ($args) in
# place of "$@", $1, ...; null when it has none of them.
def with_arguments($args):
	if every(.[]; positional == null) then null
	else [.[] | positional as $which
		| if $which == null then .
		elif $which == "@" or $which == "*" then $args[]
		else ($which | tonumber) as $k | if $k <= ($args | length) then $args[$k - 1] | split_string[] else empty end
		end]
	end;

# What printf prints (. its words): its format, escapes read, with an
# argument in place of each directive (%s, %-10s, %d; %% is a %; none left:
# nothing), again while arguments are left (past max_command characters, the
# arguments left follow as they are).
def printf_text:
	if . == [] then ""
	else
		.[1:] as $rest | ($rest | length) as $n
		| (.[0] | ansi_c) as $form
		| [$form | match("%(%|[-+ #0]*[0-9]*(\\.[0-9]*)?[a-zA-Z])"; "g")] as $ms
		| $form[($ms[-1] // {offset: 0, length: 0} | .offset + .length):] as $tail
		# the arguments a pass of the format takes, and how many passes there are
		| ([$ms[] | select(.captures[0].string != "%")] | length) as $takes
		| (if $takes == 0 or $n == 0 then 1 else ($n + $takes - 1) / $takes | floor end) as $passes
		# the text of pass $pass (0, 1, ...) of the format
		| def pass_text($pass):
			[foreach $ms[] as $m ({at: 0, used: ($pass * $takes)};
				if $m.captures[0].string == "%" then .out = [$form[.at:$m.offset], "%"]
				else .out = [$form[.at:$m.offset], ($rest[.used] // "")] | .used += 1 end
				| .at = $m.offset + $m.length;
				.out[]),
			 $tail]
			| add;
		{pass: 0, out: null, size: 0}
		| until(.pass >= $passes or .size > max_command;
			pass_text(.pass) as $text
			| setpath(["out"]; [.out, $text]) | setpath(["size"]; .size + ($text | length))
			| setpath(["pass"]; .pass + 1))
		| (.out | items | add // "") + (if .pass < $passes then " " + ($rest[.pass * $takes:] | join(" ")) else "" end)
	end;

# What echo or printf prints, or cat of its here-document (cat <<EOF); null
# for another command.
def fed_text:
	if .name == "printf" then .args | printf_text
	elif .name == "echo" then
		.args as $args
		| (first(range($args | length) | select({"-e": 1, "-n": 1, "-E": 1, "-ne": 1, "-en": 1}[$args[.]] == null))
			// ($args | length)) as $k
		| $args[$k:] | join(" ")
		# echo -e: \n is a new line (the last of its options says)
		| if $k > 0 and ($args[$k - 1] | index("e") != null) then ansi_c else . end
	elif .name == "cat" and .args == [] then .command.stdin
	else null end;

# A function defined here, run twice in one pipeline: name() { name | name & }.
def fork_bomb(line; $functions):
	.name as $name
	| $functions[$name] and ([line[] | select(.run.name == $name)] | length > 1);

# Whether an interpreter takes its program from its standard input.
def reads_program($data):
	(.name | code_options($data)) as $options
	| if some(.args[] | select(is_option);
		. as $arg | some($options[]; . as $o | $arg | option_matches($o; {})))
	then false
	else [.args[] | select(is_option | not)] as $positionals
	| ($positionals[0] // "-") as $first
	| $first == "-" or $first == "/dev/stdin" or some(.args[]; . == "-s") end;

# Whether a later command of the pipeline ($line) runs the program it reads.
# $last: where the last such command of a long pipeline stands (null: look).
def piped_to($c; line; $at; $names; $last):
	if $last != null then $last > $at
	else some(line[] | select(.k > $at) | .run; (.name | fits($names)) and reads_program($c.data)) end;

# Text printed into a later command of the pipeline that runs what it reads:
# shell code (echo 'CODE' | sh, cat <<EOF | bash), or the program of an
# interpreter (echo 'CODE' | python3). line, $at, $last: as for piped_to.
def feed($c; line; $at; $text; $last):
	$c.data.programs as $programs
	| (if piped_to($c; line; $at; $c.data.shells; $last) then setpath(["code"]; .code + [$text]) else . end)
	| reduce (line[] | select(.k > $at) | .run
		| select(.command.stdin == null and (.name | fits($programs.names)))) as $other (.;
		($other.name | program_grammar($programs)) as $g
		| if $g == null then .
		elif ($other | program_code($programs.languages[$g]; null)) == null
			and (($other | program_code($programs.languages[$g]; $text)) // "") != ""
		then read_program($text; $g; $programs)
		else . end);

# Whether what the command reads (< FILE, or earlier in its pipeline) has a class.
# $first: in a long pipeline, the first command that reads or names such a
# file (null: look).
def input_has($c; line; $at; $classes; $first):
	if $first != null then
		some(.command.redirects[]; .[0] == "<" and (.[1] | has_class($c; $classes))) or $first < $at
	else
	some(line[] | select(.k <= $at);
		.k != $at and some(.run.args[] | select(is_option | not); has_class($c; $classes))
		or some(.run.command.redirects[]; .[0] == "<" and (.[1] | has_class($c; $classes))))
	end;

# Whether every field of the rule holds for the run: line gives its pipeline
# ({k: where in the runs, run} each), $at is where it stands.
def holds($c; $rule; line; $at; $functions; $memo; $last):
	# the quick test first: a subcommand the rule is not about
	($rule.subcommands == null or $memo.sub != null and $rule.subcommands[.args[$memo.sub]] != null)
	and (($rule["code from input"] | not) or .from_input)
	and (($rule["fork bomb"] | not) or fork_bomb(line; $functions))
	and (($rule | has("redirect") | not) or some(.command.redirects[] | select(.[0] == ">");
		.[1] | has_class($c; $rule.redirect)))
	and (($rule | has("exec") | not) or some(.execs[]; length > 0
		and ((.[0] | basename) as $name | some($rule.exec[]; . == $name))))
	and (($rule | has("runs output of") | not) or some(.command.subs[];
		unwrap($c.data; {}) | .name | fits($rule.fits["runs output of"])))
	and (($rule | has("piped to") | not) or piped_to($c; line; $at; $rule.fits["piped to"];
		$last[$rule["piped list"]]))
	and (($rule | has("input") | not) or input_has($c; line; $at; $rule.input;
		$c.inputs["\($c.pipeline) \($rule.at)"]))
	and (($rule | has_word_fields | not) or words_hold($c; $rule; $memo));

# cd DIR moves where later relative paths point (null: not known).
def follow_cd:
	. as $c
	| if ($c.run.name == "cd" or $c.run.name == "pushd" or $c.run.name == "popd")
		and ($c.run.command.nested or $c.line > 1)
	then setpath(["here"]; null) # (cd x); ... or cd x | ...: where it ends is not followed
	elif $c.run.name == "cd" or $c.run.name == "pushd" or $c.run.name == "popd" then
		([$c.run.args[] | select(is_option | not)]
			| if . != [] and $c.run.name != "popd" then .[0] else "~" end) as $path
		| if $path == "-" or ($path | index("$") != null or startswith("~")) then setpath(["here"]; null)
		elif $path | startswith("/") then setpath(["here"]; "/" + ($path | normal | join("/")))
		elif .here != null and every($path | split("/")[]; . != "..") then # going down
			($path | normal) as $parts
			| if $parts == [] then .
			else setpath(["here"]; (if .here == "/" then "" else .here end) + "/" + ($parts | join("/"))) end
		elif .here != null then setpath(["here"]; "/" + (.here + "/" + $path | normal | join("/")))
		else . end
		# cd a; cd a; ...: too deep to follow
		| if .here != null and (.here | length) > max_path then setpath(["here"]; null) else . end
	else . end;

# Runs grouped by pipeline: {members, long}. members: the runs of each
# pipeline (where they stand in the runs); long: for pipelines of 32
# commands or more, where the last that runs what it reads stands, for each
# of the "piped lists".
def pipelines($data):
	. as $runs
	| ([range(0; length)] | group_by($runs[.].command.pipeline)
		| map({key: ($runs[.[0]].command.pipeline | tostring), value: .}) | from_entries)
	| {members: .,
	   long: with_entries(select(.value | length >= 32) | .value as $ks
		| .value = [$data["piped lists"][] as $names
			| [$ks[] | select($runs[.] | (.name | fits($names)) and reads_program($data))]
			| max // -1])};

# The functions a piece of code may call ($defs): {key, functions (every
# name defined), parents (of each subshell), own: {NAME: {SCOPE: [{id, runs,
# forwards (its commands that run its arguments)}]}}, exported: {NAME: true},
# values (see assigned), outer}. outer: the code that runs it,
# {defs, at (the scope it runs from), all (all are passed on, as eval does,
# or only those exported, as bash -c does)}, or null.

# Whether a function of the name may be defined (a quick test).
def knows($name): .functions[$name] != null or .outer != null and (.outer.defs | knows($name));

# The bodies a command $name in $scope may run, by where they are defined:
# its subshell, those around it, then the code that runs it ($every false:
# those exported only); {key, bodies, defs} each.
def groups($name; $scope; $every):
	. as $defs
	| (if $every or $defs.exported[$name] != null then $defs.own[$name] else null end) as $own
	| (if $own == null then []
	else [$scope | recurse($defs.parents[.]; . >= 0) | tostring | select($own[.] != null)
		| {key: "\($defs.key) \(.) \($name)", bodies: $own[.], defs: $defs}] end)
	+ if $defs.outer == null then []
	else $defs.outer.defs | groups($name; $defs.outer.at; $every and $defs.outer.all) end;

# The checker after a text, with .refusal set when it must be refused;
# $outer: the code that runs it (see callable), or null.
def check_text($text; $depth; $outer):
	# The checker after the run $runs[$at], with .refusal set when a rule holds.
	# $members and $long: see pipelines; $defs: see callable.
	def check_run($runs; $members; $long; $at; $defs; $depth):
		# The commands of the bodies that run their arguments ("$@", $1, ...;
		# .forwards of each), judged again with the arguments of this call in
		# their place.
		def forwarded($run; $group):
			.data as $data
			| reduce $group.bodies[].forwards[] as $command (.;
				if .refusal != null then .
				else ($command.words | with_arguments($run.args)) as $words
				| if $words == null then .
				elif $depth >= max_depth then setpath(["refusal"]; too_deep)
				elif .again + ($words | length) > max_again then setpath(["refusal"]; too_many_again)
				else
					setpath(["again"]; .again + ($words | length))
					| .here as $here
					| ($words | unwrap($data; $command | del(.words, .keywords))) as $new
					| (if $group.defs.values[$new.name] == null then [$new, .again]
					else [$new, .again] | run_variable($data; $group.defs.values[$new.name]) end) as [$new, $again]
					| setpath(["again"]; $again)
					| check_run([$new]; {($new.command.pipeline | tostring): [0]}; {}; 0; $group.defs; $depth + 1)
					| setpath(["here"]; $here)
				end end);

		# A function called: each body judged where it is first called (.checked:
		# by group, how many are judged, whether a cd in one moved, and whether
		# they are being judged: a call in them does not judge them again); at
		# every call, their commands that run its arguments (forwarded).
		def call($run):
			($defs | groups($run.name; $run.command.scope; true)) as $groups
			| setpath(["group"]; 0)
			| until(.refusal != null or .group >= ($groups | length);
				.group as $g | $groups[$g] as $group | ($group.bodies | length) as $n
				| (.checked[$group.key] // {n: 0}) as $state
				| if $state.busy then setpath(["group"]; $g + 1)
				else
					# where a cd leads this time is not followed
					(if $state.n == $n and $state.moves then setpath(["here"]; null) else . end)
					| setpath(["checked", $group.key]; $state + {busy: true})
					| until(.refusal != null or .checked[$group.key].n >= $n;
						(.checked[$group.key] // {n: 0}) as $state
						| if $depth >= max_depth then setpath(["refusal"]; too_deep)
						else
							$group.bodies[$state.n].runs as $runs
							| setpath(["checked", $group.key]; $state + {n: ($state.n + 1)})
							| .here as $here
							| .inputs as $inputs | setpath(["inputs"]; {})
							| .data as $data | ($runs | pipelines($data)) as $lines
							| setpath(["inner"]; 0)
							| until(.refusal != null or .inner >= ($runs | length);
								.inner as $i
								| check_run($runs; $lines.members; $lines.long; $i; $group.defs; $depth + 1)
								| setpath(["inner"]; $i + 1))
							| setpath(["inputs"]; $inputs)
							| if .here != $here then setpath(["checked", $group.key, "moves"]; true) else . end
						end)
					| (if .refusal == null then forwarded($run; $group) else . end)
					| setpath(["checked", $group.key, "busy"]; false)
					| setpath(["group"]; $g + 1)
				end);

		# a command a wrapper runs in another folder (env -C DIR): its
		# relative paths start there
		if $runs[$at].chdir != null then
			$runs[$at].chdir as $folder
			| .here as $here
			| setpath(["here"];
				if $folder | index("$") != null or startswith("~") then null
				elif $folder | startswith("/") then "/" + ($folder | normal | join("/"))
				elif .here != null then "/" + (.here + "/" + $folder | normal | join("/"))
				else null end)
			| check_run($runs | setpath([$at, "chdir"]; null); $members; $long; $at; $defs; $depth)
			| setpath(["here"]; $here)
		else
		($runs[$at].command.pipeline | tostring) as $pipeline
		| def line: [$members[$pipeline][] | {k: ., run: $runs[.]}];
		($long[$pipeline] // []) as $last
		| setpath(["run"]; $runs[$at])
		| if .run.name == "cd" or .run.name == "pushd" or .run.name == "popd" then
			setpath(["line"]; $members[$pipeline] | length)
		else . end
		| follow_cd
		# parallel alone runs the lines it reads: when the line says what they
		# are (its here-document, or what echo, printf or cat <<EOF before it
		# prints), they are its code
		| (if .run.code_on_stdin | not then .
		else
			($members[$pipeline] | first(range(length) as $p | select(.[$p] == $at) | $p)) as $position
			| (if .run.command.stdin != null then .run.command.stdin
			elif $position == 0 or some(.run.command.redirects[]; .[0] == "<") then null
			else $runs[$members[$pipeline][$position - 1]] | fed_text end) as $text
			| if $text == null then .
			else .run |= (.from_input = false | .code_on_stdin = false | .code += [$text]) end
		end)
		| .data as $data | (.run.name | rules_for($data)) as $rules
		# a long pipeline: what its commands read, looked at once per rule
		| setpath(["pipeline"]; $pipeline)
		| (if $long | has($pipeline) | not then .
		else
			reduce ($rules[] | select(has("input"))) as $rule (.;
				"\($pipeline) \($rule.at)" as $key
				| if .inputs[$key] != null then .
				else
					. as $c
					| setpath(["inputs", $key]; first(line[] | select(
						some(.run.args[] | select(is_option | not); has_class($c; $rule.input))
						or some(.run.command.redirects[];
							.[0] == "<" and (.[1] | has_class($c; $rule.input))))
						| .k) // infinite)
				end)
		end)
		| . as $c
		# a program whose options take one dash or two alike: its rules judge
		# its words with every option spelt with two
		| ($c.run.name | fits($data["one dash or two"])) as $dashes
		| (if $dashes then $c.run | .args |= two_dashes else $c.run end) as $worded
		| (if some($rules[]; has_word_fields) then $worded | word_memo($c; some($rules[]; has("subcommand")); $dashes)
		else null end) as $memo
		| ($c.run.refusal // first($rules[] as $rule
			| $worded | select(holds($c; $rule; line; $at; $defs.functions; $memo; $last))
			| {rule: $rule.id, reason: ($rule.reason // ""), instead: ($rule.instead // "")}) // null)
			as $refusal
		| if $refusal != null then setpath(["refusal"]; $refusal)
		else
			($c.run | fed_text) as $text
			| (if $text == null then $c.run else $c.run | feed($c; line; $at; $text; $last[0]) end) as $run
			| if $run.refusal != null then setpath(["refusal"]; $run.refusal) else
			setpath(["refusal"]; null) | setpath(["next"]; 0)
			| (if $run.code == [] and $run.execs == [] then . else
			.here as $here # a cd in code run by another shell does not last
			# eval runs code in this shell, with its functions; bash -c sees only
			# those exported
			| {defs: $defs, at: $run.command.scope, all: ($run.name == "eval")} as $runner
			| until(.refusal != null or .next >= ($run.code | length);
				.next as $k | check_text($run.code[$k]; $depth + 1; $runner) | setpath(["here"]; $here)
				| setpath(["next"]; $k + 1))
			| until(.refusal != null or .next >= ($run.code | length) + ($run.execs | length);
				.next as $k
				| [$run.execs[$k - ($run.code | length)] | unwrap($c.data; $run.command)] as $inner
				| check_run($inner; {($inner[0].command.pipeline | tostring): [0]}; {}; 0; $defs;
					$depth + 1)
				| setpath(["here"]; $here)
				| setpath(["next"]; $k + 1))
			end)
			| if .refusal == null and ($defs | knows($run.name)) then call($run) else . end
			end
		end
		end;

	if $depth > max_depth then setpath(["refusal"]; too_deep)
	else
		.deadline as $deadline | ($text | parsed($deadline)) as $parsed
		| if $parsed.too_deep then setpath(["refusal"]; too_deep)
		elif $parsed.too_slow then setpath(["refusal"]; too_slow)
		else
			.data as $data
			| ($parsed.commands | assigned) as $values
			| [$parsed.commands[] | . as $command | .words | unwrap($data; $command | del(.words, .keywords))]
				as $unwrapped
			# $cmd after cmd="rm -rf x": the command of its value (.again counts their words)
			| (if $values == {} then {all: $unwrapped, again: .again}
			else
				[foreach $unwrapped[] as $run ([null, .again];
					if $values[$run.name] == null then [$run, .[1]]
					else [$run, .[1]] | run_variable($data; $values[$run.name]) end)]
				| {all: map(.[0]), again: .[-1][1]}
			end) as $read
			| setpath(["again"]; $read.again) | $read.all as $all
			# a body's commands run where the function is called; eval's
			# functions last after it: their bodies are judged as they stand
			| (if $parsed.bodies == [] or $outer.all then {}
			else $parsed.bodies | map({key: (.id | tostring), value: true}) | from_entries end) as $deferred
			| (if $deferred == {} then $all
			else [$all[] | select(.command.body == null or $deferred[.command.body | tostring] == null)] end)
				as $runs
			| .texts as $key | setpath(["texts"]; $key + 1)
			| {key: $key, functions: $parsed.functions, parents: $parsed.parents, outer: $outer, values: $values,
			   own: (if $deferred == {} then {}
			   else
				([$all[] | select(.command.body != null)] | group_by(.command.body)
					| map({key: (.[0].command.body | tostring), value: .}) | from_entries) as $inside
				# the commands that run the function's arguments ("$@", $1, ...)
				| ([$parsed.commands[] | select(.body != null and some(.words[]; positional != null))]
					| group_by(.body) | map({key: (.[0].body | tostring), value: .}) | from_entries) as $forwards
				| $parsed.bodies | group_by(.name)
				| map({key: .[0].name, value: (group_by(.scope)
					| map({key: (.[0].scope | tostring), value: map({id, runs: ($inside[.id | tostring] // []),
						forwards: ($forwards[.id | tostring] // [])})})
					| from_entries)})
				| from_entries
			   end),
			   # export -f NAME (declare -fx NAME): bash -c sees the function too
			   exported: ([$all[] | select((.name == "export" or .name == "declare" or .name == "typeset")
					and some(.args[]; is_short and index("f") != null))
				| .args[] | select(is_option | not) | {key: ., value: true}] | from_entries)}
				as $defs
			| setpath(["refusal"]; null) | setpath(["at"]; 0)
			| .inputs as $inputs | setpath(["inputs"]; {})
			| ($runs | pipelines($data)) as $lines
			| until(.refusal != null or .at >= ($runs | length);
				if now > $deadline then setpath(["refusal"]; too_slow)
				else
					.at as $at | check_run($runs; $lines.members; $lines.long; $at; $defs; $depth)
					| setpath(["at"]; $at + 1)
				end)
			| setpath(["inputs"]; $inputs)
		end
	end;

# Why the bash command . must be refused ({rule, reason, instead}), or null
# to allow it. $data comes from guard_policy; $cwd is the project folder
# (hello_ack's cwd): deletes inside it, and in the temp folders, are allowed.
def check($data; $cwd):
	split("\\\n") | join("") # bash joins continued lines
	| . as $text
	| if length > max_command then too_long
	else
		# the project folder; "/" or none is no project: no path is inside it
		($cwd | if type == "string" and startswith("/") and normal != [] then . else "/.project" end
			| normal) as $project
		| {data: $data, project: $project, here: ("/" + ($project | join("/"))), temp: $data.temp,
		   texts: 0, checked: {}, again: 0, deadline: (now + max_seconds)}
		| check_text($text; 0; null) | .refusal
	end;

# The guard's verdict on an event_intercept frame for a tool call, as the
# text sent to zot ("" to allow it).
def refusal($name; $data; $cwd):
	if .tool_name == "bash" and (.tool_args | type) == "object"
		and (.tool_args.command | type) == "string"
	then
		.tool_args.command
		| if $data.unusable then $data.unusable else check($data; $cwd) end
		| if . == null then "" else "refused by \($name) (\(.rule)): \(.reason). Instead, \(.instead)." end
	else "" end;

# The rules for check from jq's named arguments (see guard_data), read once:
# {data}, or {error} when they cannot be read (then every call is refused).
# A rules file the guard cannot use makes every bash command refused, with
# the file named ({data: {unusable: REFUSAL}}).
def guard_setup:
	[try {data: (if .intercept then guard_data(.) else {} end)}
	 catch (if type == "object" and .unusable then {data: .} else {error: .} end)] | .[0];

# The warning for zot's window when the rules cannot be used ("" when they
# can); $guard comes from guard_setup.
def guard_warning($name; $guard):
	$guard.data.unusable
	| if . then "\($name): the guard cannot use its rules: \(.reason). Instead, \(.instead)." else "" end;

# The guard's verdict on {frame, cwd}: an event_intercept frame and the
# project folder; $guard comes from guard_setup.
def guard_verdict($name; $guard):
	if $guard.error then error($guard.error)
	else .cwd as $cwd | .frame | refusal($name; $guard.data; $cwd) end;

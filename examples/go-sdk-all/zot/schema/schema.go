// Package schema checks a tool's arguments against its JSON Schema before
// the handler runs: Checked wraps a handler so that a call whose arguments
// do not fit is answered with an error for the model, and the handler never
// sees it.
//
// The keywords checked: type, required, properties, additionalProperties,
// items, enum, minimum, maximum, minLength, maxLength. Others (format,
// pattern, $ref, oneOf, ...) are left to the handler: a keyword the checker
// does not know never refuses a call. Every zot extension runtime of this
// template words the problems the same way. It belongs to the template.
//
// Checked also ends the call's programs: what the handler started with
// processes.Command is stopped before its result goes out.
package schema

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"example.com/demo-ext/zot/processes"
)

// Checked returns handler, run only with arguments that fit schema; a call
// whose arguments do not is answered with refuse("invalid arguments: ...").
// The handler gets a processes.CallContext: once it returns (or panics), the
// programs it started with processes.Command are gone, before its result is
// sent.
func Checked[Result any](schema json.RawMessage, refuse func(string) Result,
	handler func(context.Context, json.RawMessage) Result) func(context.Context, json.RawMessage) Result {
	var parsed any
	_ = json.Unmarshal(schema, &parsed) // a schema that is not JSON checks nothing
	return func(ctx context.Context, args json.RawMessage) Result {
		var value any
		if len(bytes.TrimSpace(args)) == 0 {
			args = json.RawMessage("null")
		}
		if err := json.Unmarshal(args, &value); err != nil {
			return refuse("invalid arguments: the arguments are not JSON")
		}
		if found := Problems(parsed, value, ""); len(found) > 0 {
			return refuse("invalid arguments: " + strings.Join(found, "; "))
		}
		ctx, stop := processes.CallContext(ctx)
		defer stop()
		return handler(ctx, args)
	}
}

// Problems says what is wrong with value (as encoding/json decodes it into
// an any) for schema, each naming where: `"text" is required`, `"tags[1]"
// must be a string`; none when nothing is.
func Problems(schema, value any, path string) []string {
	s, ok := schema.(map[string]any)
	if !ok {
		return nil
	}
	where := "the arguments"
	if path != "" {
		where = encode(path)
	}
	types, _ := s["type"].([]any)
	if name, ok := s["type"].(string); ok {
		types = []any{name}
	}
	if types != nil && !anyOf(types, func(t any) bool { return is(value, t) }) {
		return []string{where + " must be " + either(types)}
	}
	var found []string
	if choices, ok := s["enum"].([]any); ok && !anyOf(choices, func(c any) bool { return same(value, c) }) {
		listed := make([]string, len(choices))
		for i, choice := range choices {
			listed[i] = encode(choice)
		}
		found = append(found, where+" must be one of "+strings.Join(listed, ", "))
	}
	switch v := value.(type) {
	case string:
		found = append(found, bounds(s, float64(utf8.RuneCountInString(v)), where, "minLength", "maxLength", true)...)
	case float64:
		found = append(found, bounds(s, v, where, "minimum", "maximum", false)...)
	case []any:
		if items, ok := s["items"].(map[string]any); ok {
			for i, item := range v {
				found = append(found, Problems(items, item, fmt.Sprintf("%s[%d]", path, i))...)
			}
		}
	case map[string]any:
		found = append(found, objectProblems(s, v, path)...)
	}
	return found
}

func objectProblems(s, value map[string]any, path string) []string {
	prefix := ""
	if path != "" {
		prefix = path + "."
	}
	properties, _ := s["properties"].(map[string]any)
	required, _ := s["required"].([]any)
	var found []string
	for _, name := range required {
		if name, ok := name.(string); ok {
			if _, given := value[name]; !given {
				found = append(found, encode(prefix+name)+" is required")
			}
		}
	}
	names := make([]string, 0, len(value))
	for name := range value {
		names = append(names, name)
	}
	sort.Strings(names) // in the same order in every language: by name
	extra, hasExtra := s["additionalProperties"]
	for _, name := range names {
		if property, ok := properties[name]; ok {
			found = append(found, Problems(property, value[name], prefix+name)...)
		} else if hasExtra && extra == false {
			found = append(found, encode(prefix+name)+" is not expected")
		} else if hasExtra {
			found = append(found, Problems(extra, value[name], prefix+name)...)
		}
	}
	return found
}

func bounds(s map[string]any, size float64, where, low, high string, characters bool) []string {
	unit := func(n float64) string {
		if !characters {
			return ""
		}
		if n == 1 {
			return " character long"
		}
		return " characters long"
	}
	var found []string
	if least, ok := s[low].(float64); ok && size < least {
		found = append(found, where+" must be at least "+number(least)+unit(least))
	}
	if most, ok := s[high].(float64); ok && size > most {
		found = append(found, where+" must be at most "+number(most)+unit(most))
	}
	return found
}

func is(value, kind any) bool {
	switch kind {
	case "string":
		_, ok := value.(string)
		return ok
	case "boolean":
		_, ok := value.(bool)
		return ok
	case "number":
		_, ok := value.(float64)
		return ok
	case "integer":
		f, ok := value.(float64)
		return ok && f == math.Trunc(f) && !math.IsInf(f, 0)
	case "object":
		_, ok := value.(map[string]any)
		return ok
	case "array":
		_, ok := value.([]any)
		return ok
	case "null":
		return value == nil
	}
	return true // a type the checker does not know refuses nothing
}

func either(types []any) string {
	names := make([]string, len(types))
	for i, kind := range types {
		names[i] = name(kind)
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

func name(kind any) string {
	switch kind {
	case "boolean":
		return "true or false"
	case "null":
		return "null"
	case "integer", "array", "object":
		return "an " + kind.(string)
	}
	return fmt.Sprintf("a %v", kind)
}

// same is JSON equality: 1 and 1.0 are the same, true and 1 are not.
func same(a, b any) bool {
	return encode(a) == encode(b)
}

// encode is value as JSON, as every runtime writes it in a problem.
func encode(value any) string {
	var out bytes.Buffer
	encoder := json.NewEncoder(&out)
	encoder.SetEscapeHTML(false)
	_ = encoder.Encode(value)
	return strings.TrimSuffix(out.String(), "\n")
}

func number(f float64) string {
	return strconv.FormatFloat(f, 'f', -1, 64)
}

func anyOf(list []any, match func(any) bool) bool {
	for _, item := range list {
		if match(item) {
			return true
		}
	}
	return false
}

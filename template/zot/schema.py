"""A tool's arguments checked against its JSON Schema before the handler runs.

The keywords checked: type, required, properties, additionalProperties,
items, enum, minimum, maximum, minLength, maxLength. Others (format,
pattern, $ref, oneOf, ...) are left to the handler: a keyword the checker
does not know never refuses a call. Every zot extension runtime of this
template words the problems the same way.
"""

from __future__ import annotations

import json
from typing import Any

TYPES = {
    "string": str,
    "boolean": bool,
    "object": dict,
    "array": list,
    "null": type(None),
}
ARTICLES = {"integer": "an integer", "array": "an array", "object": "an object"}


def problems(schema: Any, value: Any, path: str = "") -> list[str]:
    """What is wrong with VALUE for SCHEMA, each naming where: `"text" is
    required`, `"tags[1]" must be a string`; [] when nothing is."""
    if not isinstance(schema, dict):
        return []
    where = _quoted(path) if path else "the arguments"
    types = schema.get("type")
    types = [types] if isinstance(types, str) else types
    if isinstance(types, list) and not any(_is(value, t) for t in types):
        return [f"{where} must be {_either(types)}"]
    found = []
    choices = schema.get("enum")
    if isinstance(choices, list) and not any(_same(value, c) for c in choices):
        listed = ", ".join(_json(c) for c in choices)
        found.append(f"{where} must be one of {listed}")
    if isinstance(value, str):
        found += _bounds(schema, len(value), where, "minLength", "maxLength", " long")
    elif _is(value, "number"):
        found += _bounds(schema, value, where, "minimum", "maximum", "")
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            found += problems(schema["items"], item, f"{path}[{i}]")
    elif isinstance(value, dict):
        found += _object(schema, value, path)
    return found


def _object(schema: dict, value: dict, path: str) -> list[str]:
    prefix = f"{path}." if path else ""
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = schema.get("required")
    found = [
        f"{_quoted(prefix + name)} is required"
        for name in (required if isinstance(required, list) else [])
        if isinstance(name, str) and name not in value
    ]
    extra = schema.get("additionalProperties", True)
    for name, item in sorted(value.items()):  # in the same order everywhere
        if name in properties:
            found += problems(properties[name], item, prefix + name)
        elif extra is False:
            found.append(f"{_quoted(prefix + name)} is not expected")
        else:
            found += problems(extra, item, prefix + name)
    return found


def _bounds(
    schema: dict, size: Any, where: str, low: str, high: str, unit: str
) -> list[str]:
    found = []
    least, most = schema.get(low), schema.get(high)
    if _is(least, "number") and size < least:
        found.append(f"{where} must be at least {_count(least, unit)}{unit}")
    if _is(most, "number") and size > most:
        found.append(f"{where} must be at most {_count(most, unit)}{unit}")
    return found


def _count(number: Any, unit: str) -> str:
    if not unit:  # a number's bound
        return json.dumps(number)
    return f"{number:g} character" + ("" if number == 1 else "s")


def _is(value: Any, kind: Any) -> bool:
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "integer":
        return _is(value, "number") and float(value).is_integer()
    wanted = TYPES.get(kind) if isinstance(kind, str) else None
    if wanted is None:
        return True  # a type the checker does not know refuses nothing
    return isinstance(value, wanted) and (wanted is bool or not isinstance(value, bool))


def _either(types: list) -> str:
    names = [_name(t) for t in types]
    return (
        " or ".join(names)
        if len(names) < 3
        else ", ".join(names[:-1]) + " or " + names[-1]
    )


def _name(kind: Any) -> str:
    if kind == "boolean":
        return "true or false"
    if kind == "null":
        return "null"
    return ARTICLES.get(kind, f"a {kind}")


def _json(value: Any) -> str:
    """VALUE as JSON, as every runtime writes it in a problem."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _quoted(path: str) -> str:
    return _json(path)


def _same(a: Any, b: Any) -> bool:
    """JSON equality: 1 and 1.0 are the same, true and 1 are not."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return a == b

// A tool's arguments checked against its JSON Schema before the handler
// runs. The keywords checked: type, required, properties,
// additionalProperties, items, enum, minimum, maximum, minLength, maxLength.
// Others (format, pattern, $ref, oneOf, ...) are left to the handler: a
// keyword the checker does not know never refuses a call. Every zot
// extension runtime of this template words the problems the same way.
// It belongs to the template.

type Schema = Record<string, unknown>;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** What is wrong with `value` for `schema`, each naming where: `"text" is
 * required`, `"tags[1]" must be a string`; [] when nothing is. */
export function problems(schema: unknown, value: unknown, path = ""): string[] {
  if (!isObject(schema)) return [];
  const where = path ? JSON.stringify(path) : "the arguments";
  const types = typeof schema.type === "string" ? [schema.type] : schema.type;
  if (Array.isArray(types) && !types.some((type) => is(value, type))) {
    return [`${where} must be ${either(types)}`];
  }
  const found: string[] = [];
  const choices = schema.enum;
  if (Array.isArray(choices) && !choices.some((c) => same(value, c))) {
    const listed = choices.map((c) => JSON.stringify(c)).join(", ");
    found.push(`${where} must be one of ${listed}`);
  }
  if (typeof value === "string") {
    const length = [...value].length; // characters, not UTF-16 units
    found.push(
      ...bounds(schema, length, where, "minLength", "maxLength", true),
    );
  } else if (typeof value === "number") {
    found.push(...bounds(schema, value, where, "minimum", "maximum", false));
  } else if (Array.isArray(value) && isObject(schema.items)) {
    value.forEach((item, i) => {
      found.push(...problems(schema.items, item, `${path}[${i}]`));
    });
  } else if (isObject(value)) {
    found.push(...objectProblems(schema, value, path));
  }
  return found;
}

function objectProblems(
  schema: Schema,
  value: Record<string, unknown>,
  path: string,
): string[] {
  const prefix = path ? `${path}.` : "";
  const properties = isObject(schema.properties) ? schema.properties : {};
  const required = Array.isArray(schema.required) ? schema.required : [];
  const found = required
    .filter((name) => typeof name === "string" && !(name in value))
    .map((name) => `${JSON.stringify(prefix + name)} is required`);
  const extra = schema.additionalProperties ?? true;
  // In the same order in every language: by name.
  const entries = Object.entries(value).sort(([a], [b]) =>
    a < b ? -1 : a > b ? 1 : 0,
  );
  for (const [name, item] of entries) {
    if (Object.hasOwn(properties, name)) {
      found.push(...problems(properties[name], item, prefix + name));
    } else if (extra === false) {
      found.push(`${JSON.stringify(prefix + name)} is not expected`);
    } else {
      found.push(...problems(extra, item, prefix + name));
    }
  }
  return found;
}

function bounds(
  schema: Schema,
  size: number,
  where: string,
  low: string,
  high: string,
  characters: boolean,
): string[] {
  const found: string[] = [];
  const [least, most] = [schema[low], schema[high]];
  const unit = (n: number) =>
    characters ? ` character${n === 1 ? "" : "s"} long` : "";
  if (typeof least === "number" && size < least) {
    found.push(`${where} must be at least ${least}${unit(least)}`);
  }
  if (typeof most === "number" && size > most) {
    found.push(`${where} must be at most ${most}${unit(most)}`);
  }
  return found;
}

function is(value: unknown, type: unknown): boolean {
  switch (type) {
    case "string":
    case "boolean":
      return typeof value === type;
    case "number":
      return typeof value === "number";
    case "integer":
      return Number.isInteger(value);
    case "object":
      return isObject(value);
    case "array":
      return Array.isArray(value);
    case "null":
      return value === null;
    default:
      return true; // a type the checker does not know refuses nothing
  }
}

function either(types: unknown[]): string {
  const names = types.map(name);
  const last = names.pop() ?? "";
  return names.length ? `${names.join(", ")} or ${last}` : last;
}

function name(type: unknown): string {
  if (type === "boolean") return "true or false";
  if (type === "null") return "null";
  if (type === "integer" || type === "array" || type === "object")
    return `an ${type}`;
  return `a ${String(type)}`;
}

/** JSON equality: 1 and 1.0 are the same, true and 1 are not. */
function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (
    typeof a !== "object" ||
    typeof b !== "object" ||
    a === null ||
    b === null
  ) {
    return false;
  }
  return JSON.stringify(a) === JSON.stringify(b);
}

// The entry point zot runs (./build bundles it into dist/index.js).
// The extension itself is in src/extension.ts.
import { extension } from "./extension.js";
import { run } from "./protocol.js";

run(extension);

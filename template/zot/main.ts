// The entry point zot starts (see extension.json); the handlers are in
// src/extension.ts. It belongs to the template.
import { ext } from "../src/extension.js";

ext.run();

// The entry point zot starts (see extension.json); the handlers are in
// src/extension.ts.
import { ext } from "./extension.js";

ext.run();

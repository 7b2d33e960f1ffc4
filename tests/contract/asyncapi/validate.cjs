// Validates an AsyncAPI document with the AsyncAPI project's own parser (@asyncapi/parser, which
// checks the document against the AsyncAPI 3 specification's JSON Schema, resolves every $ref,
// files included, and applies its spectral rules). Prints every diagnostic; exits 1 if any is an
// error or a warning, or if the document does not parse.
//   node validate.cjs <dir holding node_modules/@asyncapi/parser> <asyncapi.yaml>
'use strict';
const { createRequire } = require('module');
const path = require('path');

const [modulesDir, document] = process.argv.slice(2);
if (!modulesDir || !document) {
  console.error('usage: node validate.cjs <modules dir> <asyncapi.yaml>');
  process.exit(2);
}
let parserModule;
try {
  parserModule = createRequire(path.join(path.resolve(modulesDir), 'package.json'))('@asyncapi/parser');
} catch (e) {
  console.error(`FAIL @asyncapi/parser is not installed in ${modulesDir} (scripts/setup installs it): ${e.message}`);
  process.exit(1);
}
const { Parser, fromFile } = parserModule;
const SEVERITY = ['error', 'warning', 'info', 'hint'];

(async () => {
  const { document: parsed, diagnostics } = await fromFile(new Parser(), document).parse();
  let bad = 0;
  for (const d of diagnostics) {
    const severity = SEVERITY[d.severity] || String(d.severity);
    if (d.severity <= 1) bad += 1;
    console.log(`${d.severity <= 1 ? 'FAIL' : 'note'} ${severity} ${d.code}: ${d.message} at /${(d.path || []).join('/')}`);
  }
  if (!parsed) {
    console.log('FAIL the document does not parse');
    bad += 1;
  }
  console.log(`${document}: ${bad ? bad + ' problems' : 'valid AsyncAPI'}`);
  process.exit(bad ? 1 : 0);
})().catch((e) => {
  console.log(`FAIL ${e.stack || e}`);
  process.exit(1);
});

// Formatting for leasehold, checked by `npm run lint` and applied by `npm run format`.
//
// Effect's style, as Effect's own repository gets it: ESLint runs @effect/eslint-plugin's `dprint`
// rule, which formats each file with dprint's TypeScript formatter (bundled from npm as WebAssembly,
// nothing downloaded at run time) and reports every difference. The dprint options are Effect's
// (2-space indent, no semicolons, double quotes, width 120, no trailing commas, `function*()`),
// except that import/export order is kept as written (Effect's repository sorts them), which keeps
// the first format pass small.
import * as effectEslint from "@effect/eslint-plugin"
import tsParser from "@typescript-eslint/parser"

export default [
  {
    ignores: ["**/node_modules/**", "**/dist/**", "bench/results/**"]
  },
  ...effectEslint.configs.dprint.map((config) => ({
    ...config,
    files: ["{src,test,bench,scripts,examples}/**/*.{ts,mts,cts}"]
  })),
  {
    files: ["{src,test,bench,scripts,examples}/**/*.{ts,mts,cts}"],
    languageOptions: {
      parser: tsParser,
      ecmaVersion: "latest",
      sourceType: "module"
    },
    linterOptions: {
      reportUnusedDisableDirectives: "error"
    },
    rules: {
      "@effect/dprint": [
        "error",
        {
          config: {
            indentWidth: 2,
            lineWidth: 120,
            semiColons: "asi",
            quoteStyle: "alwaysDouble",
            trailingCommas: "never",
            operatorPosition: "maintain",
            "arrowFunction.useParentheses": "force",
            "module.sortImportDeclarations": "maintain",
            "module.sortExportDeclarations": "maintain",
            "importDeclaration.sortNamedImports": "maintain",
            "exportDeclaration.sortNamedExports": "maintain"
          }
        }
      ]
    }
  }
]

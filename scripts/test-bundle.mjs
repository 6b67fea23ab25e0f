// The test files as plain ES modules, for scripts/test.mjs: esbuild bundles each test file with the helpers and
// sources it imports (npm packages stay external, shared code in chunks) once per run, and each file then runs
// under plain `node --test`, without tsx. Through tsx every module a file loads, node_modules included, passes
// through its resolve and load hooks on a thread of their own: measured on the 2-core machine beside another
// workload, a light file's imports took 3.6-4.1 s of CPU that way and 1.4-1.7 s bundled (the database and the
// service cost the same either way). The same esbuild that tsx runs strips the types, with the same
// tsconfig.json and keepNames, and source maps keep stack traces on the .ts lines.
import { writeFileSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const OWN = { url: '__ownImportMetaUrl', dirname: '__ownImportMetaDirname', filename: '__ownImportMetaFilename' };

/**
 * Each project file's `import.meta.url` (and dirname, filename) stays its own absolute location, as under tsx:
 * files found next to a source (migrations, the PGlite template, fixtures, package.json) are found from a chunk.
 * `define` turns the expressions (never the same words inside a string) into names that each such file
 * declares for itself, on its first line so that source maps keep their lines.
 */
function ownImportMeta(root) {
  const loaders = { '.ts': 'ts', '.tsx': 'tsx', '.mts': 'ts', '.mjs': 'js', '.js': 'js' };
  return {
    name: 'own-import-meta',
    setup(build) {
      build.onLoad({ filter: /\.(ts|tsx|mts|mjs|js)$/ }, async (args) => {
        if (args.path.split(path.sep).includes('node_modules') || !args.path.startsWith(root)) return undefined;
        const source = await readFile(args.path, 'utf8');
        const loader = loaders[path.extname(args.path)];
        if (!source.includes('import.meta.')) return { contents: source, loader };
        const own = `const ${OWN.url} = ${JSON.stringify(pathToFileURL(args.path).href)}, ${OWN.dirname} = ${JSON.stringify(path.dirname(args.path))}, ${OWN.filename} = ${JSON.stringify(args.path)};`;
        const shebang = source.startsWith('#!') ? source.indexOf('\n') + 1 : 0;
        return { contents: source.slice(0, shebang) + own + source.slice(shebang), loader, resolveDir: path.dirname(args.path) };
      });
    },
  };
}

/**
 * Bundles `files` (project-relative .ts paths) into `outDir` (under node_modules, so that the bundles' bare
 * imports find the packages) and returns a map from each file to its bundle. Throws esbuild's errors.
 */
export async function bundleTests(files, { root = process.cwd(), outDir }) {
  const esbuild = await import('esbuild');
  await rm(outDir, { recursive: true, force: true });
  await esbuild.build({
    absWorkingDir: root,
    entryPoints: files,
    outdir: outDir,
    outbase: root,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    splitting: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    keepNames: true,
    sourcemap: 'linked',
    sourcesContent: false,
    logLevel: 'error',
    define: { 'import.meta.url': OWN.url, 'import.meta.dirname': OWN.dirname, 'import.meta.filename': OWN.filename },
    plugins: [ownImportMeta(root)],
  });
  return new Map(files.map((file) => [file, path.join(outDir, file.replace(/\.ts$/, '.mjs'))]));
}

/**
 * Writes a module that runs several test files in one process, each as a suite named by its file: a file's
 * top-level tests and hooks, registered while its bundle is imported inside the suite's callback, belong to
 * that suite (node:test finds the suite being built through the async context), and the suites run one after
 * the other. The files share the process, its environment and the modules of their chunks. Returns its path.
 */
export function writeGroupEntry(outDir, name, files, bundles) {
  const entry = path.join(outDir, `${name}.mjs`);
  const suites = files.map((file) => `describe(${JSON.stringify(file)}, async () => {\n  await import(${JSON.stringify(pathToFileURL(bundles.get(file)).href)});\n});`);
  writeFileSync(entry, `import { describe } from 'node:test';\n${suites.join('\n')}\n`);
  return entry;
}

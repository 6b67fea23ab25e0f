// Types of scripts/server-bundle.mjs (plain JavaScript: it runs before anything can run TypeScript).
export declare const BUNDLE: string;
export declare function newestInput(root: string): Promise<number>;
export declare function ensureServerBundle(root?: string): Promise<string>;

// The scopes of the public API (spec: Authentication). A read endpoint accepts the read or the write scope.
export const SCOPES = [
  'catalog:read',
  'people:read',
  'people:write',
  'keys:read',
  'keys:write',
  'locks:control',
  'events:read',
  'webhooks:manage',
] as const;

export type Scope = (typeof SCOPES)[number];

/** The scopes that allow a read of `resource`: its read scope and its write scope. */
export function readScopes(resource: 'people' | 'keys'): Scope[] {
  return [`${resource}:read`, `${resource}:write`];
}

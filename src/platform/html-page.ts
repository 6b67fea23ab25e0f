// The few HTML pages the service serves itself (the console's shell, /docs and /, the key holder's page): text
// escaped for HTML, and the headers every such page carries with its own Content-Security-Policy. Three headers
// and one replace: @fastify/helmet would bring a dozen defaults and a policy of its own to override on every page,
// and escape-html a dependency for five lines.
import type { FastifyReply } from 'fastify';

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text made safe inside HTML elements and quoted attributes. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ENTITIES[c] as string);
}

/** The page's policy, no sniffing of its type, no referrer sent from it. */
export function pageHeaders(reply: FastifyReply, contentSecurityPolicy: string): FastifyReply {
  return reply.header('content-security-policy', contentSecurityPolicy).header('x-content-type-options', 'nosniff').header('referrer-policy', 'no-referrer');
}

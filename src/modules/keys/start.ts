// Starting the keys module (src/platform/module.ts): keys, invitations, setup links and the operator's
// hand-over.
import type { Core, Module } from '../../platform/module.ts';
import type { AccessLists } from '../access/index.ts';
import type { LockingSystems } from '../locking-system/index.ts';
import type { MessageQueue } from '../notifications/index.ts';
import { activationRoutes } from './activation-routes.ts';
import { KeysArea } from './area.ts';
import { keysRoutes, keysSandboxRoutes } from './routes.ts';

export interface Keys extends Module {
  area: KeysArea;
  /** Setup links as the key holder's page uses them: whether one is usable (and for whom), and its activation. */
  links: {
    linkUsable(token: string): Promise<{ personName: string } | null>;
    activate: KeysArea['activation']['activate'];
  };
}

export interface KeysModuleDeps {
  lockingSystems: LockingSystems;
  /** Setup links go out through the message queue. */
  messages: MessageQueue;
  /** Gateway access lists: refreshed in every transaction that changes what a key opens. */
  access: AccessLists;
}

export async function startKeys(core: Core, deps: KeysModuleDeps): Promise<Keys> {
  const { config } = core;
  const area = new KeysArea({
    db: core.db,
    clock: core.clock,
    lockingSystems: deps.lockingSystems,
    messages: deps.messages,
    publicUrl: config.publicUrl,
    brandName: config.brandName,
    revocationEnabled: config.keyRevocationEnabled,
    log: core.log,
    pages: core.pages,
    access: deps.access,
  });
  // Key changes every gateway applied end their `sent` state.
  deps.access.onConfirm((tx, keyIds) => area.confirmApplied(tx, keyIds));
  await area.start();
  return {
    area,
    links: {
      async linkUsable(token) {
        const link = await area.activation.describeLink(token);
        return link ? { personName: link.invitation.person_name } : null;
      },
      activate: (token, bind) => area.activation.activate(token, bind),
    },
    async routes(app) {
      keysRoutes(app, area);
      await app.register(async (scope) => {
        // The setup page's form posts an empty urlencoded body; only these routes accept it.
        scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, _body, done) => done(null, {}));
        activationRoutes(scope as typeof app, area.activation, config.brandName);
      });
    },
    sandboxRoutes: (app) => keysSandboxRoutes(app, area),
  };
}

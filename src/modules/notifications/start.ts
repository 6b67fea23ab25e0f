// Starting the notifications module (src/platform/module.ts): setup links by SMS and e-mail on the work queue.
import type { Core, Module } from '../../platform/module.ts';
import { MessageQueue, type InvitationMessageSent } from './message-queue.ts';
import { notifierFor } from './notifier.ts';
import { outboxSandboxRoutes } from './sandbox-routes.ts';

export interface Notifications extends Module {
  messages: MessageQueue;
}

export interface NotificationsDeps {
  /** Tells the keys module when an invitation's message went out (its sent times). */
  invitationSent: InvitationMessageSent;
}

export function startNotifications(core: Core, deps: NotificationsDeps): Notifications {
  const { db, clock } = core;
  const notifiers = notifierFor(core.config, db, clock);
  for (const [channel, variable] of [['email', 'SMTP_URL'], ['sms', 'SMS_URL']] as const) {
    if (!notifiers[channel]) core.log.warn(`${variable} is not set: ${channel === 'email' ? 'e-mail' : 'SMS'} messages are queued and not sent until it is`);
  }
  const messages = new MessageQueue(db, clock, notifiers, core.secrets, core.log, deps.invitationSent);
  core.jobs.register(messages.job());
  core.jobs.register(messages.retentionJob());
  return { messages, sandboxRoutes: (app) => outboxSandboxRoutes(app, db) };
}

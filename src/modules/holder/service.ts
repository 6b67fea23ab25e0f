// The key holder's surface (README "The key holder's page"): a passkey registered when a setup link is
// activated, and every later action a fresh WebAuthn assertion over a single-use 60 s challenge. A
// discoverable credential names the key, so no cookie or link is involved: a forwarded link or a copied
// cookie opens nothing.
import { randomBytes } from 'node:crypto';
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../platform/clock.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import { errors } from '../../platform/errors.ts';
import type { OpenLimit, RateLimits } from '../../platform/rate-limit.ts';
import { hashToken } from '../../platform/secrets.ts';
import { decideForKey, keyDoors, type Decision, type HolderKey, type TimeWindow } from '../access/index.ts';
import { KEY_CHANGED, type KeyHolder, type UnlockService } from '../devices/index.ts';
import {
  deletePasskey,
  findHolderKey,
  findPasskey,
  insertChallenge,
  insertPasskey,
  isDuplicatePasskey,
  keyExists,
  lockNames,
  passkeysOfKey,
  recordPasskeyUse,
  spendChallenge,
  type HolderKeyRow,
} from './store.ts';

/**
 * @simplewebauthn/server, loaded at the first passkey ceremony rather than at start: it brings X.509 and
 * ASN.1 parsers that took about a tenth of a second of every start (bench/RESULTS.md, start-up).
 */
let webauthnModule: Promise<typeof import('@simplewebauthn/server')> | undefined;
const webauthn = () => (webauthnModule ??= import('@simplewebauthn/server'));

/** A challenge is good for this long, once. */
export const CHALLENGE_TTL_MS = 60_000;
/** Decisions one Open makes while the key changes under them (see open), before the page is told to try again. */
const MAX_DECISIONS_PER_OPEN = 3;
/**
 * Limits (per minute): challenges and taps per address, taps per key, failed assertions per address;
 * and, counted per address before anything else runs (each of these requests looks something up in the
 * database, with nothing to authenticate first), the setup-link requests (`/activate/{token}` and its passkey
 * steps: a person needs 2 or 3 for an activation) and the polls of a command after Open (the page asks up to
 * 200 times over 42 s while a door does not answer: followDelayMs in web/follow-schedule.ts).
 */
export const HOLDER_LIMITS = { challengesPerIp: 60, tapsPerKey: 20, failedPerIp: 10, setupLinkPerIp: 60, pollsPerIp: 300 } as const;

/** The per-address budgets of the open routes above (platform/access.ts counts them). */
export const SETUP_LINK_LIMIT: OpenLimit = { bucket: 'setup-link', perMinute: HOLDER_LIMITS.setupLinkPerIp };
export const COMMAND_POLL_LIMIT: OpenLimit = { bucket: 'holder-poll', perMinute: HOLDER_LIMITS.pollsPerIp };

/** Why a key opens nothing at a door, as the page words it. */
export type Refusal = 'revoked' | 'returned' | 'not_handed_over' | 'no_credential' | 'expired' | 'not_yet_valid' | 'outside_time_window' | 'no_access';

export interface HolderDeps {
  db: Database;
  clock: Clock;
  publicUrl: string;
  brandName: string;
  limits: RateLimits;
  unlock: UnlockService;
  /** The keys module's setup links: whether one is usable, and its activation. */
  linkUsable(token: string): Promise<{ personName: string } | null>;
  /** `bind` runs in the activation's transaction: the key is made only with it. */
  activate(token: string, bind?: (tx: Queryable, keyId: number) => Promise<void>): Promise<{ key_id: number; invitation_id: number }>;
}

export interface DoorView {
  lock_id: number;
  name: string;
  place: string;
  time_zone: string;
  windows: TimeWindow[] | null;
  opens_now: boolean;
  reason: Refusal | null;
}

export interface KeyView {
  key: { id: number; name: string; person_name: string; starts_at: string; expires_at: string | null };
  /** Set when the key opens nothing at all any more (revoked, returned, expired …). */
  refusal: Refusal | null;
  doors: DoorView[];
}

/** The challenge a client's answer was made over (clientDataJSON, base64url JSON); null when unreadable. */
function challengeOf(response: { response?: { clientDataJSON?: unknown } }): string | null {
  const data = response.response?.clientDataJSON;
  if (typeof data !== 'string' || data.length > 4096) return null;
  try {
    const parsed = JSON.parse(Buffer.from(data, 'base64url').toString('utf8')) as { challenge?: unknown };
    // The service's challenges are base64url: anything else matches none, and a NUL (decoded from clientDataJSON,
    // past the body's NUL check) would reach a text parameter the database refuses (a 500).
    return typeof parsed.challenge === 'string' && /^[A-Za-z0-9_-]{1,128}$/.test(parsed.challenge) ? parsed.challenge : null;
  } catch {
    return null;
  }
}

/** `client` in every method: the request's clientKey, what the per-address limits count the caller by. */
export class HolderService {
  readonly origin: string;
  readonly rpId: string;

  constructor(private readonly deps: HolderDeps) {
    const url = new URL(deps.publicUrl);
    this.origin = url.origin;
    this.rpId = url.hostname;
  }

  private now(): Date {
    return this.deps.clock.now();
  }

  /** 32 random bytes; stored as the base64url text the client's clientDataJSON will carry. */
  private async newChallenge(purpose: 'register' | 'assert', subject: string | null): Promise<Uint8Array<ArrayBuffer>> {
    const bytes = new Uint8Array(32);
    bytes.set(randomBytes(32));
    const now = this.now();
    await insertChallenge(this.deps.db, Buffer.from(bytes).toString('base64url'), purpose, subject, new Date(now.getTime() + CHALLENGE_TTL_MS), now);
    return bytes;
  }

  private async limit(bucket: string, key: string, perMinute: number): Promise<void> {
    const state = await this.deps.limits.consume(bucket, key, perMinute);
    if (state.exceeded) throw this.deps.limits.refusal(state);
  }

  private async failed(client: string): Promise<never> {
    await this.deps.limits.consume('holder-failed', client, HOLDER_LIMITS.failedPerIp);
    throw errors.passkeyRefused();
  }

  /** Registration options for a usable setup link (410 otherwise). */
  async registrationOptions(token: string, client: string) {
    await this.limit('holder-challenge', client, HOLDER_LIMITS.challengesPerIp);
    const link = await this.deps.linkUsable(token);
    if (!link) throw errors.linkUnusable();
    const challenge = await this.newChallenge('register', hashToken(token));
    const { generateRegistrationOptions } = await webauthn();
    return generateRegistrationOptions({
      rpName: this.deps.brandName,
      rpID: this.rpId,
      userName: link.personName,
      userDisplayName: link.personName,
      challenge,
      attestationType: 'none',
      authenticatorSelection: { authenticatorAttachment: 'platform', residentKey: 'required', userVerification: 'required' },
      timeout: CHALLENGE_TTL_MS,
    });
  }

  /** Verifies the attestation, activates the link's key and binds the passkey to it. */
  async register(token: string, response: RegistrationResponseJSON, client: string): Promise<{ key_id: number; invitation_id: number }> {
    const lockout = await this.deps.limits.isExhausted('holder-failed', client, HOLDER_LIMITS.failedPerIp);
    if (lockout.exceeded) throw this.deps.limits.refusal(lockout);
    const challenge = challengeOf(response);
    if (!challenge || !(await spendChallenge(this.deps.db, challenge, 'register', hashToken(token), this.now()))) return this.failed(client);
    const { verifyRegistrationResponse } = await webauthn();
    let verified;
    try {
      verified = await verifyRegistrationResponse({ response, expectedChallenge: challenge, expectedOrigin: this.origin, expectedRPID: this.rpId, requireUserVerification: true });
    } catch {
      return this.failed(client);
    }
    if (!verified.verified) return this.failed(client);
    const { credential } = verified.registrationInfo;
    // A credential id is bound to one key only. Checked before the link is claimed; the unique index decides a
    // race, inside the activation, so that the link is never spent on a key with no device.
    if (await findPasskey(this.deps.db, credential.id)) return this.failed(client);
    const publicKey = Buffer.from(credential.publicKey).toString('base64url');
    try {
      return await this.deps.activate(token, (tx, keyId) => insertPasskey(tx, keyId, credential.id, publicKey, credential.counter, this.now()));
    } catch (error) {
      if (isDuplicatePasskey(error)) return this.failed(client);
      throw error;
    }
  }

  /** Options for an assertion: a new challenge, discoverable credentials (no list of ids). */
  async assertionOptions(client: string) {
    await this.limit('holder-challenge', client, HOLDER_LIMITS.challengesPerIp);
    const challenge = await this.newChallenge('assert', null);
    const { generateAuthenticationOptions } = await webauthn();
    return generateAuthenticationOptions({ rpID: this.rpId, challenge, userVerification: 'required', timeout: CHALLENGE_TTL_MS });
  }

  /** Checks an assertion (challenge spent once, signature, origin, RP id, counter): the key it names. */
  private async verify(response: AuthenticationResponseJSON, client: string): Promise<HolderKeyRow> {
    const lockout = await this.deps.limits.isExhausted('holder-failed', client, HOLDER_LIMITS.failedPerIp);
    if (lockout.exceeded) throw this.deps.limits.refusal(lockout);
    const challenge = challengeOf(response);
    if (!challenge || typeof response.id !== 'string') return this.failed(client);
    // Failures count per address only. A count per key refused the key's own holder once anyone who had seen its
    // credential id (not a secret in WebAuthn) sent five bad assertions naming it; and an assertion is a signature,
    // which cannot be guessed however many tries are allowed.
    const passkey = await findPasskey(this.deps.db, response.id);
    if (!(await spendChallenge(this.deps.db, challenge, 'assert', null, this.now())) || !passkey) return this.failed(client);
    const { verifyAuthenticationResponse } = await webauthn();
    let verified;
    try {
      verified = await verifyAuthenticationResponse({
        response,
        expectedChallenge: challenge,
        expectedOrigin: this.origin,
        expectedRPID: this.rpId,
        credential: { id: passkey.credential_id, publicKey: Buffer.from(passkey.public_key, 'base64url'), counter: passkey.sign_count },
        requireUserVerification: true,
      });
    } catch {
      return this.failed(client);
    }
    if (!verified.verified) return this.failed(client);
    // The counter moves forward once per use (or stays 0 where the authenticator keeps none).
    if (!(await recordPasskeyUse(this.deps.db, passkey.id, verified.authenticationInfo.newCounter, this.now()))) return this.failed(client);
    const key = await findHolderKey(this.deps.db, passkey.key_id);
    if (!key) return this.failed(client);
    await this.limit('holder-taps', String(key.id), HOLDER_LIMITS.tapsPerKey);
    return key;
  }

  /** Why the key as a whole opens nothing at `now`, or null. */
  private keyRefusal(key: HolderKeyRow, now: Date): Refusal | null {
    if (key.revoked_at) return 'revoked';
    if (key.state === 'returned') return 'returned';
    if (key.state !== 'handed_over' && key.state !== 'sent') return 'not_handed_over';
    if (!key.has_credential) return 'no_credential';
    if (key.expires_at && now >= key.expires_at) return 'expired';
    if (now < key.starts_at) return 'not_yet_valid';
    return null;
  }

  private accessKey(key: HolderKeyRow): HolderKey {
    return {
      id: key.id,
      state: key.state,
      startsAt: key.starts_at,
      expiresAt: key.expires_at,
      accountId: key.account_id,
      revoked: key.revoked_at !== null,
      securityGroups: key.security_groups,
      personPath: key.person_path,
    };
  }

  /** "Show my doors": the doors the key opens and when. */
  async doors(response: AuthenticationResponseJSON, client: string): Promise<KeyView> {
    const key = await this.verify(response, client);
    const now = this.now();
    const refusal = this.keyRefusal(key, now);
    const doors = refusal ? [] : await keyDoors(this.deps.db, this.accessKey(key), now);
    const names = await lockNames(this.deps.db, doors.map((d) => d.lockId));
    return {
      key: { id: key.id, name: key.name, person_name: key.person_name, starts_at: key.starts_at.toISOString(), expires_at: key.expires_at?.toISOString() ?? null },
      refusal,
      doors: doors.map((door) => ({
        lock_id: door.lockId,
        name: names.get(door.lockId)?.name ?? '',
        place: names.get(door.lockId)?.place ?? '',
        time_zone: door.timeZone,
        windows: door.windows,
        opens_now: door.decision.granted,
        reason: door.decision.granted ? null : (door.decision.reason as Refusal),
      })),
    };
  }

  /**
   * "Open": the one decision, then one command for the lock; a refusal says why and is logged as access.denied.
   * `log`: the request's logger (a line about the command carries its request id).
   */
  async open(response: AuthenticationResponseJSON, lockId: number, client: string, log: FastifyBaseLogger) {
    let key: HolderKeyRow | null = await this.verify(response, client);
    for (let tries = 1; ; tries++) {
      const now = this.now();
      const holder: KeyHolder = {
        accountId: key.account_id,
        key: { id: key.id, name: key.name },
        person: { id: key.person_id, name: key.person_name, email: key.person_email },
        version: key.row_version,
      };
      // A key whose credential the operator removed presents nothing at a reader, and opens nothing here either.
      const decision: Decision = key.has_credential ? await decideForKey(this.deps.db, this.accessKey(key), lockId, now) : { granted: false, keyId: key.id, reason: 'no_access' };
      if (!decision.granted) {
        const refusal: Refusal = this.keyRefusal(key, now) ?? (decision.reason === 'unknown_key' ? 'revoked' : decision.reason);
        await this.deps.unlock.unlockForKey(holder, lockId, decision.reason, log);
        return { refused: refusal, command: null };
      }
      const command = await this.deps.unlock.unlockForKey(holder, lockId, null, log);
      if (command !== KEY_CHANGED) return { refused: null, command };
      // The key or its person changed since the decision (revoked, say): decide again on what is there now. A key
      // changing under every try is being edited: the page is told to try again in a second.
      if (tries >= MAX_DECISIONS_PER_OPEN) throw errors.rateLimited(1);
      key = await findHolderKey(this.deps.db, key.id);
      // Its person was deleted meanwhile (which revoked the key). Not logged, as a tap of a deleted person's key is not
      // (verify): a new event would carry the contact details the deletion has just forgotten.
      if (!key) return { refused: 'revoked' as Refusal, command: null };
    }
  }

  /** The page polls its command; the command id alone (uuidv7, unguessable part) and only its status. */
  async commandStatus(commandId: string) {
    const command = await this.deps.unlock.anyKeyCommand(commandId);
    if (!command) throw errors.notFound('command');
    return { id: command.id, status: command.status, error: command.error?.code ?? null };
  }

  // The operator's side: a key's devices.
  async devices(keyId: number) {
    if (!(await keyExists(this.deps.db, keyId))) throw errors.notFound('key');
    const rows = await passkeysOfKey(this.deps.db, keyId);
    return { data: rows.map((row) => ({ id: Number(row.id), registered_at: row.created_at.toISOString(), last_used_at: row.last_used_at?.toISOString() ?? null })) };
  }

  async removeDevice(keyId: number, deviceId: number): Promise<void> {
    if (!(await keyExists(this.deps.db, keyId))) throw errors.notFound('key');
    if (!(await deletePasskey(this.deps.db, keyId, deviceId))) throw errors.notFound('device');
  }
}

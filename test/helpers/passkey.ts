// A passkey in software, for tests and the bench that tap without a browser: a P-256 key from node:crypto,
// and the registration and assertion responses a platform authenticator and its browser would send
// (WebAuthn Level 3: clientDataJSON, authenticator data, a "none" attestation, an ES256 signature), as
// @simplewebauthn/server verifies them. The CBOR (attestation object, COSE key) is written with the encoder
// @simplewebauthn/server itself uses, not by hand. One authenticator holds one credential, for the origin
// it is made for: the service's PUBLIC_URL origin (a setup link's origin), its host the RP id.
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { isoCBOR } from '@simplewebauthn/server/helpers';
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/server';

const FLAG_USER_PRESENT = 0x01;
const FLAG_USER_VERIFIED = 0x04;
const FLAG_ATTESTED_DATA = 0x40;

/** What the CBOR encoder takes (maps are JavaScript Maps). */
type Cbor = Parameters<typeof isoCBOR.encode>[0];

const b64url = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64url');

export class SoftwarePasskey {
  readonly rpId: string;
  readonly credentialId = randomBytes(16);
  private readonly privateKey: KeyObject;
  private readonly publicKey: KeyObject;
  private userHandle: string | null = null;
  /** The signature counter, moved forward by every assertion (as most platform authenticators do). */
  counter = 0;
  /** Whether the authenticator says it verified the user (screen lock, biometrics): false for one that only saw a touch. */
  userVerified = true;

  /** `origin`: the page's origin the browser would report (scheme, host, port); its host is the RP id. */
  constructor(readonly origin: string) {
    this.rpId = new URL(origin).hostname;
    const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    this.privateKey = pair.privateKey;
    this.publicKey = pair.publicKey;
  }

  get id(): string {
    return b64url(this.credentialId);
  }

  private clientData(type: 'webauthn.create' | 'webauthn.get', challenge: string): Buffer {
    return Buffer.from(JSON.stringify({ type, challenge, origin: this.origin, crossOrigin: false }));
  }

  private authenticatorData(flags: number, attested: Uint8Array | null): Buffer {
    const counter = Buffer.alloc(4);
    counter.writeUInt32BE(this.counter);
    const rpIdHash = createHash('sha256').update(this.rpId).digest();
    return Buffer.concat([rpIdHash, Buffer.from([flags]), counter, ...(attested ? [attested] : [])]);
  }

  /** The public key as COSE_Key (EC2, ES256): the map a credential's attested data carries. */
  private coseKey(): Uint8Array {
    const jwk = this.publicKey.export({ format: 'jwk' });
    return isoCBOR.encode(
      new Map<number, Cbor>([
        [1, 2], // kty: EC2
        [3, -7], // alg: ES256
        [-1, 1], // crv: P-256
        [-2, Buffer.from(jwk.x as string, 'base64url')],
        [-3, Buffer.from(jwk.y as string, 'base64url')],
      ]),
    );
  }

  /** What navigator.credentials.create() gives for the service's registration options. */
  register(options: PublicKeyCredentialCreationOptionsJSON): RegistrationResponseJSON {
    if (options.rp.id && options.rp.id !== this.rpId) throw new Error(`the options name RP id ${options.rp.id}, this passkey is for ${this.rpId}`);
    this.userHandle = options.user.id;
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(this.credentialId.length);
    const attested = Buffer.concat([Buffer.alloc(16) /* AAGUID: none */, idLength, this.credentialId, this.coseKey()]);
    const authData = this.authenticatorData(FLAG_USER_PRESENT | (this.userVerified ? FLAG_USER_VERIFIED : 0) | FLAG_ATTESTED_DATA, attested);
    const attestationObject = isoCBOR.encode(
      new Map<string, Cbor>([
        ['fmt', 'none'],
        ['attStmt', new Map()],
        ['authData', authData],
      ]),
    );
    return {
      id: this.id,
      rawId: this.id,
      type: 'public-key',
      authenticatorAttachment: 'platform',
      clientExtensionResults: {},
      response: {
        clientDataJSON: b64url(this.clientData('webauthn.create', options.challenge)),
        attestationObject: b64url(attestationObject),
        transports: ['internal'],
      },
    };
  }

  /** What navigator.credentials.get() gives for the service's assertion options (a discoverable credential). */
  assert(options: PublicKeyCredentialRequestOptionsJSON): AuthenticationResponseJSON {
    if (options.rpId && options.rpId !== this.rpId) throw new Error(`the options name RP id ${options.rpId}, this passkey is for ${this.rpId}`);
    this.counter++;
    const authData = this.authenticatorData(FLAG_USER_PRESENT | (this.userVerified ? FLAG_USER_VERIFIED : 0), null);
    const clientDataJSON = this.clientData('webauthn.get', options.challenge);
    // ES256: ECDSA P-256 over authenticatorData ‖ SHA-256(clientDataJSON), DER-encoded (node's default).
    const signature = sign('sha256', Buffer.concat([authData, createHash('sha256').update(clientDataJSON).digest()]), this.privateKey);
    return {
      id: this.id,
      rawId: this.id,
      type: 'public-key',
      authenticatorAttachment: 'platform',
      clientExtensionResults: {},
      response: {
        clientDataJSON: b64url(clientDataJSON),
        authenticatorData: b64url(authData),
        signature: b64url(signature),
        ...(this.userHandle ? { userHandle: this.userHandle } : {}),
      },
    };
  }
}
